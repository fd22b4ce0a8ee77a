import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { keyForOs } from '../../shared/desktop/keys';
import type { InputOutcome, MachineInput, MachineScreen } from '../../shared/runners/hypervisor';
import type { QmpClient } from './qmp';
import { SCREEN } from './qemu-args';

/**
 * A machine's screen and input through QEMU itself, as a person at the machine would see and
 * use it (docs/runners.md, "The console"): QMP `screendump` (a PNG of the virtual GPU's screen,
 * whatever the guest runs), `input-send-event` for the absolute pointer of the virtio tablet,
 * and `send-key` for the keyboard's keys by QEMU's key codes. Keys go through `send-key`, which
 * QEMU paces with its own timer (`KEY_HOLD_MS` held, 10 ms between releases): the emulated PS/2
 * keyboard holds only 16 bytes, and keys sent at once with `input-send-event` overflow it under
 * TCG (a typed line arrived as its first letter). Nothing in the guest takes part, so the console
 * works while the desktop app is busy, paired elsewhere or not running.
 *
 * `frame` rises each time a picture taken differs from the one before, and with each input, so
 * a viewer asks for a new picture only when it changed.
 */

/** QEMU's absolute axes run from 0 to this, across the whole screen. */
const ABS_MAX = 0x7fff;
/** How long `send-key` holds a key down; QEMU waits 10 ms after each release. */
const KEY_HOLD_MS = 10;
const KEY_RELEASE_MS = 10;

/** Keys by the protocol's names (shared/desktop/keys.ts folds the spellings) to QEMU's key codes (qapi/ui.json QKeyCode). */
const NAMED_QCODES: Readonly<Record<string, string>> = Object.freeze({
  enter: 'ret',
  escape: 'esc',
  tab: 'tab',
  space: 'spc',
  delete: 'delete',
  backspace: 'backspace',
  up: 'up',
  down: 'down',
  left: 'left',
  right: 'right',
  pageup: 'pgup',
  pagedown: 'pgdn',
  home: 'home',
  end: 'end',
  insert: 'insert',
  menu: 'menu',
  printscreen: 'print',
  minus: 'minus',
  ctrl: 'ctrl',
  alt: 'alt',
  shift: 'shift',
  super: 'meta_l',
  ...Object.fromEntries(Array.from({ length: 12 }, (_, index) => [`f${index + 1}`, `f${index + 1}`])),
});

/** Printable ASCII on a US keyboard: the key and whether Shift is held. */
const CHARACTER_KEYS: ReadonlyMap<string, { qcode: string; shift: boolean }> = (() => {
  const keys = new Map<string, { qcode: string; shift: boolean }>();
  for (const letter of 'abcdefghijklmnopqrstuvwxyz') {
    keys.set(letter, { qcode: letter, shift: false });
    keys.set(letter.toUpperCase(), { qcode: letter, shift: true });
  }
  const rows: Array<[string, string, string]> = [
    ['1', '!', '1'], ['2', '@', '2'], ['3', '#', '3'], ['4', '$', '4'], ['5', '%', '5'],
    ['6', '^', '6'], ['7', '&', '7'], ['8', '*', '8'], ['9', '(', '9'], ['0', ')', '0'],
    ['-', '_', 'minus'], ['=', '+', 'equal'], ['[', '{', 'bracket_left'], [']', '}', 'bracket_right'],
    ['\\', '|', 'backslash'], [';', ':', 'semicolon'], ["'", '"', 'apostrophe'], ['`', '~', 'grave_accent'],
    [',', '<', 'comma'], ['.', '>', 'dot'], ['/', '?', 'slash'],
  ];
  for (const [plain, shifted, qcode] of rows) {
    keys.set(plain, { qcode, shift: false });
    keys.set(shifted, { qcode, shift: true });
  }
  keys.set(' ', { qcode: 'spc', shift: false });
  keys.set('\n', { qcode: 'ret', shift: false });
  keys.set('\t', { qcode: 'tab', shift: false });
  return keys;
})();

type PointerEvent = { type: 'btn'; data: { down: boolean; button: 'left' } } | { type: 'abs'; data: { axis: 'x' | 'y'; value: number } };

/** What an input is to QEMU: batches of pointer events, or key chords (held together, released in reverse). */
export type QemuInput = { pointer: PointerEvent[][] } | { chords: string[][] };

