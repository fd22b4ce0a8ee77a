import type { Rect } from '../../shared/desktop/protocol';
import type { AccessibleElement, AccessibleWindow } from './accessibility';
import { INTERACTIVE_ROLES } from './roles';
import type { X11Window } from './windows';

/** What is at a point: the topmost window there and, when its app is accessible, the element a click would hit. */
export interface Hit {
  window: X11Window;
  /** The accessible window of the X window, when its app exposes one. */
  accessible: AccessibleWindow | null;
  /** The innermost showing element at the point, or its nearest interactive ancestor; null when none. */
  element: AccessibleElement | null;
}

/**
 * Pairs each X window with the AT-SPI window of the same app that shows it: same process (when
 * both know it), then the same title or, failing that, the most overlapping bounds. AT-SPI windows
 * that match no X window on screen (a browser's hidden popups, a minimized window) are left out.
 */
export function matchAccessibleWindows(windows: X11Window[], accessible: AccessibleWindow[]): Map<number, AccessibleWindow> {
  const matched = new Map<number, AccessibleWindow>();
  const taken = new Set<AccessibleWindow>();
  for (const window of windows) {
    let best: { candidate: AccessibleWindow; score: number } | null = null;
    for (const candidate of accessible) {
      if (taken.has(candidate)) continue;
      if (window.pid !== null && candidate.pid !== null && window.pid !== candidate.pid) continue;
      const overlap = overlapRatio(window.bounds, candidate.bounds);
      const sameTitle = candidate.title !== '' && candidate.title === window.title;
      if (!sameTitle && overlap < 0.5) continue;
      const score = (sameTitle ? 2 : 0) + overlap;
      if (!best || score > best.score) best = { candidate, score };
    }
    if (best) {
      matched.set(window.id, best.candidate);
      taken.add(best.candidate);
    }
  }
  return matched;
}

/**
 * What lies at (x, y): the topmost window containing the point (stacking order, topmost first),
 * then among that window's showing elements the innermost one containing it (deepest, then
 * smallest), walked up to its nearest interactive ancestor when it is a text leaf or a container.
 * Null when no window is there.
 */
export function hitTest(x: number, y: number, windows: X11Window[], accessible: Map<number, AccessibleWindow>): Hit | null {
  const window = windows.find((candidate) => contains(candidate.bounds, x, y));
  if (!window) return null;
  const tree = accessible.get(window.id) ?? null;
  if (!tree) return { window, accessible: null, element: null };
  const under = tree.elements.filter((element) => element.depth > 0 && element.states.showing && element.bounds.width > 0 && element.bounds.height > 0 && contains(element.bounds, x, y));
  if (under.length === 0) return { window, accessible: tree, element: null };
  under.sort((a, b) => b.depth - a.depth || area(a.bounds) - area(b.bounds));
  return { window, accessible: tree, element: actionable(under[0], tree.elements) };
}

/** The element itself when a person acts on it, else its nearest interactive ancestor, else its nearest ancestor with a role. */
export function actionable(element: AccessibleElement, elements: AccessibleElement[]): AccessibleElement | null {
  const byId = new Map(elements.map((candidate) => [candidate.id, candidate]));
  let firstWithRole: AccessibleElement | null = null;
  for (let current: AccessibleElement | undefined = element; current; current = current.parentId ? byId.get(current.parentId) : undefined) {
    if (current.role && INTERACTIVE_ROLES.has(current.role)) return current;
    if (current.role && !firstWithRole) firstWithRole = current;
  }
  return firstWithRole;
}

function contains(bounds: Rect, x: number, y: number): boolean {
  return x >= bounds.x && y >= bounds.y && x < bounds.x + bounds.width && y < bounds.y + bounds.height;
}

function area(bounds: Rect): number {
  return bounds.width * bounds.height;
}

/** The shared area over the area of both together (1 for the same rectangle; small for a popup inside a window). */
function overlapRatio(a: Rect, b: Rect): number {
  const width = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const height = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  if (width <= 0 || height <= 0) return 0;
  const shared = width * height;
  return shared / (area(a) + area(b) - shared);
}
