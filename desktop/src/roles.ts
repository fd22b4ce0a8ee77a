import type { ElementRole } from '../../shared/desktop/protocol';

/** What decides an element's protocol role besides its AT-SPI role. */
export interface RoleContext {
  /** The AT-SPI role name as GetRoleName gives it (`push button`, `entry`, `password text`). */
  atspiRole: string;
  name: string;
  /** The element takes several lines of text (AT-SPI MULTI_LINE). */
  multiLine: boolean;
  /** The element's text can be edited (AT-SPI EDITABLE). */
  editable: boolean;
  /** The element belongs to a web browser (Chromium, Firefox). */
  inBrowser: boolean;
  /** Inside a web page (under a `document web`), not the browser's own controls. */
  inPage: boolean;
  /** The toolkit's own attributes (Chromium's `class`, Firefox's `id`). */
  attributes: Readonly<Record<string, string>>;
}

/** AT-SPI roles that map to one protocol role whatever the context. */
const FIXED_ROLES: Readonly<Record<string, ElementRole>> = Object.freeze({
  'push button': 'button',
  button: 'button',
  'toggle button': 'button',
  'push button menu': 'button',
  link: 'link',
  'password text': 'password_field',
  'spin button': 'text_field',
  'menu item': 'menu_item',
  'check menu item': 'menu_item',
  'radio menu item': 'menu_item',
  'tear off menu item': 'menu_item',
  menu: 'menu_item',
  'list item': 'item',
  'tree item': 'item',
  'table cell': 'item',
  'page tab': 'item',
  'check box': 'item',
  'radio button': 'item',
  switch: 'item',
  option: 'item',
  icon: 'icon',
  'desktop icon': 'icon',
  label: 'static_text',
  static: 'static_text',
  heading: 'static_text',
  caption: 'static_text',
});

/** Chromium's and Firefox's names for the location field. */
const ADDRESS_BAR_CLASSES = new Set(['OmniboxViewViews', 'urlbar-input']);
const ADDRESS_BAR_NAME = /\b(address|location|url)\b/i;

/**
 * The protocol's role for an AT-SPI element, or null for the containers, panels, frames and
 * documents that hold the elements a person acts on. An entry is a `text_field` (or `text_area`
 * when it takes several lines), except a browser's own location field, which is the `address_bar`;
 * GTK's text views (`text`) are text areas or fields when editable and static text when not.
 */
export function protocolRole(context: RoleContext): ElementRole | null {
  const { atspiRole } = context;
  if (atspiRole === 'entry' || atspiRole === 'text' || atspiRole === 'edit bar' || atspiRole === 'combo box') {
    if (isAddressBar(context)) return 'address_bar';
    if (atspiRole === 'combo box' && !context.editable) return 'button';
    if (atspiRole === 'text' && !context.editable) return 'static_text';
    return context.multiLine ? 'text_area' : 'text_field';
  }
  if (atspiRole === 'paragraph' || atspiRole === 'section') return null;
  return FIXED_ROLES[atspiRole] ?? null;
}

/** A browser's own location field (not a search box inside a page). */
export function isAddressBar(context: RoleContext): boolean {
  if (!context.inBrowser || context.inPage || !context.editable) return false;
  const fromToolkit = context.attributes.class ?? context.attributes.id ?? '';
  return ADDRESS_BAR_CLASSES.has(fromToolkit) || ADDRESS_BAR_NAME.test(context.name);
}

/** Roles a person acts on (press, follow, type into); a text leaf's nearest such ancestor is what a click hits. */
export const INTERACTIVE_ROLES: ReadonlySet<ElementRole> = new Set<ElementRole>(['button', 'link', 'text_field', 'password_field', 'text_area', 'address_bar', 'item', 'icon', 'menu_item']);

/** Apps whose windows show web pages, by WM_CLASS instance or AT-SPI application name (lowercase). */
export const BROWSER_APPS: ReadonlySet<string> = new Set(['chromium', 'chromium-browser', 'chrome', 'google-chrome', 'firefox', 'firefox-esr', 'navigator', 'brave-browser', 'microsoft-edge']);
