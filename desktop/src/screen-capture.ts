import { createCanvas, ImageData, type Canvas } from '@napi-rs/canvas';
import type { XShmExtension, XShmSegment } from 'x11';
import type { X11Connection } from './x11-connection';

/** One image of the whole screen, as RGBA bytes (4 a pixel, rows top down, alpha 255). */
export interface Frame {
  width: number;
  height: number;
  rgba: Buffer;
}

const Z_PIXMAP = 2;
const ALL_PLANES = 0xffffffff;

/**
 * Reads the root window's pixels: through MIT-SHM when the server takes a shared segment from
 * this process (one segment, made once and reused), else with the core GetImage request, which
 * sends the whole image over the socket. Either way the X image (32 bits a pixel, B G R X in
 * memory on a little-endian server) becomes RGBA; `png` encodes a frame with @napi-rs/canvas,
 * off the event loop.
 */
export class ScreenCapture {
  /** `shm` or `get-image`: how frames are read, once the first frame has been taken. */
  method: 'shm' | 'get-image' | null = null;
  private segment: XShmSegment | null = null;
  private canvas: Canvas | null = null;
  private shmTried = false;

  /** `shm: false` reads with GetImage only. */
  constructor(
    private readonly connection: X11Connection,
    options: { shm?: boolean } = {},
  ) {
    if (options.shm === false) {
      this.shmTried = true;
      this.method = 'get-image';
    }
  }

  /** The whole screen now, at its real size. */
  async frame(): Promise<Frame> {
    const { width, height } = this.connection;
    const raw = (await this.sharedSegment()) ? await this.readShared(width, height) : await this.readCore(width, height);
    return { width, height, rgba: toRgba(raw, width * height, this.connection.display.image_byte_order === 1) };
  }

  /** The whole screen now, as PNG bytes. */
  async png(): Promise<Buffer> {
    return this.encode(await this.frame());
  }

  /** A frame as PNG bytes (RGBA, 8 bits a channel). */
  async encode(frame: Frame): Promise<Buffer> {
    if (!this.canvas || this.canvas.width !== frame.width || this.canvas.height !== frame.height) {
      this.canvas = createCanvas(frame.width, frame.height);
    }
    const pixels = new Uint8ClampedArray(frame.rgba.buffer, frame.rgba.byteOffset, frame.rgba.byteLength);
    this.canvas.getContext('2d').putImageData(new ImageData(pixels, frame.width, frame.height), 0, 0);
    return this.canvas.encode('png');
  }

  /** Releases the shared segment, if one was made. The connection stays open. */
  async close(): Promise<void> {
    const segment = this.segment;
    this.segment = null;
    if (segment) await new Promise<void>((resolve) => segment.detach(() => resolve()));
  }

  private async sharedSegment(): Promise<XShmSegment | null> {
    if (this.shmTried) return this.segment;
    this.shmTried = true;
    const { connection } = this;
    try {
      const shm = await connection.request<XShmExtension>((callback) => connection.client.require('shm', callback));
      const usable = await connection.request<boolean>((callback) => shm.usable(callback));
      if (usable) {
        this.segment = await connection.request<XShmSegment>((callback) => shm.createSegment(connection.width * connection.height * 4, callback));
      }
    } catch {
      // No MIT-SHM on this server or connection (remote, no /dev/shm): the core request works anywhere.
      this.segment = null;
    }
    this.method = this.segment ? 'shm' : 'get-image';
    return this.segment;
  }

  private async readShared(width: number, height: number): Promise<Buffer> {
    const segment = this.segment!;
    await this.connection.request((callback) => segment.getImage(this.connection.root, 0, 0, width, height, ALL_PLANES, Z_PIXMAP, 0, callback));
    return segment.buffer;
  }

  private async readCore(width: number, height: number): Promise<Buffer> {
    const { connection } = this;
    const image = await connection.request<{ depth: number; data: Buffer }>((callback) =>
      connection.client.GetImage(Z_PIXMAP, connection.root, 0, 0, width, height, ALL_PLANES, callback),
    );
    return image.data;
  }
}

/**
 * X pixels (32 bits each: B G R X in memory for a little-endian server, X R G B for a big-endian
 * one) to RGBA with alpha 255. The padding byte is not alpha: X leaves it 0 or anything.
 */
export function toRgba(raw: Buffer, pixels: number, bigEndian = false): Buffer {
  if (raw.length < pixels * 4) {
    throw new Error(`The X image has ${raw.length} bytes for ${pixels} pixels: only 24-bit colour with 32 bits a pixel is supported.`);
  }
  const rgba = Buffer.allocUnsafe(pixels * 4);
  if (bigEndian) {
    for (let i = 0; i < pixels * 4; i += 4) {
      rgba[i] = raw[i + 1];
      rgba[i + 1] = raw[i + 2];
      rgba[i + 2] = raw[i + 3];
      rgba[i + 3] = 255;
    }
  } else {
    for (let i = 0; i < pixels * 4; i += 4) {
      rgba[i] = raw[i + 2];
      rgba[i + 1] = raw[i + 1];
      rgba[i + 2] = raw[i];
      rgba[i + 3] = 255;
    }
  }
  return rgba;
}
