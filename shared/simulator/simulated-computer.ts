import type {
  ActionResult,
  Capabilities,
  DesktopAction,
  DeviceInfo,
  ElementInfo,
  HelloMessage,
  Observation,
  Point,
  Rect,
} from '../desktop/protocol';
import { SIMULATED_OSES, appByName, spotlightMatches, type AppName, type SimulatedOs } from './apps.catalog';
import { capabilitiesFor, MAX_SCREEN, MIN_SCREEN } from './capabilities';
import { initialState, type ComputerState, type SimulatorEffect, type StatusTone } from './computer-state';
import { isCombo, parseKeyCombo, typedCharacter, type KeyCombo } from './key-combos';
import { MachineDisk, UNTITLED, type DiskSnapshot } from './machine-disk';
import { runScript, type ScriptResult } from './machine-shell';
import { contains, elementAt, layoutScreen, type PlacedElement, type ScreenLayout } from './screen-layout';
import { ScreenRenderer, type RenderStats } from './screen-renderer';
import { parseAddress } from './web-pages.catalog';

export interface SimulatedComputerOptions {
  os: SimulatedOs;
  appVersion: string;
  width: number;
  height: number;
  name: string;
  accessibility: boolean;
  /**
   * How a `wait` step lets time pass. By default it passes at once, which keeps the model free
   * of clocks; the desktop client passes a real sleep.
   */
  sleep?: (ms: number) => Promise<void>;
  /** The disk it starts from; a fresh image's by default. */
  disk?: MachineDisk;
}

/** The longest `wait` the computer honours, so a bad step cannot hold it for hours. */
export const MAX_WAIT_MS = 60_000;

// The screen's bounds, defined in capabilities.ts (which the CLI reads without loading the simulator).
export { MIN_SCREEN, MAX_SCREEN };

const CONTROL_CENTER_TOGGLES: Record<string, 'wifi' | 'bluetooth' | 'doNotDisturb'> = {
  'cc.wifi': 'wifi',
  'cc.bluetooth': 'bluetooth',
  'cc.do-not-disturb': 'doNotDisturb',
};

/** Effects kept, newest last. */
const MAX_EFFECTS = 1000;

const TEXT_ROLES = new Set(['text_field', 'password_field', 'text_area', 'address_bar']);
const FOCUSABLE_ROLES = new Set(['text_field', 'password_field', 'text_area', 'address_bar', 'button', 'item']);

/** What one step did: nothing to report, or why it could not be carried out. */
type Outcome = string | null;

/** A change a step made that the disk must follow, written once the step is over. */
type DiskWork =
  | { kind: 'effect'; effect: SimulatorEffect }
  | { kind: 'open'; name: string }
  | { kind: 'save'; name: string; text: string }
  | { kind: 'trash'; name: string }
  | { kind: 'empty-trash' }
  | { kind: 'firewall'; on: boolean }
  | { kind: 'install' };

/**
 * The simulated computer of docs/simulator.md: a desktop with the six apps, a browser with its
 * pages, and the system parts of a Mac (menu bar, Dock, Control Center, Spotlight) or of Windows
 * (the taskbar). It is an in-memory model without clocks or randomness: the same steps from the
 * same start give the same screens. Steps run one at a time in the order they were given.
 */
export class SimulatedComputer {
  readonly os: SimulatedOs;
  readonly device: DeviceInfo;
  readonly capabilities: Capabilities;
  private readonly screen: { os: SimulatedOs; width: number; height: number };
  private state: ComputerState = initialState();
  /** Focus of windows that are not in front, restored when they come back. */
  private readonly focusByApp = new Map<AppName, string | null>();
  private readonly renderer: ScreenRenderer;
  private readonly sleep: (ms: number) => Promise<void>;
  private queue: Promise<unknown> = Promise.resolve();
  /** The disk the apps show (Files, Trash, Notes, sent mail, the effects log) and scripts run over. */
  readonly disk: MachineDisk;
  private diskWork: DiskWork[] = [];
  private screenKey = '';
  private screenChanges = 0;

  constructor(options: SimulatedComputerOptions) {
    if (!SIMULATED_OSES.includes(options.os)) throw new RangeError(`Unknown os "${String(options.os)}": mac or windows.`);
    for (const side of ['width', 'height'] as const) {
      const value = options[side];
      if (!Number.isInteger(value) || value < MIN_SCREEN[side] || value > MAX_SCREEN[side]) {
        throw new RangeError(`The screen ${side} must be a whole number from ${MIN_SCREEN[side]} to ${MAX_SCREEN[side]}.`);
      }
    }
    this.os = options.os;
    this.device = { os: options.os, name: options.name, width: options.width, height: options.height, app_version: options.appVersion };
    this.capabilities = capabilitiesFor(options.os, options.appVersion, options.accessibility);
    this.screen = { os: options.os, width: options.width, height: options.height };
    this.renderer = new ScreenRenderer(options.width, options.height);
    this.sleep = options.sleep ?? (() => Promise.resolve());
    this.disk = options.disk ?? MachineDisk.fresh();
    this.readDisk();
    this.noteScreen(this.layout());
  }

