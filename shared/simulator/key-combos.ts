/**
 * Key combos as the protocol writes them: lowercase names joined with `+` (`cmd+enter`,
 * `ctrl+l`, `delete`). Other spellings are folded onto one name each (shared/desktop/keys.ts),
 * so the computer compares plain strings.
 */
import { keyName, MODIFIER_NAMES, type Modifier as AnyModifier } from '../desktop/keys';

/** The simulated computer has no Fn key. */
export type Modifier = Exclude<AnyModifier, 'fn'>;

export interface KeyCombo {
  modifiers: ReadonlySet<Modifier>;
  /** The non-modifier key, or null for a combo of modifiers only (`cmd`). */
  key: string | null;
}

const NAMED_KEYS = new Set([
  'enter',
  'escape',
  'tab',
  'space',
  'backspace',
  'delete',
  'up',
  'down',
  'left',
  'right',
  'home',
  'end',
  'pageup',
  'pagedown',
  ...Array.from({ length: 12 }, (_, i) => `f${i + 1}`),
]);

/** Parses a combo; returns an error message for a key the computer does not have. */
export function parseKeyCombo(combo: string): KeyCombo | { error: string } {
  const text = combo.trim().toLowerCase();
  if (!text) return { error: 'No key given.' };
  // A trailing "+" names the plus key itself ("cmd++").
  const parts = text.endsWith('++') ? [...text.slice(0, -2).split('+'), '+'] : text === '+' ? ['+'] : text.split('+');
  const modifiers = new Set<Modifier>();
  let key: string | null = null;
  for (const [index, raw] of parts.entries()) {
    const part = raw.trim();
    const modifier = MODIFIER_NAMES[part];
    if (modifier && modifier !== 'fn') {
      modifiers.add(modifier);
      continue;
    }
    const name = part === 'plus' ? '+' : keyName(part);
    const known = NAMED_KEYS.has(name) || [...name].length === 1;
    if (!known || index !== parts.length - 1) return { error: `Unknown key "${raw}" in "${combo}".` };
    key = name;
  }
  return { modifiers, key };
}

/** The character a plain key types into a text field, or null for a key that types nothing. */
export function typedCharacter(combo: KeyCombo): string | null {
  const typing = combo.modifiers.size === 0 || (combo.modifiers.size === 1 && combo.modifiers.has('shift'));
  if (!typing || combo.key === null) return null;
  if (combo.key === 'space') return ' ';
  if ([...combo.key].length !== 1) return null;
  return combo.modifiers.has('shift') ? combo.key.toUpperCase() : combo.key;
}

/** True for exactly this modifier set and key. */
export function isCombo(combo: KeyCombo, key: string, ...modifiers: Modifier[]): boolean {
  return combo.key === key && combo.modifiers.size === modifiers.length && modifiers.every((m) => combo.modifiers.has(m));
}
