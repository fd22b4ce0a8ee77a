import type { Frame } from './screen-capture';

export interface StillOptions {
  /** Time between two frames compared. */
  intervalMs?: number;
  /** How long the screen must stay the same to count as still. */
  quietMs?: number;
  /** The most to wait; then the last frame is taken as it is. */
  capMs?: number;
}

export interface StillScreen {
  /** The last frame read: the screen as it settled (or as it was at the cap). */
  frame: Frame;
  /** False when the screen was still changing at the cap (a video, a spinner, a blinking caret at the wrong time). */
  still: boolean;
  /** How long the wait took. */
  waitedMs: number;
  /** How many frames were read. */
  frames: number;
}

export const STILL_DEFAULTS: Readonly<Required<StillOptions>> = Object.freeze({ intervalMs: 40, quietMs: 120, capMs: 3000 });

/**
 * After an act, waits until the screen stops changing: reads frames one after another (`capture`)
 * and returns as soon as the frames of the last `quietMs` are all the same, or at `capMs` with
 * whatever the screen shows then. No fixed sleep: a screen that does not change after the act
 * returns after `quietMs`. The last frame is returned so that the caller's screenshot costs no
 * further capture.
 */
export async function waitForStillScreen(capture: () => Promise<Frame>, options: StillOptions = {}): Promise<StillScreen> {
  const { intervalMs, quietMs, capMs } = { ...STILL_DEFAULTS, ...options };
  const started = performance.now();
  let frame = await capture();
  let frames = 1;
  let sameSince = performance.now();
  for (;;) {
    const now = performance.now();
    if (now - sameSince >= quietMs) return { frame, still: true, waitedMs: now - started, frames };
    if (now - started >= capMs) return { frame, still: false, waitedMs: now - started, frames };
    const readAt = performance.now();
    const wait = Math.min(intervalMs, Math.max(0, capMs - (readAt - started)));
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const next = await capture();
    frames++;
    if (!sameFrame(frame, next)) sameSince = performance.now();
    frame = next;
  }
}

/** Two frames of the same size with the same pixels. */
export function sameFrame(a: Frame, b: Frame): boolean {
  return a.width === b.width && a.height === b.height && a.rgba.equals(b.rgba);
}
