import { keySyms } from 'x11';

/** A key the person pressed in a drawn window, as a text input reads it. */
export type TypedKey = { kind: 'text'; text: string } | { kind: 'backspace' } | { kind: 'enter' } | { kind: 'escape' };

const SHIFT_MASK = 1;
const LOCK_MASK = 2;
const CONTROL_MASK = 4;
/** Mod1: Alt on every common layout. */
const ALT_MASK = 8;

const KEYSYM_BACKSPACE = 0xff08;
const KEYSYM_RETURN = 0xff0d;
const KEYSYM_KP_ENTER = 0xff8d;
const KEYSYM_ESCAPE = 0xff1b;
const KEYSYM_TAB = 0xff09;

let legacyKeysyms: Map<number, string> | null = null;

/**
 * The character a keysym types, or null for a key that types none (Shift, arrows, F1…): Latin-1
 * keysyms are their code point, Unicode keysyms 0x01000000 plus it, and the older keysyms of
 * other scripts (Cyrillic, Greek, the euro sign…) are looked up in X's own table (keysymdef.h,
 * which the `x11` package carries with each keysym's character).
 */
export function characterOfKeysym(keysym: number): string | null {
  if ((keysym >= 0x20 && keysym <= 0x7e) || (keysym >= 0xa0 && keysym <= 0xff)) return String.fromCodePoint(keysym);
  if (keysym >= 0x01000100 && keysym <= 0x0110ffff) return String.fromCodePoint(keysym - 0x01000000);
  if (keysym === KEYSYM_TAB) return null;
  if (!legacyKeysyms) {
    legacyKeysyms = new Map();
    for (const { code, description } of Object.values(keySyms)) {
      const character = /^\((.)\)/u.exec(description ?? '')?.[1];
      if (character && !legacyKeysyms.has(code)) legacyKeysyms.set(code, character);
    }
  }
  // Function keys (0xff00 and up) have no character even when the table names one.
  return keysym >= 0xfd00 ? null : (legacyKeysyms.get(keysym) ?? null);
}

/**
 * What a key press types, from the keyboard mapping (GetKeyboardMapping's rows, from
 * `minKeycode`) and the modifier state of the event: column 0 plain, column 1 with Shift (a
 * letter whose row has only its small form is made capital), Caps Lock capitalises letters.
 * Null for presses that type nothing: modifiers alone, Ctrl or Alt combinations, arrows.
 */
export function typedKey(mapping: number[][], minKeycode: number, keycode: number, state: number): TypedKey | null {
  const row = mapping[keycode - minKeycode];
  if (!row) return null;
  const plain = row[0] ?? 0;
  const shifted = row[1] ?? 0;
  const shift = (state & SHIFT_MASK) !== 0;
  const keysym = shift && shifted !== 0 ? shifted : plain;
  if (keysym === KEYSYM_BACKSPACE) return { kind: 'backspace' };
  if (keysym === KEYSYM_RETURN || keysym === KEYSYM_KP_ENTER) return { kind: 'enter' };
  if (keysym === KEYSYM_ESCAPE) return { kind: 'escape' };
  if ((state & (CONTROL_MASK | ALT_MASK)) !== 0) return null;
  let character = characterOfKeysym(keysym);
  if (character === null) return null;
  const capitalise = (shift && shifted === 0) !== ((state & LOCK_MASK) !== 0);
  if (capitalise && character.toLowerCase() === character) character = character.toUpperCase();
  return { kind: 'text', text: character };
}
