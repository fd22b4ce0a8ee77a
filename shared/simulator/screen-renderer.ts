import { existsSync } from 'node:fs';
import { createCanvas, GlobalFonts, type Canvas, type SKRSContext2D } from '@napi-rs/canvas';
import type { DrawOp } from './screen-layout';

/**
 * Draws a laid-out screen into a PNG with @napi-rs/canvas. Drawing takes well under a
 * millisecond; PNG encoding is most of the cost, so it runs off the main thread (`encode`) and
 * screens already drawn are served from a small cache: a screenshot, a wait or a failed step on
 * an unchanged screen costs nothing.
 */

const FONT_FAMILY = 'Deskhand Sans';
const FONT_STACK = `"${FONT_FAMILY}", "DejaVu Sans", "Helvetica Neue", Arial, sans-serif`;
const FONT_CANDIDATES: ReadonlyArray<{ regular: string; bold: string }> = [
  { regular: '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', bold: '/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf' },
  { regular: '/usr/share/fonts/dejavu/DejaVuSans.ttf', bold: '/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf' },
  { regular: '/usr/share/fonts/TTF/DejaVuSans.ttf', bold: '/usr/share/fonts/TTF/DejaVuSans-Bold.ttf' },
];

// GlobalFonts is the process's font registry; registering twice would only waste time.
let fontsRegistered = false;

/**
 * Registers DejaVu Sans under one family name, so screens look the same on every machine that
 * has it. Without it the canvas falls back to whatever system font it finds (or draws no text).
 */
export function registerScreenFonts(): void {
  if (fontsRegistered) return;
  fontsRegistered = true;
  const found = FONT_CANDIDATES.find((candidate) => existsSync(candidate.regular));
  if (!found) return;
  GlobalFonts.registerFromPath(found.regular, FONT_FAMILY);
  if (existsSync(found.bold)) GlobalFonts.registerFromPath(found.bold, FONT_FAMILY);
}

export interface RenderStats {
  /** Screens drawn and encoded. */
  renders: number;
  /** Screens served from the cache. */
  cacheHits: number;
  /** Milliseconds spent drawing and encoding, all renders together, and the last one. */
  totalMs: number;
  lastMs: number;
}

export class ScreenRenderer {
  /** Made at the first render: a machine made and destroyed unseen (an eval's, often) never needs one. */
  private canvas: Canvas | null = null;
  /** A second surface for synchronous renders, so they never draw over an encode in flight. */
  private syncCanvas: Canvas | null = null;
  private readonly cache = new Map<string, Buffer>();
  private readonly stats: RenderStats = { renders: 0, cacheHits: 0, totalMs: 0, lastMs: 0 };

  constructor(
    readonly width: number,
    readonly height: number,
    private readonly cacheSize = 16,
  ) {
    registerScreenFonts();
  }

  /**
   * The PNG of a drawing, encoded off the main thread. Calls must not overlap: the canvas is
   * reused between renders (the simulated computer runs its steps one at a time).
   */
  async render(drawing: DrawOp[]): Promise<Buffer> {
    const key = JSON.stringify(drawing);
    const cached = this.cached(key);
    if (cached) return cached;
    const started = performance.now();
    const canvas = (this.canvas ??= createCanvas(this.width, this.height));
    this.draw(canvas, drawing);
    return this.remember(key, await canvas.encode('png'), started);
  }

  /**
   * The PNG of a drawing, encoded on the calling thread. Meant for screens already rendered (a
   * cache hit costs nothing); a new screen blocks for the whole encode.
   */
  renderSync(drawing: DrawOp[]): Buffer {
    const key = JSON.stringify(drawing);
    const cached = this.cached(key);
    if (cached) return cached;
    const started = performance.now();
    this.syncCanvas ??= createCanvas(this.width, this.height);
    this.draw(this.syncCanvas, drawing);
    return this.remember(key, this.syncCanvas.encodeSync('png'), started);
  }

  private cached(key: string): Buffer | undefined {
    const png = this.cache.get(key);
    if (!png) return undefined;
    // Refresh its place so the cache keeps the screens in use.
    this.cache.delete(key);
    this.cache.set(key, png);
    this.stats.cacheHits++;
    return png;
  }

  private remember(key: string, png: Buffer, started: number): Buffer {
    const elapsed = performance.now() - started;
    this.stats.renders++;
    this.stats.totalMs += elapsed;
    this.stats.lastMs = elapsed;
    this.cache.set(key, png);
    if (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
    return png;
  }

  /** How much rendering cost so far. */
  renderStats(): RenderStats {
    return { ...this.stats };
  }

  private draw(canvas: Canvas, drawing: DrawOp[]): void {
    const g: SKRSContext2D = canvas.getContext('2d');
    g.clearRect(0, 0, this.width, this.height);
    g.textBaseline = 'alphabetic';
    for (const op of drawing) {
      switch (op.op) {
        case 'rect':
          g.beginPath();
          if (op.radius) g.roundRect(op.x, op.y, op.w, op.h, op.radius);
          else g.rect(op.x, op.y, op.w, op.h);
          if (op.fill) {
            g.fillStyle = op.fill;
            g.fill();
          }
          if (op.stroke) {
            g.strokeStyle = op.stroke;
            g.lineWidth = op.lineWidth ?? 1;
            g.stroke();
          }
          break;
        case 'circle':
          g.beginPath();
          g.arc(op.x, op.y, op.r, 0, Math.PI * 2);
          g.fillStyle = op.fill;
          g.fill();
          break;
        case 'text':
          g.font = `${op.bold ? 'bold ' : ''}${op.size}px ${FONT_STACK}`;
          g.fillStyle = op.color;
          g.textAlign = op.align ?? 'left';
          if (op.maxWidth !== undefined) g.fillText(op.text, op.x, op.y, Math.max(1, op.maxWidth));
          else g.fillText(op.text, op.x, op.y);
          break;
      }
    }
  }
}
