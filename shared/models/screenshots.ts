/**
 * Screenshots as vendors want them: base64 PNG, scaled down where a vendor reads coordinates off
 * a smaller image than the screen, and a blank frame when the computer sent none.
 */

type Canvas = typeof import('@napi-rs/canvas');
let canvasModule: Promise<Canvas> | null = null;

/** Loaded on first use: only vendor backends need image work. */
function canvas(): Promise<Canvas> {
  canvasModule ??= import('@napi-rs/canvas');
  return canvasModule;
}

/** Returns `png` resized to `width` × `height` (PNG again). */
export async function resizePng(png: Buffer, width: number, height: number): Promise<Buffer> {
  const { createCanvas, loadImage } = await canvas();
  const image = await loadImage(png);
  if (image.width === width && image.height === height) return png;
  const target = createCanvas(width, height);
  const ctx = target.getContext('2d');
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = 'high';
  ctx.drawImage(image, 0, 0, width, height);
  return target.toBuffer('image/png');
}

/** A plain light-grey PNG of that size, sent when a vendor needs a screenshot and none was taken. */
export async function blankPng(width: number, height: number): Promise<Buffer> {
  const { createCanvas } = await canvas();
  const target = createCanvas(Math.max(1, width), Math.max(1, height));
  const ctx = target.getContext('2d');
  ctx.fillStyle = '#eeeeee';
  ctx.fillRect(0, 0, target.width, target.height);
  return target.toBuffer('image/png');
}

/**
 * The size a screen is shown to a model that works best within `maxWidth` × `maxHeight`
 * (aspect ratio kept, never enlarged), and the factor from screen to model pixels.
 */
export function fitWithin(
  width: number,
  height: number,
  maxWidth: number,
  maxHeight: number,
): { width: number; height: number; scale: number } {
  const scale = Math.min(1, maxWidth / width, maxHeight / height);
  if (scale >= 1) return { width, height, scale: 1 };
  return { width: Math.round(width * scale), height: Math.round(height * scale), scale };
}
