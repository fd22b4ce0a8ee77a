import { promisify } from 'node:util';
import { crc32, deflate } from 'node:zlib';
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
 * memory on a little-endian server) becomes RGBA; `encode` makes a PNG of a frame (see `encodePng`).
 */
export class ScreenCapture {
  /** `shm` or `get-image`: how frames are read, once the first frame has been taken. */
  method: 'shm' | 'get-image' | null = null;
  private segment: XShmSegment | null = null;
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
    return encodePng(frame);
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

const deflateAsync = promisify(deflate);
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * A frame as PNG bytes (RGBA, 8 bits a channel): each row behind filter byte 0, deflated at zlib
 * level 1 on libuv's thread pool. The container is the three chunks PNG needs, written here
 * around node's zlib (deflate, crc32); a screen compresses well without filters (long runs of
 * one colour), and the event loop stays free for the observation read meanwhile. The other
 * encoders weighed (docs/benchmarks.md, linux-desktop): @napi-rs/canvas 25–35 ms at its default
 * compression, pngjs 9–16 ms of filtering on the event loop; this one about 4 ms, 1 ms of it on
 * the event loop, for a file about twice the size of the smallest (40 KB for a desktop).
 */
export async function encodePng(frame: Frame): Promise<Buffer> {
  const { width, height, rgba } = frame;
  const stride = width * 4;
  const rows = Buffer.allocUnsafe(height * (stride + 1));
  for (let y = 0; y < height; y++) {
    const at = y * (stride + 1);
    rows[at] = 0; // filter: none
    rgba.copy(rows, at + 1, y * stride, (y + 1) * stride);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bits a channel
  header[9] = 6; // RGBA
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', header), pngChunk('IDAT', await deflateAsync(rows, { level: 1 })), pngChunk('IEND', Buffer.alloc(0))]);
}

/** One PNG chunk: length, type, data, and the CRC of type and data. */
function pngChunk(type: string, data: Buffer): Buffer {
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  chunk.write(type, 4, 'latin1');
  data.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + data.length)), 8 + data.length);
  return chunk;
}
