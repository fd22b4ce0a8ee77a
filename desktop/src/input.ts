import type { XTestExtension } from 'x11';
import { KEY_NAMES } from '../../shared/desktop/keys';
import type { Point } from '../../shared/desktop/protocol';
import type { X11Connection } from './x11-connection';

/** A step the keyboard or mouse cannot do (an unknown key name); its message is for the model. */
export class InputError extends Error {
  override readonly name = 'InputError';
}

/** Pixels of a protocol scroll (`dx`, `dy`) that make one wheel notch (one button 4 to 7 click). */
export const PIXELS_PER_NOTCH = 50;
const MAX_NOTCHES = 50;
const DRAG_STEPS = 8;

const BUTTON = { left: 1, middle: 2, right: 3, up: 4, down: 5, leftward: 6, rightward: 7 } as const;

const KEYSYM = {
  Return: 0xff0d,
  Tab: 0xff09,
  Shift_L: 0xffe1,
  Control_L: 0xffe3,
  Alt_L: 0xffe9,
  Super_L: 0xffeb,
} as const;

/** The protocol's key names (after keys.ts folds spellings) to X keysyms. */
const NAMED_KEYSYMS: Readonly<Record<string, number>> = Object.freeze({
  enter: KEYSYM.Return,
  escape: 0xff1b,
  tab: KEYSYM.Tab,
  space: 0x20,
  delete: 0xffff,
  backspace: 0xff08,
  up: 0xff52,
  down: 0xff54,
  left: 0xff51,
  right: 0xff53,
  pageup: 0xff55,
  pagedown: 0xff56,
  home: 0xff50,
  end: 0xff57,
  insert: 0xff63,
  menu: 0xff67,
  printscreen: 0xff61,
  plus: 0x2b,
  minus: 0x2d,
  ...Object.fromEntries(Array.from({ length: 12 }, (_, index) => [`f${index + 1}`, 0xffbe + index])),
});

/**
 * Modifier spellings to X modifier keysyms. On Linux `cmd` is Control (what a Mac's Command does
 * is done with Ctrl here) and `super`/`win`/`meta` is the system key, Super.
 */
const MODIFIER_KEYSYMS: Readonly<Record<string, number>> = Object.freeze({
  cmd: KEYSYM.Control_L,
  command: KEYSYM.Control_L,
  ctrl: KEYSYM.Control_L,
  control: KEYSYM.Control_L,
  control_l: KEYSYM.Control_L,
  control_r: KEYSYM.Control_L,
  ctrl_l: KEYSYM.Control_L,
  ctrl_r: KEYSYM.Control_L,
  alt: KEYSYM.Alt_L,
  option: KEYSYM.Alt_L,
  opt: KEYSYM.Alt_L,
  alt_l: KEYSYM.Alt_L,
  alt_r: KEYSYM.Alt_L,
  shift: KEYSYM.Shift_L,
  shift_l: KEYSYM.Shift_L,
  shift_r: KEYSYM.Shift_L,
  super: KEYSYM.Super_L,
  super_l: KEYSYM.Super_L,
  super_r: KEYSYM.Super_L,
  win: KEYSYM.Super_L,
  windows: KEYSYM.Super_L,
  meta: KEYSYM.Super_L,
});

/** The X keysym of one character: Latin-1 keysyms are the code point, the rest 0x01000000 + it. */
export function keysymOfCharacter(character: string): number {
  if (character === '\n' || character === '\r') return KEYSYM.Return;
  if (character === '\t') return KEYSYM.Tab;
  const code = character.codePointAt(0)!;
  if ((code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff)) return code;
  return 0x01000000 + code;
}

/** A combo such as `ctrl+shift+t` as the keysyms to hold (modifiers) and the one to press. */
export function parseCombo(combo: string): { modifiers: number[]; key: number } {
  const names = combo.trim().toLowerCase().split('+');
  // `ctrl++` names the plus key: an empty last part after a `+`.
  if (names.length > 1 && names.at(-1) === '' && names.at(-2) === '') names.splice(-2, 2, '+');
  if (names.some((name) => name === '')) throw new InputError(`The key combo "${combo}" has an empty key name.`);
  const modifiers: number[] = [];
  for (const name of names.slice(0, -1)) {
    const modifier = MODIFIER_KEYSYMS[name];
    if (modifier === undefined) throw new InputError(`"${name}" in "${combo}" is not a modifier (cmd, ctrl, alt, shift, super).`);
    if (!modifiers.includes(modifier)) modifiers.push(modifier);
  }
  const last = names.at(-1)!;
  const modifierAlone = MODIFIER_KEYSYMS[last];
  if (modifierAlone !== undefined) return { modifiers, key: modifierAlone };
  const name = KEY_NAMES[last] ?? last;
  const named = NAMED_KEYSYMS[name];
  if (named !== undefined) return { modifiers, key: named };
  if ([...name].length === 1) return { modifiers, key: keysymOfCharacter(name) };
  throw new InputError(`Unknown key "${last}" in "${combo}".`);
}

