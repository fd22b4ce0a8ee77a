import { createCanvas, type SKRSContext2D } from '@napi-rs/canvas';
import { DESKHAND_APP } from '../../shared/desktop/computer';
import type { PersonMessage, Rect, ShowMessage } from '../../shared/desktop/protocol';
import { DrawnWindow, type DrawnControl } from './drawn-window';
import type { TypedKey } from './typed-keys';

/**
 * The person's window: what the service shows the person at the computer (`desktop:show`) and
 * the buttons with which they answer, decide, stop the task and say they typed a secret
 * (`desktop:person`). A drawn window (drawn-window.ts) of the app's own, WM_CLASS
 * `deskhand-desktop`, kept above the others in the top-right corner, as tall as its content.
 * It is unmapped while there is nothing to show: no running task, nothing open, no end left to
 * read. The Linux computer refuses every step of the agent that would land on it.
 */

export interface PersonWindowOptions {
  /** The X display (`:0`); `$DISPLAY` by default. */
  display?: string;
  /** Told of each thing the person did; the app sends it to the service (`desktop:person`). */
  onPerson: (message: PersonMessage) => void;
  /** The window's width in pixels (360 by default). */
  width?: number;
}

type Pending = Extract<ShowMessage, { kind: 'question' | 'approval' | 'type_secret' }>;
type Ended = Extract<ShowMessage, { kind: 'ended' }>;

/** What the window shows, built from the `show` messages and the person's own actions. */
interface PersonState {
  /** Running tasks by id: the agent's name, and whether the person pressed Stop. */
  banners: Map<string, { agent: string; stopping: boolean }>;
  narration: Array<{ task_id: string; text: string }>;
  summaries: Map<string, string>;
  /** Open questions, approvals and secret requests, oldest first. */
  pending: Pending[];
  /** Free-text answers being typed, by question id. */
  drafts: Map<string, string>;
  /** The question whose text field takes the person's typing. */
  activeField: string | null;
  /** Ends the person has not dismissed, oldest first. */
  ended: Ended[];
}

const DEFAULT_WIDTH = 360;
const MARGIN = 8;
const PAD = 12;
const NARRATION_SHOWN = 4;
const ENDS_SHOWN = 2;
const BUTTON_HEIGHT = 30;
const FONT = '"DejaVu Sans", "Noto Sans", "Liberation Sans", sans-serif';
const MONO = '"DejaVu Sans Mono", "Liberation Mono", monospace';

const COLOURS = {
  background: '#ffffff',
  border: '#9aa5b1',
  header: '#263238',
  headerText: '#ffffff',
  text: '#1c2833',
  quiet: '#52606d',
  banner: '#e3f2fd',
  card: '#f7f9fa',
  button: '#ffffff',
  buttonBorder: '#52606d',
  approve: '#2e7d32',
  approveText: '#ffffff',
  normal: '#1565c0',
  normalBand: '#e3f2fd',
  highRisk: '#d32f2f',
  highRiskText: '#ffffff',
  secret: '#6a1b9a',
  secretBox: '#f3e5f5',
  field: '#ffffff',
  fieldActive: '#1565c0',
  ended: '#eceff1',
} as const;

const END_TITLES: Readonly<Record<string, string>> = { completed: 'Task completed', failed: 'Task failed', stopped: 'Task stopped' };

/** One drawing step, recorded while the layout is measured and replayed on a canvas of the final height. */
type DrawOp =
  | { op: 'fill'; rect: Rect; colour: string }
  | { op: 'stroke'; rect: Rect; colour: string; width: number }
  | { op: 'text'; text: string; x: number; y: number; font: string; colour: string };

interface Layout {
  height: number;
  ops: DrawOp[];
  controls: DrawnControl[];
  /** Where a secret to type is drawn: screenshots leave these areas out. */
  secrets: Rect[];
}

/**
 * The person's window of one app: `show` takes the service's messages in, `elements` says where
 * its controls are, and what the person does there reaches `onPerson`.
 */
