/**
 * Key names. The protocol writes a key combo as lowercase names joined with `+` (`cmd+enter`,
 * `ctrl+l`, `delete`); agents, vendor models (X11 and browser names) and people spell the same
 * keys in many ways. These tables fold each spelling onto the protocol's name, for the models'
 * backends (what they send), the guardrail engine (what it judges) and the simulated computer
 * (what it presses). Lookups are by the lowercase spelling.
 */

import type { DesktopOs } from './os';

export type Modifier = 'cmd' | 'ctrl' | 'alt' | 'shift' | 'fn';

/** Spellings of the modifiers. The system key (`super`, `meta`, `win`) is `cmd`; models' backends place it per system first. */
export const MODIFIER_NAMES: Readonly<Record<string, Modifier>> = Object.freeze({
  cmd: 'cmd',
  command: 'cmd',
  meta: 'cmd',
  super: 'cmd',
  super_l: 'cmd',
  super_r: 'cmd',
  win: 'cmd',
  windows: 'cmd',
  ctrl: 'ctrl',
  control: 'ctrl',
  control_l: 'ctrl',
  control_r: 'ctrl',
  ctrl_l: 'ctrl',
  ctrl_r: 'ctrl',
  alt: 'alt',
  option: 'alt',
  opt: 'alt',
  alt_l: 'alt',
  alt_r: 'alt',
  shift: 'shift',
  shift_l: 'shift',
  shift_r: 'shift',
  fn: 'fn',
});

/** Spellings of the other keys, mapped to the protocol's names (a name not here is its own). */
export const KEY_NAMES: Readonly<Record<string, string>> = Object.freeze({
  return: 'enter',
  kp_enter: 'enter',
  numpad_enter: 'enter',
  keypad_enter: 'enter',
  esc: 'escape',
  back_space: 'backspace',
  bksp: 'backspace',
  del: 'delete',
  forward_delete: 'delete',
  forwarddelete: 'delete',
  spacebar: 'space',
  ' ': 'space',
  arrowup: 'up',
  arrowdown: 'down',
  arrowleft: 'left',
  arrowright: 'right',
  page_up: 'pageup',
  prior: 'pageup',
  page_down: 'pagedown',
  next: 'pagedown',
  iso_left_tab: 'tab',
});

/** The protocol's name of a non-modifier key spelled `spelling` (already lowercase). */
export const keyName = (spelling: string): string => KEY_NAMES[spelling] ?? spelling;

/** Spellings of the system key (the Apple key, the Windows key, Super on Linux). */
export const SYSTEM_KEY_SPELLINGS: ReadonlySet<string> = new Set(['super', 'super_l', 'super_r', 'meta', 'win', 'windows']);

/** The protocol's name of the system key on each system: `cmd` on a Mac, `win` on Windows, `super` on Linux. */
export const SYSTEM_KEY: Readonly<Record<DesktopOs, string>> = Object.freeze({ mac: 'cmd', windows: 'win', linux: 'super' });

/** The modifier of app shortcuts (copy, save, the address bar): Cmd on a Mac, Ctrl on Windows and Linux. */
export const SHORTCUT_MODIFIER: Readonly<Record<DesktopOs, 'cmd' | 'ctrl'>> = Object.freeze({ mac: 'cmd', windows: 'ctrl', linux: 'ctrl' });

/**
 * One key of a combo on `os`, by its protocol name: the system key's spellings become the
 * system's own (`SYSTEM_KEY`), and `cmd` becomes `ctrl` where app shortcuts use Ctrl, as a
 * person switching systems would press it.
 */
export function keyForOs(spelling: string, os: DesktopOs): string {
  const lower = spelling.toLowerCase();
  if (SYSTEM_KEY_SPELLINGS.has(lower)) return SYSTEM_KEY[os];
  const key = MODIFIER_NAMES[lower] ?? keyName(lower);
  return key === 'cmd' ? SHORTCUT_MODIFIER[os] : key;
}