interface KeyStroke {
  keycode: number;
  shift: boolean;
}

/**
 * The mouse and keyboard of an X display, through the XTEST extension: each step is a handful of
 * fake input requests on the one connection, then a round trip so that the server has carried
 * them out when the promise resolves. Text is typed key by key from the keyboard mapping; a
 * character the layout lacks gets a spare keycode remapped to its keysym (ChangeKeyboardMapping),
 * kept while this object lives (so no app reads a keycode already put back) and restored by
 * `close`.
 */
export class XInput {
  private constructor(
    private readonly connection: X11Connection,
    private readonly xtest: XTestExtension,
    private readonly keysymsPerKeycode: number,
    /** keycode - min_keycode → its keysyms. */
    private readonly mapping: number[][],
    private readonly spareKeycodes: number[],
  ) {}

  /** Loads XTEST and the keyboard mapping of `connection`'s display. */
  static async open(connection: X11Connection): Promise<XInput> {
    const xtest = await connection.request<XTestExtension>((callback) => connection.client.require('xtest', callback)).catch((error: Error) => {
      throw new Error(`The X server has no XTEST extension, so it cannot be driven: ${error.message}`);
    });
    const { min_keycode: min, max_keycode: max } = connection.display;
    const mapping = await connection.request<number[][]>((callback) => connection.client.GetKeyboardMapping(min, max - min + 1, callback));
    const perKeycode = Math.max(1, ...mapping.map((row) => row.length));
    const spare = mapping.flatMap((row, index) => (row.every((keysym) => keysym === 0) ? [min + index] : []));
    return new XInput(connection, xtest, perKeycode, mapping, spare);
  }

  /** Keycodes remapped for characters the layout lacks, by keysym; restored by `close`. */
  private readonly remapped = new Map<number, number>();
  private remapTurn = 0;

  /** Moves the pointer to (x, y) in screen pixels. */
  async move(x: number, y: number): Promise<void> {
    this.motion(x, y);
    await this.connection.sync();
  }

  /** Moves to (x, y) and clicks: left (default) or right, once or twice. */
  async click(x: number, y: number, options: { button?: 'left' | 'right'; double?: boolean } = {}): Promise<void> {
    const button = options.button === 'right' ? BUTTON.right : BUTTON.left;
    this.motion(x, y);
    for (let count = options.double ? 2 : 1; count > 0; count--) {
      this.button(button, true);
      this.button(button, false);
    }
    await this.connection.sync();
  }

  /** Presses the left button at `from`, moves in steps to `to`, releases there. */
  async drag(from: Point, to: Point): Promise<void> {
    this.motion(from.x, from.y);
    this.button(BUTTON.left, true);
    for (let step = 1; step <= DRAG_STEPS; step++) {
      this.motion(from.x + ((to.x - from.x) * step) / DRAG_STEPS, from.y + ((to.y - from.y) * step) / DRAG_STEPS);
    }
    this.button(BUTTON.left, false);
    await this.connection.sync();
  }

  /**
   * Scrolls by `dx`, `dy` pixels with the pointer at (x, y): wheel buttons 4 (up), 5 (down),
   * 6 (left), 7 (right), one notch per PIXELS_PER_NOTCH pixels and at least one for any non-zero delta.
   */
  async scroll(x: number, y: number, dx: number, dy: number): Promise<void> {
    this.motion(x, y);
    const notches = (delta: number): number => (delta === 0 ? 0 : Math.min(MAX_NOTCHES, Math.max(1, Math.round(Math.abs(delta) / PIXELS_PER_NOTCH))));
    for (let count = notches(dy); count > 0; count--) this.clickButton(dy < 0 ? BUTTON.up : BUTTON.down);
    for (let count = notches(dx); count > 0; count--) this.clickButton(dx < 0 ? BUTTON.leftward : BUTTON.rightward);
    await this.connection.sync();
  }

  /** Presses a combo (`enter`, `ctrl+l`, `cmd+s`, `super`, `shift+tab`); throws InputError for an unknown key. */
  async key(combo: string): Promise<void> {
    const { modifiers, key } = parseCombo(combo);
    const stroke = await this.strokeFor(key);
    const held = modifiers.map((modifier) => this.keycodeOf(modifier));
    if (stroke.shift && !modifiers.includes(KEYSYM.Shift_L)) held.push(this.keycodeOf(KEYSYM.Shift_L));
    for (const keycode of held) this.keyEvent(keycode, true);
    this.keyEvent(stroke.keycode, true);
    this.keyEvent(stroke.keycode, false);
    for (const keycode of held.reverse()) this.keyEvent(keycode, false);
    await this.connection.sync();
  }