export class PersonWindow {
  private readonly state: PersonState = { banners: new Map(), narration: [], summaries: new Map(), pending: [], drafts: new Map(), activeField: null, ended: [] };
  private rendering: Promise<void> = Promise.resolve();
  private renderQueued = false;
  private secrets: Rect[] = [];
  private closed = false;

  private constructor(
    private readonly window: DrawnWindow,
    private readonly options: PersonWindowOptions,
    private readonly maxHeight: number,
  ) {}

  /** Opens the window on its own X connection, unmapped until there is something to show. */
  static async open(options: PersonWindowOptions): Promise<PersonWindow> {
    const width = options.width ?? DEFAULT_WIDTH;
    let person: PersonWindow | null = null;
    let screenHeight = 0;
    const window = await DrawnWindow.open({
      display: options.display,
      wmClass: { instance: DESKHAND_APP, className: DESKHAND_APP },
      title: 'Deskhand',
      type: 'normal',
      above: true,
      place: (screen) => {
        screenHeight = screen.height;
        return { x: screen.width - width - MARGIN, y: MARGIN, width, height: 100 };
      },
      onPress: (id) => person?.press(id),
      onKey: (key) => person?.typed(key),
    });
    person = new PersonWindow(window, options, Math.max(200, screenHeight - 2 * MARGIN));
    return person;
  }

  /** The X window's id. */
  get windowId(): number {
    return this.window.id;
  }

  /** Whether the window is on screen. */
  get visible(): boolean {
    return this.window.mapped;
  }

  /** Shows what the service sent; the window is redrawn (and mapped or unmapped) soon after. */
  show(message: ShowMessage): void {
    if (this.closed) return;
    applyShow(this.state, message);
    this.render();
  }

  /** Resolves once everything shown so far is drawn, on screen or off it. */
  async flush(): Promise<void> {
    while (this.renderQueued) await this.rendering;
    await this.rendering;
  }

  /**
   * The window's controls as drawn now, with their bounds on the screen: `role`, `label`
   * (Stop, an option's text, Your answer, Send, Approve, Deny, I typed it, Dismiss) and `id`.
   * None while the window is not on screen.
   */
  elements(): DrawnControl[] {
    return this.window.screenControls();
  }

  /** Where a secret to type is shown on the screen now; screenshots paint these areas over. */
  secretAreas(): Rect[] {
    const origin = this.window.origin;
    if (this.secrets.length === 0 || !this.window.mapped || !origin) return [];
    return this.secrets.map((rect) => ({ ...rect, x: rect.x + origin.x, y: rect.y + origin.y }));
  }

