/**
 * AT-SPI role numbers (the `AtspiRole` enumeration of at-spi2-core 2.46, atspi-constants.h) to the
 * names GetRoleName answers for them (ATK's role names, which the at-spi2-atk bridge of GTK and
 * Chromium reports). The Cache interface gives roles as numbers; the walk reads names. Null where
 * no toolkit answers with that number (FOCUS_TRAVERSABLE, EXTENDED).
 */
const ROLE_NAMES: ReadonlyArray<string | null> = Object.freeze([
  /*   0 */ 'invalid', 'accelerator label', 'alert', 'animation', 'arrow', 'calendar',
  /*   6 */ 'canvas', 'check box', 'check menu item', 'color chooser', 'column header', 'combo box',
  /*  12 */ 'date editor', 'desktop icon', 'desktop frame', 'dial', 'dialog', 'directory pane',
  /*  18 */ 'drawing area', 'file chooser', 'filler', null, 'font chooser', 'frame',
  /*  24 */ 'glass pane', 'html container', 'icon', 'image', 'internal frame', 'label',
  /*  30 */ 'layered pane', 'list', 'list item', 'menu', 'menu bar', 'menu item',
  /*  36 */ 'option pane', 'page tab', 'page tab list', 'panel', 'password text', 'popup menu',
  /*  42 */ 'progress bar', 'push button', 'radio button', 'radio menu item', 'root pane', 'row header',
  /*  48 */ 'scroll bar', 'scroll pane', 'separator', 'slider', 'spin button', 'split pane',
  /*  54 */ 'statusbar', 'table', 'table cell', 'table column header', 'table row header', 'tear off menu item',
  /*  60 */ 'terminal', 'text', 'toggle button', 'tool bar', 'tool tip', 'tree',
  /*  66 */ 'tree table', 'unknown', 'viewport', 'window', null, 'header',
  /*  72 */ 'footer', 'paragraph', 'ruler', 'application', 'autocomplete', 'edit bar',
  /*  78 */ 'embedded', 'entry', 'chart', 'caption', 'document frame', 'heading',
  /*  84 */ 'page', 'section', 'redundant object', 'form', 'link', 'input method window',
  /*  90 */ 'table row', 'tree item', 'document spreadsheet', 'document presentation', 'document text', 'document web',
  /*  96 */ 'document email', 'comment', 'list box', 'grouping', 'image map', 'notification',
  /* 102 */ 'info bar', 'level bar', 'title bar', 'block quote', 'audio', 'video',
  /* 108 */ 'definition', 'article', 'landmark', 'log', 'marquee', 'math',
  /* 114 */ 'rating', 'timer', 'static', 'math fraction', 'math root', 'subscript',
  /* 120 */ 'superscript', 'description list', 'description term', 'description value', 'footnote', 'content deletion',
  /* 126 */ 'content insertion', 'mark', 'suggestion', 'push button menu',
]);

/** The name GetRoleName answers for an AT-SPI role number, or null for a number this table does not know. */
export function atspiRoleName(role: number): string | null {
  return ROLE_NAMES[role] ?? null;
}