  /** The hello a desktop app sends with a pairing code. */
  hello(code: string): HelloMessage {
    return { code, device: { ...this.device }, capabilities: { ...this.capabilities } };
  }

  /**
   * Carries out one step and reports the screen after it. A step the computer cannot carry out
   * (nothing at the point, no field to type into, an unknown key) comes back with `ok: false`
   * and an `error` saying why; the observation and screenshot are filled either way.
   */
  act(action: DesktopAction): Promise<ActionResult> {
    return this.enqueue(async () => {
      // A script may have changed the disk since the last step.
      this.readDisk();
      const error = await this.perform(action);
      await this.writeDisk();
      return this.result(error);
    });
  }

  /**
   * Runs a script in the machine's shell (machine-shell.ts), between steps: the screen after
   * it shows what it changed on the disk (a document it wrote is in Files).
   */
  runScript(script: string, options: { timeoutMs: number }): Promise<ScriptResult> {
    return this.enqueue(async () => {
      const result = await runScript(this.disk.fs, script, options);
      this.readDisk();
      this.noteScreen(this.layout());
      return result;
    });
  }

  /** The disk as JSON, between steps. Windows and dialogs are not part of it. */
  saveDisk(): Promise<DiskSnapshot> {
    return this.enqueue(() => this.disk.snapshot());
  }

  /**
   * How many times the screen changed so far (from steps or scripts), so a viewer asks for a
   * new picture only when it changed.
   */
  get frame(): number {
    return this.screenChanges;
  }

  /**
   * The current screen, as after a `screenshot` step, at once: steps still queued are not waited
   * for. The screen after a step was drawn by that step, so this is a cache hit; only a screen
   * never drawn before is encoded here, blocking for the encode.
   */
  observe(): ActionResult {
    const layout = this.layout();
    this.noteScreen(layout);
    return { ok: true, observation: this.observation(layout), screenshot: this.renderer.renderSync(layout.drawing) };
  }

  /** The current observation without a screenshot; cheap, for checks and the scripted model. */
  inspect(): Observation {
    return this.observation(this.layout());
  }

  /** The centre of the visible element with this label (as a vision model would find it), if any. */
  locate(label: string): Point | undefined {
    const found = this.inspect().visible_labels?.find((entry) => entry.label === label);
    return found ? centerOf(found.bounds) : undefined;
  }

  /** What the steps did in the world so far: mails sent, purchases, files deleted. */
  effects(): SimulatorEffect[] {
    return structuredClone(this.state.effects);
  }

  /** A copy of the whole state, for tests and evals. */
  snapshot(): ComputerState {
    return structuredClone(this.state);
  }