  /** Destroys the window and closes its connection. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.rendering;
    await this.window.close();
  }

  private render(): void {
    if (this.renderQueued) return;
    this.renderQueued = true;
    this.rendering = this.rendering
      .then(async () => {
        this.renderQueued = false;
        if (this.closed) return;
        await this.draw();
      })
      .catch(() => undefined);
  }

  private async draw(): Promise<void> {
    const state = this.state;
    if (state.activeField && !state.pending.some((item) => item.kind === 'question' && item.question_id === state.activeField)) {
      state.activeField = null;
      await this.window.releaseKeyboard();
    }
    if (state.banners.size === 0 && state.pending.length === 0 && state.ended.length === 0) {
      this.secrets = [];
      if (this.window.shown) await this.window.hide();
      return;
    }
    const width = this.options.width ?? DEFAULT_WIDTH;
    const measure = createCanvas(1, 1).getContext('2d');
    const layout = layOut(state, width, this.maxHeight, measure);
    const canvas = createCanvas(width, layout.height);
    paint(canvas.getContext('2d'), layout.ops);
    // Before the picture changes: a screenshot taken meanwhile covers too much rather than too little.
    this.secrets = [...this.secrets, ...layout.secrets];
    await this.window.draw(canvas, layout.controls);
    this.secrets = layout.secrets;
    if (!this.window.shown) await this.window.show();
  }

  /** A control was clicked: the person's action goes to the service, and the window shows it taken. */
  private press(id: string): void {
    const colon = id.indexOf(':');
    const kind = id.slice(0, colon);
    const rest = id.slice(colon + 1);
    const state = this.state;
    const item = (itemId: string): Pending | undefined => state.pending.find((pending) => pendingId(pending) === itemId);
    const take = (itemId: string): void => {
      state.pending = state.pending.filter((pending) => pendingId(pending) !== itemId);
      state.drafts.delete(itemId);
    };
    switch (kind) {
      case 'stop': {
        const banner = state.banners.get(rest);
        if (!banner || banner.stopping) return;
        banner.stopping = true;
        this.options.onPerson({ kind: 'stop', task_id: rest });
        break;
      }
      case 'option': {
        const slash = rest.indexOf(':');
        const question = item(rest.slice(slash + 1));
        const answer = question?.kind === 'question' ? question.options[Number(rest.slice(0, slash))] : undefined;
        if (!question || question.kind !== 'question' || answer === undefined) return;
        take(question.question_id);
        this.options.onPerson({ kind: 'answer', task_id: question.task_id, question_id: question.question_id, answer });
        break;
      }
      case 'field':
        // The window took the keyboard when the field was pressed.
        if (item(rest)?.kind !== 'question') return;
        state.activeField = rest;
        break;
      case 'send':
        this.submit(rest);
        break;
      case 'approve':
      case 'deny': {
        const approval = item(rest);
        if (approval?.kind !== 'approval') return;
        take(rest);
        this.options.onPerson({ kind: 'decision', task_id: approval.task_id, approval_id: approval.approval_id, decision: kind });
        break;
      }
      case 'typed': {
        const request = item(rest);
        if (request?.kind !== 'type_secret') return;
        take(rest);
        this.options.onPerson({ kind: 'typed_secret', task_id: request.task_id, request_id: request.request_id });
        break;
      }
      case 'dismiss':
        state.ended = state.ended.filter((end) => end.task_id !== rest);
        state.summaries.delete(rest);
        break;
      default:
        return;
    }
    this.render();
  }

  /** The person typed while the window had the keyboard: into the active text field. */
  private typed(key: TypedKey): void {
    const questionId = this.state.activeField;
    if (!questionId) return;
    const draft = this.state.drafts.get(questionId) ?? '';
    switch (key.kind) {
      case 'text':
        this.state.drafts.set(questionId, draft + key.text);
        break;
      case 'backspace':
        this.state.drafts.set(questionId, [...draft].slice(0, -1).join(''));
        break;
      case 'enter':
        this.submit(questionId);
        return;
      case 'escape':
        this.state.activeField = null;
        void this.window.releaseKeyboard().catch(() => undefined);
        break;
    }
    this.render();
  }

  private submit(questionId: string): void {
    const state = this.state;
    const question = state.pending.find((pending) => pending.kind === 'question' && pending.question_id === questionId);
    const answer = (state.drafts.get(questionId) ?? '').trim();
    if (question?.kind !== 'question' || !answer) return;
    state.pending = state.pending.filter((pending) => pending !== question);
    state.drafts.delete(questionId);
    this.options.onPerson({ kind: 'answer', task_id: question.task_id, question_id: questionId, answer });
    this.render();
  }
}

/** Takes one `show` message into the state. */
function applyShow(state: PersonState, message: ShowMessage): void {
  switch (message.kind) {
    case 'banner':
      if (!message.running) {
        state.banners.delete(message.task_id);
        break;
      }
      if (!state.banners.has(message.task_id)) {
        // A new task: what is left of finished ones goes.
        const running = (taskId: string): boolean => taskId === message.task_id || state.banners.has(taskId);
        state.ended = [];
        state.narration = state.narration.filter((line) => running(line.task_id));
        for (const taskId of [...state.summaries.keys()]) if (!running(taskId)) state.summaries.delete(taskId);
      }
      state.banners.set(message.task_id, { agent: message.agent_name, stopping: state.banners.get(message.task_id)?.stopping ?? false });
      break;
    case 'narration':
      state.narration = [...state.narration, { task_id: message.task_id, text: message.text }].slice(-NARRATION_SHOWN);
      break;
    case 'summary':
      state.summaries.set(message.task_id, message.text);
      break;
    case 'question':
    case 'approval':
    case 'type_secret': {
      const id = pendingId(message);
      const at = state.pending.findIndex((pending) => pendingId(pending) === id);
      if (at >= 0) state.pending[at] = message;
      else state.pending.push(message);
      break;
    }
    case 'clear':
      state.pending = state.pending.filter((pending) => pendingId(pending) !== message.item_id);
      state.drafts.delete(message.item_id);
      break;
    case 'ended':
      state.banners.delete(message.task_id);
      for (const pending of state.pending) if (pending.task_id === message.task_id) state.drafts.delete(pendingId(pending));
      state.pending = state.pending.filter((pending) => pending.task_id !== message.task_id);
      state.narration = state.narration.filter((line) => line.task_id !== message.task_id);
      state.ended = [...state.ended.filter((end) => end.task_id !== message.task_id), message].slice(-ENDS_SHOWN);
      break;
  }
}

