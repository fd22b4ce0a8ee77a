import { expect } from 'chai';
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { encodePng } from '../../desktop/src/screen-capture';

// The Linux app's PNG encoder (desktop/src/screen-capture.ts): what it writes is a PNG that an
// independent decoder reads back pixel for pixel.

describe('desktop: encodePng', () => {
  it('writes a PNG that decodes to the same pixels, at odd sizes too', async () => {
    for (const [width, height] of [
      [1, 1],
      [37, 23],
      [320, 200],
    ]) {
      const rgba = Buffer.alloc(width * height * 4);
      for (let i = 0; i < width * height; i++) {
        rgba[i * 4] = (i * 7) & 255;
        rgba[i * 4 + 1] = (i * 13 + 5) & 255;
        rgba[i * 4 + 2] = (i >> 3) & 255;
        rgba[i * 4 + 3] = 255;
      }
      const png = await encodePng({ width, height, rgba });
      expect([...png.subarray(0, 8)]).to.deep.equal([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      const image = await loadImage(png);
      expect([image.width, image.height]).to.deep.equal([width, height]);
      const context = createCanvas(width, height).getContext('2d');
      context.drawImage(image, 0, 0);
      expect(Buffer.from(context.getImageData(0, 0, width, height).data).equals(rgba)).to.equal(true);
    }
  });
});