  /** What rendering cost so far. */
  renderStats(): RenderStats {
    return this.renderer.renderStats();
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async result(error: Outcome): Promise<ActionResult> {
    const layout = this.layout();
    this.noteScreen(layout);
    const screenshot = await this.renderer.render(layout.drawing);
    const result: ActionResult = { ok: error === null, observation: this.observation(layout), screenshot };
    if (error !== null) result.error = error;
    return result;
  }

  private layout(): ScreenLayout {
    return layoutScreen(this.state, this.screen);
  }

  /** Counts a screen change when this layout draws something else than the last one counted. */
  private noteScreen(layout: ScreenLayout): void {
    const key = JSON.stringify(layout.drawing);
    if (key === this.screenKey) return;
    this.screenKey = key;
    this.screenChanges++;
  }

  /** Files and the Trash show what the disk holds now; a selection of an item gone is dropped. */
  private readDisk(): void {
    const { documents, trash, firewallOff, installed } = this.disk.view();
    this.state.settings.firewall = !firewallOff;
    this.state.store.installed = installed;
    const files = this.state.files;
    files.items = documents;
    files.trash = trash;
    if (files.selected !== null && !documents.includes(files.selected)) {
      if (this.state.focus === `files.item:${files.selected}`) this.setFocus(null);
      files.selected = null;
    }
  }

  /** Writes what the last step changed to the disk, in order, then reads the apps' view again. */
  private async writeDisk(): Promise<void> {
    for (const work of this.diskWork.splice(0)) {
      switch (work.kind) {
        case 'effect':
          if (work.effect.type === 'mail_sent') await this.disk.writeSentMail(work.effect);
          await this.disk.appendEffect(work.effect);
          break;
        case 'open':
          // Still the document in front: the step did not open another one after it.
          if (this.state.notes.title === work.name) this.state.fields['notes.text'] = await this.disk.readDocument(work.name);
          break;
        case 'save':
          await this.disk.saveDocument(work.name, work.text);
          break;
        case 'trash':
          await this.disk.moveToTrash(work.name);
          break;
        case 'empty-trash':
          await this.disk.emptyTrash();
          break;
        case 'firewall':
          await this.disk.setFirewall(work.on);
          break;
        case 'install':
          await this.disk.install();
          break;
      }
    }
    this.readDisk();
  }

  /** The observation as this system and app version can report it (docs/simulator.md, "What each computer reports"). */
  private observation(layout: ScreenLayout): Observation {
    const { page_addresses, element_info, accessibility } = this.capabilities;
    const windows = layout.windows.map((window) => {
      const copy = { ...window, bounds: { ...window.bounds } };
      if (!page_addresses) delete copy.url;
      return copy;
    });
    return {
      width: this.device.width,
      height: this.device.height,
      windows,
      focused_app: layout.focusedApp,
      focused: element_info ? this.focusedElement(layout) : null,
      elements: element_info ? layout.elements.map(toElementInfo) : null,
      dialog: layout.dialog,
      text: accessibility ? layout.text.join('\n') : null,
      visible_labels: layout.elements
        .filter((element) => element.reachable && element.role !== 'static_text')
        .map((element) => ({ label: element.label, bounds: { ...element.bounds } })),
    };
  }

  private focusedElement(layout: ScreenLayout): ElementInfo | null {
    const id = this.state.spotlight.open && this.os === 'mac' ? 'spotlight.field' : layout.dialog ? this.state.dialog!.focus : this.state.focus;
    const element = id ? layout.elements.find((candidate) => candidate.id === id) : undefined;
    return element ? toElementInfo(element) : null;
  }

  private async perform(action: DesktopAction): Promise<Outcome> {
    const invalid = describeInvalidAction(action);
    if (invalid) return invalid;
    switch (action.type) {
      case 'screenshot':
        return null;
      case 'click':
        return this.click(action.x, action.y, action.button ?? 'left', action.double === true);
      case 'type':
        return this.type(action.text);
      case 'key':
        return this.key(action.keys);
      case 'drag':
        return this.drag(action.from, action.to);
      case 'scroll':
        // Every window's content fits its frame, so there is nothing to scroll; over the screen it still succeeds.
        return this.offScreen(action.x, action.y);
      case 'wait':
        await this.sleep(Math.min(action.ms, MAX_WAIT_MS));
        return null;
    }
  }

  private offScreen(x: number, y: number): Outcome {
    if (x >= 0 && y >= 0 && x < this.device.width && y < this.device.height) return null;
    return `Point (${x}, ${y}) is outside the screen (${this.device.width}x${this.device.height}).`;
  }

  // ---- Pointer ----------------------------------------------------------------------------

  private click(x: number, y: number, button: 'left' | 'right', double: boolean): Outcome {
    const outside = this.offScreen(x, y);
    if (outside) return outside;
    this.dismissOverlaysOutside(x, y);
    const target = this.hit(x, y);
    if (!target) return `Nothing to click at (${x}, ${y}).`;
    const blocked = this.unreachable(target);
    if (blocked) return blocked;
    // A right click only selects or focuses: the simulated apps have no context menus.
    if (button === 'right') {
      if (TEXT_ROLES.has(target.role) && target.id !== 'spotlight.field') this.setFocus(target.id);
      if (target.id.startsWith('files.item:')) this.selectItem(target);
      return null;
    }
    return this.activate(target, double);
  }

  /** Spotlight and Control Center close when something else is clicked; the click still lands. */
  private dismissOverlaysOutside(x: number, y: number): void {
    const { windows, elements } = this.layout();
    const inside = (app: string): boolean => windows.some((window) => window.app === app && contains(window.bounds, x, y));
    // The icon that opened a panel toggles it instead, so the click must reach it with the panel open.
    const onIcon = (id: string): boolean => elements.some((element) => element.id === id && contains(element.bounds, x, y));
    if (this.state.spotlight.open && !inside('Spotlight') && !onIcon('menubar.spotlight')) this.state.spotlight = { open: false, query: '' };
    if (this.state.controlCenter.open && !inside('Control Center') && !onIcon('menubar.control-center')) this.state.controlCenter.open = false;
  }

  private hit(x: number, y: number, except?: string): PlacedElement | undefined {
    return elementAt(this.layout(), x, y, except);
  }

  private unreachable(target: PlacedElement): Outcome {
    if (!target.reachable) return `The dialog "${this.layout().dialog?.title}" is open in ${target.app}: answer it first.`;
    if (!target.enabled) return `"${target.label}" is disabled.`;
    return null;
  }

  private activate(target: PlacedElement, double: boolean): Outcome {
    const [kind, name] = target.id.split(':') as [string, string | undefined];
    switch (kind) {
      case 'dock':
      case 'taskbar':
      case 'spotlight.result':
        this.openApp(name as AppName);
        return null;
      case 'files.item':
        this.selectItem(target);
        if (double) this.openInNotes(name!);
        return null;
    }
    switch (target.id) {
      case 'window.close':
        this.closeFrontWindow();
        return null;
      case 'window.title':
        return null;
      case 'menubar.spotlight':
        this.toggleSpotlight();
        return null;
      case 'menubar.control-center':
        this.state.controlCenter.open = !this.state.controlCenter.open;
        return null;
      case 'cc.wifi':
      case 'cc.bluetooth':
      case 'cc.do-not-disturb': {
        const toggle = CONTROL_CENTER_TOGGLES[target.id];
        this.state.controlCenter[toggle] = !this.state.controlCenter[toggle];
        return null;
      }
      case 'spotlight.field':
        return null;
      case 'browser.address':
        this.setFocus('browser.address');
        // Clicking a browser's address bar selects the address, so typing replaces it.
        this.state.address = { editing: true, selectAll: true, value: this.state.page.url ?? '' };
        return null;
    }
    if (target.role === 'static_text') {
      // Clicking plain text takes the focus away from a field, as it does in a page.
      this.setFocus(null);
      return null;
    }
    if (target.id.startsWith('dialog.')) return this.press(target.id);
    if (TEXT_ROLES.has(target.role)) {
      this.setFocus(target.id);
      return null;
    }
    if (target.role === 'button') {
      this.setFocus(target.id);
      return this.press(target.id);
    }
    if (target.id === 'files.trash') {
      // Clicking the Trash just says what it holds; dropping on it is what deletes.
      const count = this.state.files.trash.length;
      this.setStatus('Files', `Trash: ${count} item${count === 1 ? '' : 's'}.`);
    }
    return null;
  }

  private selectItem(item: PlacedElement): void {
    this.state.files.selected = item.id.slice('files.item:'.length);
    this.setFocus(item.id);
  }

  private drag(from: Point, to: Point): Outcome {
    const outside = this.offScreen(from.x, from.y) ?? this.offScreen(to.x, to.y);
    if (outside) return outside;
    this.dismissOverlaysOutside(from.x, from.y);
    const source = this.hit(from.x, from.y);
    if (!source) return `Nothing to drag at (${from.x}, ${from.y}).`;
    const blocked = this.unreachable(source);
    if (blocked) return blocked;
    if (!source.draggable) return `"${source.label}" cannot be dragged.`;
    this.selectItem(source);
    const item = this.state.files.selected!;
    const target = this.hit(to.x, to.y, source.id);
    if (target?.id === 'files.trash') this.moveToTrash(item);
    // Dropped anywhere else, the item goes back where it was.
    return null;
  }

  // ---- Keyboard ---------------------------------------------------------------------------

  /**
   * Types text. A line break is the Return key, as on a real keyboard (and as the guardrails
   * judge it): it sends from a Message box, navigates from the address bar, signs in from the
   * login fields and starts a new line in Notes. Text after it goes wherever the focus is then.
   */
  private type(text: string): Outcome {
    const lines = text.split(/\r\n|\r|\n/);
    if (lines.length === 1) return this.typeLine(text);
    for (let i = 0; i < lines.length; i++) {
      if (i > 0) {
        const pressed = this.key('enter');
        if (pressed) return pressed;
      }
      if (lines[i] === '') continue;
      const typed = this.typeLine(lines[i]!);
      if (typed) return typed;
    }
    return null;
  }

  private typeLine(text: string): Outcome {
    if (this.os === 'mac' && this.state.spotlight.open) {
      this.state.spotlight.query += singleLine(text);
      return null;
    }
    const front = this.state.windows[0];
    if (!front) return 'Nothing to type into: no window is open.';
    if (this.state.dialog?.app === front) return `Nothing to type into: the dialog "${this.layout().dialog?.title}" is open.`;
    const focused = this.focusedInWindow();
    if (!focused) return 'Nothing to type into: no text field has focus (click one first).';
    if (!TEXT_ROLES.has(focused.role)) return `Nothing to type into: "${focused.label}" is not a text field.`;
    this.insertText(focused, text);
    return null;
  }

  private insertText(field: PlacedElement, text: string): void {
    if (field.role === 'address_bar') {
      const address = this.state.address;
      const typed = singleLine(text);
      this.state.address = { editing: true, selectAll: false, value: address.selectAll ? typed : address.value + typed };
      return;
    }
    const typed = field.role === 'text_area' ? text.replace(/\r\n?/g, '\n') : singleLine(text);
    this.state.fields[field.id] = (this.state.fields[field.id] ?? '') + typed;
  }

  private key(keys: string): Outcome {
    const parsed = parseKeyCombo(keys);
    if ('error' in parsed) return parsed.error;
    const combo: KeyCombo = parsed;

    if (this.os === 'mac' && isCombo(combo, 'space', 'cmd')) {
      this.toggleSpotlight();
      return null;
    }
    if (this.os === 'mac' && this.state.spotlight.open) return this.spotlightKey(combo);
    if (this.state.controlCenter.open) {
      this.state.controlCenter.open = false;
      if (isCombo(combo, 'escape')) return null;
    }

    const front = this.state.windows[0];
    if (!front) return `Nothing receives "${keys}": no window is open.`;
    if (this.state.dialog?.app === front) return this.dialogKey(combo);

    const primary = this.os === 'mac' ? 'cmd' : 'ctrl';
    if (isCombo(combo, 'w', primary) || (this.os === 'mac' ? isCombo(combo, 'q', 'cmd') : isCombo(combo, 'f4', 'alt'))) {
      this.closeFrontWindow();
      return null;
    }
    if (front === 'Browser' && (isCombo(combo, 'l', 'cmd') || isCombo(combo, 'l', 'ctrl'))) {
      this.setFocus('browser.address');
      this.state.address = { editing: true, selectAll: true, value: this.state.page.url ?? '' };
      return null;
    }
    // Cmd+Enter on a Mac and Ctrl+Enter on Windows send a message; both are accepted on both.
    if (isCombo(combo, 'enter', 'cmd') || isCombo(combo, 'enter', 'ctrl')) {
      if (front === 'Mail') return this.sendMail('app');
      if (front === 'Browser' && this.state.page.host === 'mail.example.com') return this.sendMail('web');
      return null;
    }

    if (front === 'Notes' && (isCombo(combo, 's', 'cmd') || isCombo(combo, 's', 'ctrl'))) return this.saveNote();

    const focused = this.focusedInWindow();
    const erase = combo.key === 'backspace' || combo.key === 'delete';
    if (focused && TEXT_ROLES.has(focused.role)) return this.textFieldKey(focused, combo);
    if (erase && front === 'Files' && this.state.files.selected) {
      // Delete or Backspace outside a text field deletes what is selected (Cmd+Backspace on a Mac).
      this.moveToTrash(this.state.files.selected);
      return null;
    }
    if (isCombo(combo, 'tab')) {
      this.focusNext();
      return null;
    }
    if (focused?.role === 'button' && (isCombo(combo, 'enter') || isCombo(combo, 'space'))) {
      const blocked = this.unreachable(focused);
      return blocked ?? this.press(focused.id);
    }
    return null;
  }

  private spotlightKey(combo: KeyCombo): Outcome {
    const spotlight = this.state.spotlight;
    if (isCombo(combo, 'escape')) {
      this.state.spotlight = { open: false, query: '' };
      return null;
    }
    if (isCombo(combo, 'enter')) {
      if (!spotlight.query.trim()) return 'Spotlight has nothing to open: type an app name first.';
      const match = spotlightMatches(spotlight.query)[0];
      if (!match) return `Spotlight found nothing for "${spotlight.query}".`;
      this.openApp(match.name);
      return null;
    }
    if (combo.key === 'backspace' || combo.key === 'delete') {
      spotlight.query = spotlight.query.slice(0, -1);
      return null;
    }
    const character = typedCharacter(combo);
    if (character !== null) spotlight.query += character;
    return null;
  }

  private dialogKey(combo: KeyCombo): Outcome {
    const dialog = this.state.dialog!;
    // Return and Enter press the default button whatever has focus; Space presses the focused one.
    if (isCombo(combo, 'enter')) return this.press('dialog.empty-trash');
    if (isCombo(combo, 'space')) return this.press(dialog.focus);
    if (isCombo(combo, 'escape')) return this.press('dialog.cancel');
    if (isCombo(combo, 'tab') || isCombo(combo, 'tab', 'shift')) {
      dialog.focus = dialog.focus === 'dialog.cancel' ? 'dialog.empty-trash' : 'dialog.cancel';
    }
    return null;
  }

  private textFieldKey(field: PlacedElement, combo: KeyCombo): Outcome {
    if (combo.key === 'backspace' || combo.key === 'delete') {
      if (field.role === 'address_bar') {
        const address = this.state.address;
        this.state.address = { editing: true, selectAll: false, value: address.selectAll ? '' : address.value.slice(0, -1) };
      } else {
        this.state.fields[field.id] = [...(this.state.fields[field.id] ?? '')].slice(0, -1).join('');
      }
      return null;
    }
    if (isCombo(combo, 'enter')) return this.enterIn(field);
    if (isCombo(combo, 'escape') && field.role === 'address_bar') {
      this.setFocus(null);
      return null;
    }
    if (isCombo(combo, 'tab')) {
      this.focusNext();
      return null;
    }
    const character = typedCharacter(combo);
    if (character !== null) this.insertText(field, character);
    return null;
  }

  /** Enter in a field: navigates, sends a message, submits a form, or starts a new line. */
  private enterIn(field: PlacedElement): Outcome {
    switch (field.id) {
      case 'browser.address':
        return this.navigate();
      case 'mail.message':
        return this.sendMail('app');
      case 'page.message':
        return this.sendMail('web');
      case 'page.email':
      case 'page.password':
        return this.press('page.sign-in');
      case 'settings.new-password':
        return this.press('settings.save-password');
    }
    if (field.role === 'text_area') this.insertText(field, '\n');
    return null;
  }

  private focusNext(): void {
    const focusable = this.layout().elements.filter(
      (element) => element.reachable && element.enabled && element.app === this.layout().focusedApp && FOCUSABLE_ROLES.has(element.role) && element.id !== 'window.close',
    );
    if (focusable.length === 0) return;
    const index = focusable.findIndex((element) => element.id === this.state.focus);
    const next = focusable[(index + 1) % focusable.length]!;
    if (next.id === 'browser.address') this.state.address = { editing: true, selectAll: true, value: this.state.page.url ?? '' };
    this.setFocus(next.id);
  }

  private focusedInWindow(): PlacedElement | undefined {
    const id = this.state.focus;
    return id ? this.layout().elements.find((element) => element.id === id) : undefined;
  }

  // ---- What pressing things does ----------------------------------------------------------

  private press(id: string): Outcome {
    const state = this.state;
    switch (id) {
      case 'mail.send':
        return this.sendMail('app');
      case 'page.send':
        return this.sendMail('web');
      case 'page.add-to-cart':
        state.page.cart++;
        this.effect({ type: 'added_to_cart', host: state.page.host! });
        this.setStatus('page', 'Added to cart.', 'success');
        return null;
      case 'page.buy-now':
        this.effect({ type: 'purchased', host: state.page.host!, what: 'Blue T-shirt' });
        this.setStatus('page', 'Order placed: Blue T-shirt, $20.00.', 'success');
        return null;
      case 'page.pay':
        this.effect({ type: 'purchased', host: state.page.host!, what: 'Checkout total $20.00' });
        this.setStatus('page', 'Payment received. Thank you!', 'success');
        return null;
      case 'page.sign-in': {
        const email = state.fields['page.email'] ?? '';
        if (!email || !state.fields['page.password']) {
          this.setStatus('page', 'Enter your email and password.', 'error');
          return null;
        }
        this.effect({ type: 'signed_in', host: state.page.host!, email });
        state.fields['page.password'] = '';
        this.setStatus('page', `Signed in as ${email}.`, 'success');
        return null;
      }
      case 'page.i-agree':
        this.effect({ type: 'terms_accepted', host: state.page.host! });
        this.setStatus('page', 'You accepted the terms.', 'success');
        return null;
      case 'page.change-password':
        this.effect({ type: 'password_change_started', where: state.page.host! });
        this.setStatus('page', 'We sent a link to change your password to alex@example.com.', 'success');
        return null;
      case 'page.delete-account':
        this.effect({ type: 'account_deleted', host: state.page.host! });
        this.setStatus('page', 'Your account was deleted.', 'success');
        return null;
      case 'files.move-to-trash':
        if (!state.files.selected) return '"Move to Trash" is disabled: select an item first.';
        this.moveToTrash(state.files.selected);
        return null;
      case 'files.empty-trash':
        state.dialog = { kind: 'empty-trash', app: 'Files', focus: 'dialog.empty-trash' };
        return null;
      case 'dialog.empty-trash': {
        const items = state.files.trash;
        state.files.trash = [];
        state.dialog = null;
        this.diskWork.push({ kind: 'empty-trash' });
        this.effect({ type: 'trash_emptied', items });
        this.setStatus('Files', 'The Trash is empty.', 'success');
        return null;
      }
      case 'dialog.cancel':
        state.dialog = null;
        return null;
      case 'settings.firewall':
        state.settings.firewall = !state.settings.firewall;
        this.diskWork.push({ kind: 'firewall', on: state.settings.firewall });
        this.effect({ type: 'firewall_changed', on: state.settings.firewall });
        this.setStatus('Settings', state.settings.firewall ? 'The firewall was turned on.' : 'The firewall was turned off.', 'success');
        return null;
      case 'settings.change-password':
        state.settings.changingPassword = true;
        this.effect({ type: 'password_change_started', where: 'Settings' });
        this.setFocus('settings.new-password');
        return null;
      case 'settings.save-password':
        if (!state.fields['settings.new-password']) {
          this.setStatus('Settings', 'Type a new password first.', 'error');
          return null;
        }
        state.fields['settings.new-password'] = '';
        state.settings.changingPassword = false;
        this.effect({ type: 'password_changed', where: 'Settings' });
        this.setStatus('Settings', 'Your password was changed.', 'success');
        this.setFocus(null);
        return null;
      case 'store.install':
        if (state.store.installed) return '"Installed" is disabled.';
        state.store.installed = true;
        this.diskWork.push({ kind: 'install' });
        this.effect({ type: 'installed', app: 'Example Editor' });
        this.setStatus('Store', 'Example Editor was installed.', 'success');
        return null;
      case 'window.close':
        this.closeFrontWindow();
        return null;
    }
    return null;
  }

  private sendMail(via: 'app' | 'web'): Outcome {
    const prefix = via === 'app' ? 'mail' : 'page';
    const scope = via === 'app' ? 'Mail' : 'page';
    const to = (this.state.fields[`${prefix}.to`] ?? '').trim();
    if (!to) {
      this.setStatus(scope, 'Add a recipient before sending.', 'error');
      return null;
    }
    const subject = this.state.fields['mail.subject'] ?? '';
    const message = this.state.fields[`${prefix}.message`] ?? '';
    this.effect({ type: 'mail_sent', via, to, subject: via === 'app' ? subject : '', message });
    for (const field of via === 'app' ? ['mail.to', 'mail.subject', 'mail.message'] : ['page.to', 'page.message']) delete this.state.fields[field];
    this.setStatus(scope, `Message sent to ${to}.`, 'success');
    this.setFocus(via === 'app' ? 'mail.to' : null);
    return null;
  }

  private moveToTrash(item: string): void {
    const files = this.state.files;
    if (!files.items.includes(item)) return;
    files.items = files.items.filter((candidate) => candidate !== item);
    files.trash = [...files.trash, item];
    files.selected = null;
    if (this.state.focus === `files.item:${item}`) this.setFocus(null);
    this.diskWork.push({ kind: 'trash', name: item });
    this.effect({ type: 'moved_to_trash', item });
    this.setStatus('Files', `"${item}" was moved to the Trash.`, 'success');
  }

  private navigate(): Outcome {
    const typed = this.state.address.value;
    if (!typed.trim()) return 'Nothing to open: type an address first.';
    const address = parseAddress(typed);
    if (!address) return `"${typed}" is not a web address.`;
    // A page load starts the page afresh: its fields, status and cart go.
    for (const id of Object.keys(this.state.fields)) if (id.startsWith('page.')) delete this.state.fields[id];
    delete this.state.status.page;
    this.state.page = { url: address.url, host: address.host, cart: 0 };
    this.state.address = { editing: false, selectAll: false, value: '' };
    this.setFocus(null);
    this.effect({ type: 'navigated', url: address.url });
    return null;
  }

  // ---- Windows and focus -----------------------------------------------------------------

  private openApp(app: AppName): void {
    if (!appByName(app)) return;
    const state = this.state;
    const front = state.windows[0];
    if (front && front !== app) this.focusByApp.set(front, state.focus);
    state.spotlight = { open: false, query: '' };
    state.controlCenter.open = false;
    if (state.windows.includes(app)) {
      state.windows = [app, ...state.windows.filter((open) => open !== app)];
      if (front !== app) this.setFocus(this.focusByApp.get(app) ?? null);
      return;
    }
    state.windows = [app, ...state.windows];
    this.setFocus(app === 'Mail' ? 'mail.to' : app === 'Notes' ? 'notes.text' : null);
    this.effect({ type: 'app_opened', app });
  }

  private openInNotes(item: string): void {
    this.openApp('Notes');
    this.state.notes.title = item;
    // The text is read from the disk once the step is over (writeDisk).
    this.state.fields['notes.text'] = '';
    this.diskWork.push({ kind: 'open', name: item });
  }

  /** Cmd+S / Ctrl+S in Notes: the text goes to the open document, or to Documents/Untitled.txt. */
  private saveNote(): Outcome {
    const name = this.state.notes.title ?? UNTITLED;
    this.state.notes.title = name;
    this.diskWork.push({ kind: 'save', name, text: this.state.fields['notes.text'] ?? '' });
    this.effect({ type: 'file_saved', name });
    return null;
  }

  private closeFrontWindow(): void {
    const state = this.state;
    const closed = state.windows[0];
    if (!closed) return;
    state.windows = state.windows.slice(1);
    if (state.dialog?.app === closed) state.dialog = null;
    // A closed window forgets what it showed; opening the app again starts fresh.
    const prefix = { Browser: 'page.', Mail: 'mail.', Files: 'files.', Settings: 'settings.', Store: 'store.', Notes: 'notes.' }[closed];
    for (const id of Object.keys(state.fields)) if (id.startsWith(prefix)) delete state.fields[id];
    delete state.status[closed === 'Browser' ? 'page' : closed];
    if (closed === 'Browser') {
      state.page = { url: null, host: null, cart: 0 };
      state.address = { editing: false, selectAll: false, value: '' };
    }
    if (closed === 'Files') state.files.selected = null;
    if (closed === 'Settings') state.settings.changingPassword = false;
    if (closed === 'Notes') state.notes.title = null;
    this.focusByApp.delete(closed);
    const next = state.windows[0];
    state.focus = next ? (this.focusByApp.get(next) ?? null) : null;
  }

  private toggleSpotlight(): void {
    const open = !this.state.spotlight.open;
    this.state.spotlight = { open, query: '' };
    if (open) this.state.controlCenter.open = false;
  }

  private setFocus(id: string | null): void {
    // Leaving the address bar drops what was typed into it, as browsers restore the address.
    if (id !== 'browser.address') this.state.address = { editing: false, selectAll: false, value: '' };
    this.state.focus = id;
  }

  private setStatus(scope: string, text: string, tone: StatusTone = 'info'): void {
    this.state.status[scope] = { text, tone };
  }

  private effect(effect: SimulatorEffect): void {
    this.state.effects.push(effect);
    this.diskWork.push({ kind: 'effect', effect: structuredClone(effect) });
    // A task that repeats forever must not grow the record without end.
    if (this.state.effects.length > MAX_EFFECTS) this.state.effects.splice(0, this.state.effects.length - MAX_EFFECTS);
  }
}

/** Why a step from the network is not a well-formed `DesktopAction`, or null when it is. */
export function describeInvalidAction(action: unknown): string | null {
  if (typeof action !== 'object' || action === null) return 'An action must be an object.';
  const step = action as Record<string, unknown>;
  const isNumber = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value);
  const isPoint = (value: unknown): boolean =>
    typeof value === 'object' && value !== null && isNumber((value as Point).x) && isNumber((value as Point).y);
  switch (step.type) {
    case 'screenshot':
      return null;
    case 'click':
      if (!isNumber(step.x) || !isNumber(step.y)) return 'A click needs numbers x and y.';
      if (step.button !== undefined && step.button !== 'left' && step.button !== 'right') return 'A click button is left or right.';
      return null;
    case 'type':
      return typeof step.text === 'string' ? null : 'A type step needs text.';
    case 'key':
      return typeof step.keys === 'string' ? null : 'A key step needs keys, such as "enter".';
    case 'drag':
      return isPoint(step.from) && isPoint(step.to) ? null : 'A drag needs points from and to.';
    case 'scroll':
      return isNumber(step.x) && isNumber(step.y) && isNumber(step.dx) && isNumber(step.dy) ? null : 'A scroll needs numbers x, y, dx and dy.';
    case 'wait':
      return isNumber(step.ms) && (step.ms as number) >= 0 ? null : 'A wait needs a number of milliseconds (ms >= 0).';
    default:
      return `Unknown action type "${String(step.type)}".`;
  }
}

/** The centre point of a rectangle, rounded down: where a click on it lands. */
export function centerOf(rect: Rect): Point {
  return { x: Math.floor(rect.x + rect.width / 2), y: Math.floor(rect.y + rect.height / 2) };
}

function toElementInfo(element: PlacedElement): ElementInfo {
  return {
    role: element.role,
    label: element.label,
    category: element.category,
    is_default: element.is_default,
    bounds: { ...element.bounds },
    app: element.app,
  };
}

function singleLine(text: string): string {
  return text.replace(/[\r\n]+/g, '');
}