export class QemuConsole {
  private frame = 1;
  private lastPicture: string | null = null;

  constructor(
    private readonly qmp: QmpClient,
    /** Where the picture is written on the host (the machine's folder). */
    private readonly dir: string,
  ) {}

  /** The screen now, as PNG bytes (QEMU writes it to a file in the machine's folder). */
  async screen(): Promise<MachineScreen> {
    const file = path.join(this.dir, 'screen.png');
    await this.qmp.execute('screendump', { filename: file, format: 'png' });
    const png = await readFile(file);
    await rm(file, { force: true });
    const digest = createHash('sha1').update(png).digest('hex');
    if (this.lastPicture !== null && digest !== this.lastPicture) this.frame += 1;
    this.lastPicture = digest;
    // The PNG's IHDR: width and height at bytes 16 and 20.
    return { frame: this.frame, width: png.readUInt32BE(16), height: png.readUInt32BE(20), png };
  }

  /** A click, text or keys through the machine's pointer and keyboard; `click_label` needs the guest's elements, which QEMU cannot see. */
  async input(input: MachineInput): Promise<InputOutcome> {
    const plan = qemuInput(input);
    if (typeof plan === 'string') return { ok: false, message: plan, frame: this.frame };
    if ('pointer' in plan) {
      for (const events of plan.pointer) await this.qmp.execute('input-send-event', { events });
    } else {
      let queuedMs = 0;
      for (const chord of plan.chords) {
        await this.qmp.execute('send-key', { keys: chord.map((qcode) => ({ type: 'qcode', data: qcode })), 'hold-time': KEY_HOLD_MS });
        queuedMs += chord.length * (KEY_HOLD_MS + KEY_RELEASE_MS);
      }
      // QEMU answers at once and plays the keys on its timer: the input is done when they are.
      await sleep(queuedMs);
    }
    this.frame += 1;
    this.lastPicture = null;
    return { ok: true, frame: this.frame };
  }
}

/** How QEMU is to carry out an input, or why it cannot. */
export function qemuInput(input: MachineInput, screen: { width: number; height: number } = SCREEN): QemuInput | string {
  switch (input.type) {
    case 'click': {
      if (input.x < 0 || input.y < 0 || input.x >= screen.width || input.y >= screen.height) return `(${input.x}, ${input.y}) is off the ${screen.width}×${screen.height} screen.`;
      const axis = (value: number, size: number) => Math.round((value * ABS_MAX) / (size - 1));
      return {
        pointer: [
          [{ type: 'abs', data: { axis: 'x', value: axis(input.x, screen.width) } }, { type: 'abs', data: { axis: 'y', value: axis(input.y, screen.height) } }],
          [{ type: 'btn', data: { down: true, button: 'left' } }],
          [{ type: 'btn', data: { down: false, button: 'left' } }],
        ],
      };
    }
    case 'type': {
      const chords: string[][] = [];
      for (const character of input.text.replace(/\r\n?/g, '\n')) {
        const key = CHARACTER_KEYS.get(character);
        if (!key) return `"${character}" cannot be typed through the machine's keyboard (US layout, printable ASCII, Return and Tab).`;
        chords.push(key.shift ? ['shift', key.qcode] : [key.qcode]);
      }
      return { chords };
    }
    case 'key': {
      const combo = comboQcodes(input.keys);
      return typeof combo === 'string' ? combo : { chords: [[...combo.modifiers, combo.key]] };
    }
    case 'click_label':
      return 'This runner\'s machines take clicks by position only: QEMU does not see the elements on the screen.';
  }
}

/** A combo (`cmd+s`, `ctrl+shift+t`, `enter`) as Linux presses it: `cmd` is Ctrl, the system key Super. */
export function comboQcodes(keys: string): { modifiers: string[]; key: string } | string {
  const names = keys.trim().split('+').map((name) => name.trim());
  if (names.some((name) => !name)) return `The key combo "${keys}" has an empty key name.`;
  const qcodes: string[] = [];
  for (const name of names) {
    const folded = keyForOs(name, 'linux');
    const qcode = NAMED_QCODES[folded] ?? (folded.length === 1 ? CHARACTER_KEYS.get(folded)?.qcode : undefined);
    if (!qcode) return `Unknown key "${name}" in "${keys}".`;
    qcodes.push(qcode);
  }
  return { modifiers: qcodes.slice(0, -1), key: qcodes.at(-1)! };
}