function pendingId(item: Pending): string {
  switch (item.kind) {
    case 'question':
      return item.question_id;
    case 'approval':
      return item.approval_id;
    case 'type_secret':
      return item.request_id;
  }
}

/**
 * Lays the state out top to bottom at `width`: the header, each running task's banner with Stop,
 * the last narration lines, summaries, the open items, the ends. Content below `maxHeight` is
 * cut off, its controls with it.
 */
function layOut(state: PersonState, width: number, maxHeight: number, measure: SKRSContext2D): Layout {
  const ops: DrawOp[] = [];
  const controls: DrawnControl[] = [];
  const secrets: Rect[] = [];
  const inner = width - 2 * PAD;
  let y = 0;

  const font = (size: number, bold = false, family = FONT): string => `${bold ? 'bold ' : ''}${size}px ${family}`;
  /** Wrapped text from the cursor; returns its height. */
  const text = (value: string, options: { size?: number; bold?: boolean; colour?: string; x?: number; width?: number; family?: string } = {}): number => {
    const size = options.size ?? 14;
    const f = font(size, options.bold, options.family);
    const lineHeight = Math.round(size * 1.35);
    const lines = wrap(measure, value, f, options.width ?? inner);
    lines.forEach((line, index) => ops.push({ op: 'text', text: line, x: options.x ?? PAD, y: y + index * lineHeight + Math.round(size * 1.05), font: f, colour: options.colour ?? COLOURS.text }));
    return lines.length * lineHeight;
  };
  const button = (id: string, label: string, rect: Rect, style: { fill?: string; colour?: string; border?: string } = {}): void => {
    ops.push({ op: 'fill', rect, colour: style.fill ?? COLOURS.button });
    ops.push({ op: 'stroke', rect, colour: style.border ?? COLOURS.buttonBorder, width: 1 });
    const f = font(13, true);
    const shown = ellipsize(measure, label, f, rect.width - 12);
    measure.font = f;
    const textWidth = measure.measureText(shown).width;
    ops.push({ op: 'text', text: shown, x: rect.x + Math.round((rect.width - textWidth) / 2), y: rect.y + Math.round(rect.height / 2) + 5, font: f, colour: style.colour ?? COLOURS.text });
    controls.push({ id, role: 'button', label, bounds: { ...rect } });
  };
  /** A card: content drawn by `body` from the cursor, then a background and border around it. */
  const card = (style: { fill: string; border: string; borderWidth?: number }, body: () => void): void => {
    const top = y;
    const at = ops.length;
    y += PAD;
    body();
    y += PAD;
    const rect = { x: PAD / 2, y: top, width: width - PAD, height: y - top };
    ops.splice(at, 0, { op: 'fill', rect, colour: style.fill }, { op: 'stroke', rect, colour: style.border, width: style.borderWidth ?? 1 });
    y += PAD / 2;
  };

  // Header.
  ops.push({ op: 'fill', rect: { x: 0, y: 0, width, height: 26 }, colour: COLOURS.header });
  ops.push({ op: 'text', text: 'Deskhand', x: PAD, y: 18, font: font(12, true), colour: COLOURS.headerText });
  y = 26 + PAD / 2;

  for (const [taskId, banner] of state.banners) {
    card({ fill: COLOURS.banner, border: COLOURS.normal }, () => {
      const stopWidth = 84;
      const top = y;
      const height = text(`${banner.agent} is working on your computer`, { bold: true, width: inner - stopWidth - PAD });
      const stop = { x: width - PAD - stopWidth, y: top, width: stopWidth - PAD / 2, height: BUTTON_HEIGHT };
      if (banner.stopping) ops.push({ op: 'text', text: 'Stopping…', x: stop.x, y: stop.y + 20, font: font(13, true), colour: COLOURS.quiet });
      else button(`stop:${taskId}`, 'Stop', stop, { border: COLOURS.text });
      y = top + Math.max(height, BUTTON_HEIGHT);
      const lines = state.narration.filter((line) => line.task_id === taskId);
      if (lines.length > 0) y += 6;
      for (const line of lines) y += text(`• ${line.text}`, { size: 12, colour: COLOURS.quiet }) + 2;
      const summary = state.summaries.get(taskId);
      if (summary) {
        y += 6;
        y += text(summary, { size: 13 });
      }
    });
  }

  for (const item of state.pending) {
    if (item.kind === 'question') {
      card({ fill: COLOURS.card, border: COLOURS.border }, () => {
        y += text('Question', { size: 11, bold: true, colour: COLOURS.quiet }) + 2;
        y += text(item.question) + 8;
        if (item.options.length > 0) {
          item.options.forEach((option, index) => {
            button(`option:${index}:${item.question_id}`, option, { x: PAD + 4, y, width: inner - 8, height: BUTTON_HEIGHT });
            y += BUTTON_HEIGHT + 6;
          });
          y -= 6;
        } else {
          const sendWidth = 64;
          const field = { x: PAD + 4, y, width: inner - 8 - sendWidth - 6, height: BUTTON_HEIGHT };
          const active = state.activeField === item.question_id;
          const draft = state.drafts.get(item.question_id) ?? '';
          ops.push({ op: 'fill', rect: field, colour: COLOURS.field });
          ops.push({ op: 'stroke', rect: field, colour: active ? COLOURS.fieldActive : COLOURS.buttonBorder, width: active ? 2 : 1 });
          const f = font(13);
          const shown = draft ? tail(measure, draft, f, field.width - 14) + (active ? '|' : '') : active ? '|' : 'Type your answer';
          ops.push({ op: 'text', text: shown, x: field.x + 6, y: field.y + 20, font: f, colour: draft || active ? COLOURS.text : COLOURS.quiet });
          controls.push({ id: `field:${item.question_id}`, role: 'text_field', label: 'Your answer', bounds: { ...field } });
          button(`send:${item.question_id}`, 'Send', { x: field.x + field.width + 6, y, width: sendWidth, height: BUTTON_HEIGHT });
          y += BUTTON_HEIGHT;
        }
      });
    } else if (item.kind === 'approval') {
      const high = item.risk === 'high';
      card({ fill: COLOURS.card, border: high ? COLOURS.highRisk : COLOURS.normal, borderWidth: high ? 3 : 1 }, () => {
        const band = { x: PAD, y, width: inner, height: 24 };
        ops.push({ op: 'fill', rect: band, colour: high ? COLOURS.highRisk : COLOURS.normalBand });
        const title = `${high ? 'High risk: approval needed' : 'Approval needed'}${item.category ? ` (${item.category})` : ''}`;
        ops.push({ op: 'text', text: title, x: band.x + 8, y: band.y + 17, font: font(12, true), colour: high ? COLOURS.highRiskText : COLOURS.normal });
        y += band.height + 8;
        y += text(item.what) + 8;
        const half = (inner - 8 - 8) / 2;
        button(`approve:${item.approval_id}`, 'Approve', { x: PAD + 4, y, width: Math.floor(half), height: BUTTON_HEIGHT }, { fill: COLOURS.approve, colour: COLOURS.approveText, border: COLOURS.approve });
        button(`deny:${item.approval_id}`, 'Deny', { x: PAD + 4 + Math.floor(half) + 8, y, width: Math.floor(half), height: BUTTON_HEIGHT });
        y += BUTTON_HEIGHT;
      });
    } else {
      card({ fill: COLOURS.card, border: COLOURS.secret }, () => {
        y += text(`Please type this into ${item.field || 'the field'}:`) + 6;
        const top = y;
        const at = ops.length;
        y += 6;
        const height = text(item.text, { family: MONO, size: 15, x: PAD + 10, width: inner - 20 });
        const box = { x: PAD + 4, y: top, width: inner - 8, height: height + 12 };
        // Under the text: the box goes in before the text's own ops.
        ops.splice(at, 0, { op: 'fill', rect: box, colour: COLOURS.secretBox });
        secrets.push(box);
        y = top + box.height + 8;
        button(`typed:${item.request_id}`, 'I typed it', { x: PAD + 4, y, width: inner - 8, height: BUTTON_HEIGHT });
        y += BUTTON_HEIGHT;
      });
    }
  }

  for (const end of state.ended) {
    card({ fill: COLOURS.ended, border: COLOURS.border }, () => {
      y += text(END_TITLES[end.status] ?? `Task ${end.status}`, { bold: true }) + 4;
      if (end.message) y += text(end.message, { size: 13 }) + 4;
      const summary = state.summaries.get(end.task_id);
      if (summary && summary !== end.message) y += text(summary, { size: 13 }) + 4;
      y += 4;
      button(`dismiss:${end.task_id}`, 'Dismiss', { x: width - PAD - 100, y, width: 96, height: 26 });
      y += 26;
    });
  }

  const height = Math.min(maxHeight, Math.ceil(y + PAD / 2));
  ops.push({ op: 'stroke', rect: { x: 0, y: 0, width, height }, colour: COLOURS.border, width: 1 });
  const inside = (rect: Rect): boolean => rect.y + rect.height <= height;
  return { height, ops, controls: controls.filter((control) => inside(control.bounds)), secrets: secrets.filter((rect) => rect.y < height) };
}