  /** Types `text` into whatever has the keyboard focus; any Unicode, a line break is Return. */
  async type(text: string): Promise<void> {
    const characters = [...text.replace(/\r\n/g, '\n')];
    let start = 0;
    while (start < characters.length) {
      // Characters the layout lacks need a spare keycode each; a text with more of them than
      // spare keycodes goes in pieces, each typed before its keycodes are remapped again.
      const { end, missing } = this.nextPiece(characters, start);
      if (start > 0 && missing.length > 0) await this.letAppsCatchUp();
      await this.remap(missing);
      for (const character of characters.slice(start, end)) {
        const stroke = await this.strokeFor(keysymOfCharacter(character));
        if (stroke.shift) this.keyEvent(this.keycodeOf(KEYSYM.Shift_L), true);
        this.keyEvent(stroke.keycode, true);
        this.keyEvent(stroke.keycode, false);
        if (stroke.shift) this.keyEvent(this.keycodeOf(KEYSYM.Shift_L), false);
      }
      await this.connection.sync();
      start = end;
    }
  }

  /** Puts every remapped keycode back to no symbol. The connection stays open. */
  async close(): Promise<void> {
    const { client } = this.connection;
    for (const keycode of this.remapped.values()) {
      client.ChangeKeyboardMapping(keycode, this.keysymsPerKeycode, new Array(this.keysymsPerKeycode).fill(0));
      this.mapping[keycode - this.connection.display.min_keycode] = new Array(this.keysymsPerKeycode).fill(0);
    }
    this.remapped.clear();
    await this.connection.sync().catch(() => undefined);
  }

  private nextPiece(characters: string[], start: number): { end: number; missing: number[] } {
    const missing: number[] = [];
    let end = start;
    for (; end < characters.length; end++) {
      const keysym = keysymOfCharacter(characters[end]);
      if (this.findStroke(keysym) || missing.includes(keysym)) continue;
      if (missing.length === this.spareKeycodes.length) break;
      missing.push(keysym);
    }
    if (end === start) throw new InputError('This keyboard has no spare keycode to type characters its layout lacks.');
    return { end, missing };
  }

  private async remap(keysyms: number[]): Promise<void> {
    if (keysyms.length === 0) return;
    const { client, display } = this.connection;
    const inUse = new Set(keysyms.map((keysym) => this.remapped.get(keysym)).filter((keycode) => keycode !== undefined));
    for (const keysym of keysyms) {
      if (this.remapped.has(keysym)) continue;
      let keycode: number;
      do {
        keycode = this.spareKeycodes[this.remapTurn++ % this.spareKeycodes.length];
      } while (inUse.has(keycode));
      inUse.add(keycode);
      for (const [old, code] of this.remapped) if (code === keycode) this.remapped.delete(old);
      this.remapped.set(keysym, keycode);
      const row = new Array(this.keysymsPerKeycode).fill(keysym);
      this.mapping[keycode - display.min_keycode] = row;
      client.ChangeKeyboardMapping(keycode, this.keysymsPerKeycode, row);
    }
    await this.connection.sync();
  }

  /**
   * Apps read a changed keyboard mapping when they handle its MappingNotify, after the keys
   * already typed; before a spare keycode takes a new character, give them a moment to do so.
   */
  private async letAppsCatchUp(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 150));
  }

  private async strokeFor(keysym: number): Promise<KeyStroke> {
    const found = this.findStroke(keysym);
    if (found) return found;
    await this.remap([keysym]);
    return this.findStroke(keysym)!;
  }

  /** Where `keysym` is on the keyboard without AltGr: plain (column 0) or with Shift (column 1). */
  private findStroke(keysym: number): KeyStroke | null {
    const min = this.connection.display.min_keycode;
    for (const column of [0, 1]) {
      const index = this.mapping.findIndex((row) => row[column] === keysym);
      if (index >= 0) return { keycode: min + index, shift: column === 1 && this.mapping[index][0] !== keysym };
    }
    // A letter whose row lists only its lower case (Shift gives the upper case).
    if (keysym >= 0x41 && keysym <= 0x5a) {
      const lower = this.mapping.findIndex((row) => row[0] === keysym + 0x20 && (row[1] ?? 0) === 0);
      if (lower >= 0) return { keycode: min + lower, shift: true };
    }
    return null;
  }

  private keycodeOf(keysym: number): number {
    const stroke = this.findStroke(keysym);
    if (!stroke) throw new InputError(`This keyboard has no key for keysym 0x${keysym.toString(16)}.`);
    return stroke.keycode;
  }

  private motion(x: number, y: number): void {
    this.xtest.FakeInput(this.xtest.MotionNotify, 0, 0, this.connection.root, Math.round(x), Math.round(y));
  }

  private button(button: number, press: boolean): void {
    this.xtest.FakeInput(press ? this.xtest.ButtonPress : this.xtest.ButtonRelease, button, 0, 0, 0, 0);
  }

  private clickButton(button: number): void {
    this.button(button, true);
    this.button(button, false);
  }

  private keyEvent(keycode: number, press: boolean): void {
    this.xtest.FakeInput(press ? this.xtest.KeyPress : this.xtest.KeyRelease, keycode, 0, 0, 0, 0);
  }
}
