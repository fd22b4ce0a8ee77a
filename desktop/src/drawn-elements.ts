import type { ElementRole, Rect } from '../../shared/desktop/protocol';

/*
 * The drawn-elements property (DRAWN_ELEMENTS_PROPERTY, shared/desktop/computer.ts): how a window
 * that draws its own controls without a toolkit's accessibility (the person's window, the
 * launcher) tells the Linux computer what they are. JSON in a UTF8_STRING property of the
 * window, written at every redraw.
 */

/** One entry of the drawn-elements property (DRAWN_ELEMENTS_PROPERTY), as windows.ts reads it back. */
export interface DrawnElement {
  role: ElementRole;
  label: string;
  bounds: Rect;
  is_default?: boolean;
}

/**
 * The drawn-elements property's value read back: the entries that are well formed (a known role,
 * a label, whole-number bounds); anything else is dropped.
 */
export function parseDrawnElements(text: string | null): DrawnElement[] {
  if (!text) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const elements: DrawnElement[] = [];
  for (const entry of parsed as Array<Partial<DrawnElement> | null>) {
    const bounds = entry?.bounds;
    if (!entry || typeof entry.label !== 'string' || !DRAWN_ROLES.has(entry.role as ElementRole) || !bounds) continue;
    if (![bounds.x, bounds.y, bounds.width, bounds.height].every((value) => Number.isFinite(value))) continue;
    elements.push({
      role: entry.role as ElementRole,
      label: entry.label,
      bounds: { x: bounds.x, y: bounds.y, width: bounds.width, height: bounds.height },
      ...(entry.is_default === true ? { is_default: true } : {}),
    });
  }
  return elements;
}

const DRAWN_ROLES = new Set<ElementRole>(['button', 'link', 'text_field', 'password_field', 'text_area', 'address_bar', 'item', 'icon', 'menu_item', 'static_text']);