function paint(context: SKRSContext2D, ops: DrawOp[]): void {
  context.fillStyle = COLOURS.background;
  context.fillRect(0, 0, context.canvas.width, context.canvas.height);
  for (const op of ops) {
    if (op.op === 'fill') {
      context.fillStyle = op.colour;
      context.fillRect(op.rect.x, op.rect.y, op.rect.width, op.rect.height);
    } else if (op.op === 'stroke') {
      context.strokeStyle = op.colour;
      context.lineWidth = op.width;
      const inset = op.width / 2;
      context.strokeRect(op.rect.x + inset, op.rect.y + inset, op.rect.width - op.width, op.rect.height - op.width);
    } else {
      context.fillStyle = op.colour;
      context.font = op.font;
      context.fillText(op.text, op.x, op.y);
    }
  }
}

/** Lines of `text` no wider than `width`: broken at spaces, a word too long for a line broken anywhere, line breaks kept. */
function wrap(context: SKRSContext2D, text: string, font: string, width: number): string[] {
  context.font = font;
  const fits = (line: string): boolean => context.measureText(line).width <= width;
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      const candidate = line ? `${line} ${word}` : word;
      if (fits(candidate)) {
        line = candidate;
        continue;
      }
      if (line) lines.push(line);
      line = '';
      for (const character of word) {
        if (line && !fits(line + character)) {
          lines.push(line);
          line = '';
        }
        line += character;
      }
    }
    lines.push(line);
  }
  return lines;
}

function ellipsize(context: SKRSContext2D, text: string, font: string, width: number): string {
  context.font = font;
  if (context.measureText(text).width <= width) return text;
  const characters = [...text];
  while (characters.length > 0 && context.measureText(`${characters.join('')}…`).width > width) characters.pop();
  return `${characters.join('')}…`;
}

/** The end of `text` that fits in `width` (a field shows where the person is typing). */
function tail(context: SKRSContext2D, text: string, font: string, width: number): string {
  context.font = font;
  const characters = [...text];
  while (characters.length > 1 && context.measureText(characters.join('')).width > width) characters.shift();
  return characters.join('');
}
