import type { Canvas } from '@napi-rs/canvas';
import { eventMask, type XEvent, type XProperty } from 'x11';
import { DRAWN_ELEMENTS_PROPERTY } from '../../shared/desktop/computer';
import type { ElementRole, Point, Rect } from '../../shared/desktop/protocol';
import type { DrawnElement } from './drawn-elements';
import { typedKey, type TypedKey } from './typed-keys';
import { X11Connection } from './x11-connection';

/** A control a drawn window shows: a hit area with what the drawn-elements property publishes of it. */
export interface DrawnControl {
  /** The owner's name for it; a press reports it. */
  id: string;
  role: ElementRole;
  label: string;
  /** Relative to the window. */
  bounds: Rect;
  is_default?: boolean;
}

export interface DrawnWindowOptions {
  /** The X display (`:0`); `$DISPLAY` by default. */
  display?: string;
  /** WM_CLASS: the instance and the class (the window list's `app` is the class in lower case). */
  wmClass: { instance: string; className: string };
  title: string;
  /** Where the window goes and its first size, given the screen's size. */
  place: (screen: { width: number; height: number }) => Rect;
  /** `normal` (kept above the others with `above`) or `dock` (a panel at an edge). */
  type: 'normal' | 'dock';
  above?: boolean;
  /** Space kept free at a screen edge for a dock (_NET_WM_STRUT_PARTIAL), given the window's place. */
  strut?: (bounds: Rect, screen: { width: number; height: number }) => { edge: 'left' | 'bottom'; size: number; start: number; end: number };
  /** A control was clicked (pressed and released on it with the left button). */
  onPress?: (id: string) => void;
  /** A key was typed while the window had the keyboard focus. */
  onKey?: (key: TypedKey) => void;
}

const Z_PIXMAP = 2;
const WINDOW_CLASS_INPUT_OUTPUT = 1;
/** Each PutImage at most this many bytes, under the core protocol's request size whatever the server. */
const BAND_BYTES = 200_000;
const MAP_WAIT_MS = 3000;
const RESIZE_WAIT_MS = 1000;
const WM_HINTS_INPUT = 1;
const WM_HINTS_STATE = 2;
const NORMAL_STATE = 1;
const SIZE_HINTS_US_POSITION = 1;
const SIZE_HINTS_P_POSITION = 4;
const SIZE_HINTS_P_SIZE = 8;
const MOTIF_HINTS_DECORATIONS = 2;
const ALL_DESKTOPS = 0xffffffff;
/** _NET_ACTIVE_WINDOW's source indication for a pager: the window manager obeys it at once. */
const SOURCE_PAGER = 2;
const REVERT_TO_PARENT = 2;

/**
 * A top-level X window drawn by this process, on a connection of its own: its content is a canvas
 * (@napi-rs/canvas) put with PutImage and put again on Expose, its controls are hit areas (a left
 * press and release on one is a press), and a person's typing reaches `onKey`. Every draw
 * publishes the controls in DRAWN_ELEMENTS_PROPERTY so that the Linux computer can report them.
 *
 * It never takes the keyboard focus by appearing or redrawing: WM_HINTS says it takes no input
 * (so a click on a button does not focus it either) and _NET_WM_USER_TIME is 0 when it is mapped.
 * Only a press on a text field takes the keyboard, and `releaseKeyboard` gives it back to the
 * window that was active before.
 */
export class DrawnWindow {
  readonly id: number;
  private readonly gc: number;
  /** The size of the last draw. */
  private size: { width: number; height: number };
  /** The size the server last reported (ConfigureNotify). */
  private actualSize: { width: number; height: number };
  private sizeWaiters: Array<{ size: { width: number; height: number }; resolve: () => void }> = [];
  private image: Buffer | null = null;
  private controls: DrawnControl[] = [];
  private pressed: string | null = null;
  private keymap: Promise<number[][]>;
  /** The person's clicks and keys, handled one after another in the order they came. */
  private inputs: Promise<void> = Promise.resolve();
  private drawing: Promise<void> = Promise.resolve();
  private mappedNow = false;
  private wantMapped = false;
  private mapWaiters: Array<() => void> = [];
  /** The window that was active before the person clicked a text field here, to give the keyboard back to. */
  private keyboardFrom: Promise<number | null> | null = null;
  /** Counts the presses on text fields, so that giving the keyboard back stops when the person takes it again. */
  private keyboardTurn = 0;
  /** The window's top-left corner on the screen, read after each draw, map and move. */
  private screenOrigin: Point | null = null;
  /** _NET_ACTIVE_WINDOW, interned at creation so that a click can read it without waiting. */
  private activeWindowAtom = 0;
  private closed = false;

  private constructor(
    readonly connection: X11Connection,
    private readonly options: DrawnWindowOptions,
    private readonly bounds: Rect,
  ) {
    const { client } = connection;
    this.id = client.AllocID();
    this.gc = client.AllocID();
    this.size = { width: bounds.width, height: bounds.height };
    this.actualSize = { ...this.size };
    this.keymap = this.readKeymap();
  }

  /** Opens a connection to the display and creates the window, unmapped. */
  static async open(options: DrawnWindowOptions): Promise<DrawnWindow> {
    const connection = await X11Connection.open(options.display ?? process.env.DISPLAY);
    try {
      const bounds = options.place({ width: connection.width, height: connection.height });
      const window = new DrawnWindow(connection, options, bounds);
      await window.create();
      return window;
    } catch (error) {
      await connection.close();
      throw error;
    }
  }

  /** Whether the window is on screen (the server has mapped it). */
  get mapped(): boolean {
    return this.mappedNow;
  }

  /**
   * Shows `canvas` (the window takes its size) with these controls, and publishes them. Draws
   * run one after another; the promise resolves once the server has the new picture.
   */
  draw(canvas: Canvas, controls: DrawnControl[]): Promise<void> {
    const image = toXPixels(canvas, this.connection.display.image_byte_order === 1);
    const size = { width: canvas.width, height: canvas.height };
    const run = this.drawing.then(async () => {
      if (this.closed) return;
      if (size.width !== this.size.width || size.height !== this.size.height) {
        this.size = size;
        await this.resize(size);
      }
      this.image = image;
      this.controls = controls.map((control) => ({ ...control, bounds: { ...control.bounds } }));
      this.putImage();
      await this.publishControls();
      await this.connection.sync();
      if (this.mappedNow) await this.readOrigin();
    });
    this.drawing = run.catch(() => undefined);
    return run;
  }

  /** Maps the window (without taking the focus) and waits until it is on screen. */
  async show(): Promise<void> {
    if (this.closed) return;
    this.wantMapped = true;
    if (this.mappedNow) return;
    const { client } = this.connection;
    // A window manager reads these when the window is mapped, and may drop some when it is
    // withdrawn: set them before every map, with the place, which it may have changed.
    await this.setStateProperties();
    client.ConfigureWindow(this.id, { x: this.bounds.x, y: this.bounds.y, width: this.size.width, height: this.size.height });
    const mapped = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, MAP_WAIT_MS);
      this.mapWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    client.MapWindow(this.id);
    await this.connection.sync();
    await mapped;
    await this.readOrigin();
  }

  /** Unmaps the window. */
  async hide(): Promise<void> {
    if (this.closed) return;
    this.wantMapped = false;
    await this.releaseKeyboard();
    this.connection.client.UnmapWindow(this.id);
    await this.connection.sync();
  }

  /** Whether `show` was called last (the window is on screen or about to be). */
  get shown(): boolean {
    return this.wantMapped;
  }

  /** The window's top-left corner on the screen, as last read (after a draw, a map or a move); null before it is shown. */
  get origin(): Point | null {
    return this.screenOrigin && { ...this.screenOrigin };
  }

  /** The controls of the last draw with their bounds on the screen; [] while the window is not on screen. */
  screenControls(): DrawnControl[] {
    const origin = this.screenOrigin;
    if (!this.mappedNow || !origin) return [];
    return this.controls.map((control) => ({ ...control, bounds: { ...control.bounds, x: control.bounds.x + origin.x, y: control.bounds.y + origin.y } }));
  }

  /**
   * Gives the keyboard back to the window that was active before the person clicked a text field
   * here, if this window still has it. A press on a text field takes it (see `handle`).
   */
  async releaseKeyboard(): Promise<void> {
    const from = this.keyboardFrom;
    this.keyboardFrom = null;
    if (this.closed || !from) return;
    const turn = this.keyboardTurn;
    const previous = await from.catch(() => null);
    const focus = await this.connection.request<{ focus: number }>((callback) => this.connection.client.GetInputFocus(callback)).catch(() => null);
    // The person pressed a text field again meanwhile: the keyboard stays.
    if (turn !== this.keyboardTurn || focus?.focus !== this.id || !previous || previous === this.id) return;
    // Set here, since the window manager's own focus request would carry an older time than this
    // window's and be ignored; the window manager is told too, to mark the window active.
    this.connection.client.SetInputFocus(previous, REVERT_TO_PARENT);
    await this.activate(previous);
  }

  /** Destroys the window and closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.drawing;
    await this.releaseKeyboard().catch(() => undefined);
    this.closed = true;
    for (const resolve of this.mapWaiters.splice(0)) resolve();
    try {
      const { client } = this.connection;
      client.FreeGC(this.gc);
      client.DestroyWindow(this.id);
      await this.connection.sync();
    } catch {
      // The display is gone already: so is the window.
    }
    await this.connection.close();
  }

  private async create(): Promise<void> {
    const { client, root, display } = this.connection;
    const { x, y, width, height } = this.bounds;
    client.CreateWindow(this.id, root, x, y, width, height, 0, 0, WINDOW_CLASS_INPUT_OUTPUT, 0, {
      backgroundPixel: display.screen[0].white_pixel,
      eventMask: eventMask.Exposure | eventMask.ButtonPress | eventMask.ButtonRelease | eventMask.KeyPress | eventMask.StructureNotify,
    });
    client.CreateGC(this.gc, this.id, {});
    const { options } = this;
    const atom = (name: string): Promise<number> => this.connection.atom(name);
    const [utf8, cardinal, atomType, motif] = await Promise.all([atom('UTF8_STRING'), atom('CARDINAL'), atom('ATOM'), atom('_MOTIF_WM_HINTS')]);
    this.activeWindowAtom = await atom('_NET_ACTIVE_WINDOW');
    const set = async (name: string, type: number, format: 8 | 32, data: Buffer | number[]): Promise<void> => {
      client.ChangeProperty(0, this.id, await atom(name), type, format, data);
    };
    await set('WM_CLASS', await atom('STRING'), 8, Buffer.from(`${options.wmClass.instance}\0${options.wmClass.className}\0`, 'latin1'));
    await set('WM_NAME', await atom('STRING'), 8, Buffer.from(options.title, 'latin1'));
    await set('_NET_WM_NAME', utf8, 8, Buffer.from(options.title, 'utf8'));
    await set('_NET_WM_PID', cardinal, 32, [process.pid]);
    // Takes no input: the window manager never gives it the keyboard, not even on a click.
    await set('WM_HINTS', await atom('WM_HINTS'), 32, [WM_HINTS_INPUT | WM_HINTS_STATE, 0, NORMAL_STATE, 0, 0, 0, 0, 0, 0]);
    // Placed where it asks: openbox honours a user- or program-given position.
    await set('WM_NORMAL_HINTS', await atom('WM_SIZE_HINTS'), 32, [SIZE_HINTS_US_POSITION | SIZE_HINTS_P_POSITION | SIZE_HINTS_P_SIZE, x, y, width, height, ...new Array(13).fill(0)]);
    await set('WM_PROTOCOLS', atomType, 32, [await atom('WM_DELETE_WINDOW')]);
    await set('_NET_WM_WINDOW_TYPE', atomType, 32, [await atom(options.type === 'dock' ? '_NET_WM_WINDOW_TYPE_DOCK' : '_NET_WM_WINDOW_TYPE_NORMAL')]);
    // No title bar or border: the window draws its own.
    await set('_MOTIF_WM_HINTS', motif, 32, [MOTIF_HINTS_DECORATIONS, 0, 0, 0, 0]);
    if (options.strut) {
      const strut = options.strut(this.bounds, { width: this.connection.width, height: this.connection.height });
      // left, right, top, bottom, then each edge's start and end along it.
      const partial = new Array(12).fill(0);
      if (strut.edge === 'left') [partial[0], partial[4], partial[5]] = [strut.size, strut.start, strut.end];
      else [partial[3], partial[10], partial[11]] = [strut.size, strut.start, strut.end];
      await set('_NET_WM_STRUT_PARTIAL', cardinal, 32, partial);
      await set('_NET_WM_STRUT', cardinal, 32, partial.slice(0, 4));
    }
    await this.setStateProperties();
    client.on('event', (event) => this.handle(event));
    await this.connection.sync();
  }

  /** _NET_WM_STATE, _NET_WM_DESKTOP and a user time of 0 (do not focus me when mapped). */
  private async setStateProperties(): Promise<void> {
    const { client } = this.connection;
    const atom = (name: string): Promise<number> => this.connection.atom(name);
    const states = ['_NET_WM_STATE_STICKY', '_NET_WM_STATE_SKIP_TASKBAR', '_NET_WM_STATE_SKIP_PAGER', ...(this.options.above ? ['_NET_WM_STATE_ABOVE'] : [])];
    client.ChangeProperty(0, this.id, await atom('_NET_WM_STATE'), await atom('ATOM'), 32, await Promise.all(states.map(atom)));
    client.ChangeProperty(0, this.id, await atom('_NET_WM_DESKTOP'), await atom('CARDINAL'), 32, [ALL_DESKTOPS]);
    client.ChangeProperty(0, this.id, await atom('_NET_WM_USER_TIME'), await atom('CARDINAL'), 32, [0]);
  }

  /**
   * Asks for a new size and waits (a second at most) until the window has it: a managed window is
   * resized by the window manager, later, and a picture put before would be cut off, its controls
   * published where the window does not reach yet.
   */
  private async resize(size: { width: number; height: number }): Promise<void> {
    if (this.actualSize.width === size.width && this.actualSize.height === size.height) return;
    const resized = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, RESIZE_WAIT_MS);
      this.sizeWaiters.push({
        size,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
    this.connection.client.ConfigureWindow(this.id, { width: size.width, height: size.height });
    await resized;
    this.sizeWaiters = this.sizeWaiters.filter((waiter) => waiter.size !== size);
  }

  private async readOrigin(): Promise<void> {
    const { client, root } = this.connection;
    const at = await this.connection.request<{ destX: number; destY: number }>((callback) => client.TranslateCoordinates(this.id, root, 0, 0, callback)).catch(() => null);
    if (at) this.screenOrigin = { x: at.destX, y: at.destY };
  }

  /**
   * The person pressed a text field: the keyboard comes here at once, before they start typing
   * (their keys would go to the app they were in otherwise). The active window is read in the
   * same breath, before the focus moves, so that `releaseKeyboard` can give it back.
   */
  private takeKeyboard(): void {
    const { client, root } = this.connection;
    this.keyboardTurn++;
    if (this.keyboardFrom === null) {
      this.keyboardFrom = this.connection
        .request<XProperty>((callback) => client.GetProperty(0, root, this.activeWindowAtom, 0, 0, 1, callback))
        .then((property) => {
          if (property.format !== 32 || property.data.length < 4) return null;
          return (this.connection.display.byte_order === 1 ? property.data.readUInt32BE(0) : property.data.readUInt32LE(0)) || null;
        });
      this.keyboardFrom.catch(() => undefined);
    }
    // Directly, not through the window manager: it gives no focus to a window that takes no
    // input. It sees the focus arrive and makes this window the active one.
    client.SetInputFocus(this.id, REVERT_TO_PARENT);
  }

  /** Asks the window manager to activate `window` (EWMH _NET_ACTIVE_WINDOW, as a pager does). */
  private async activate(window: number): Promise<void> {
    const { client, root } = this.connection;
    const event = Buffer.alloc(32);
    event[0] = 33; // ClientMessage
    event[1] = 32;
    event.writeUInt32LE(window >>> 0, 4);
    event.writeUInt32LE(await this.connection.atom('_NET_ACTIVE_WINDOW'), 8);
    event.writeUInt32LE(SOURCE_PAGER, 12);
    client.SendEvent(root, 0, eventMask.SubstructureRedirect | eventMask.SubstructureNotify, event);
    await this.connection.sync();
  }

  private async publishControls(): Promise<void> {
    const elements: DrawnElement[] = this.controls.map((control) => ({
      role: control.role,
      label: control.label,
      bounds: { ...control.bounds },
      ...(control.is_default ? { is_default: true } : {}),
    }));
    const name = await this.connection.atom(DRAWN_ELEMENTS_PROPERTY);
    this.connection.client.ChangeProperty(0, this.id, name, await this.connection.atom('UTF8_STRING'), 8, Buffer.from(JSON.stringify(elements), 'utf8'));
  }

  /** Puts the whole picture, in bands each small enough for any server. */
  private putImage(): void {
    const image = this.image;
    if (!image || this.closed) return;
    const { width, height } = this.size;
    const depth = this.connection.display.screen[0].root_depth;
    const rowsPerBand = Math.max(1, Math.floor(BAND_BYTES / (width * 4)));
    for (let top = 0; top < height; top += rowsPerBand) {
      const rows = Math.min(rowsPerBand, height - top);
      this.connection.client.PutImage(Z_PIXMAP, this.id, this.gc, width, rows, 0, top, 0, depth, image.subarray(top * width * 4, (top + rows) * width * 4));
    }
  }

  private handle(event: XEvent): void {
    if (this.closed) return;
    switch (event.name) {
      case 'Expose':
        if (event.wid === this.id && event.count === 0) this.putImage();
        return;
      case 'MapNotify':
        if (event.wid !== this.id) return;
        this.mappedNow = true;
        for (const resolve of this.mapWaiters.splice(0)) resolve();
        return;
      case 'UnmapNotify':
        if (event.wid === this.id) this.mappedNow = false;
        return;
      case 'MappingNotify':
        // The keyboard's mapping changed (another client remapped a spare keycode to type a
        // character): key presses after this notice are read with the new mapping.
        if (event.request === 1) this.keymap = this.readKeymap();
        return;
      case 'ConfigureNotify': {
        if (event.wid !== this.id) return;
        const size = { width: event.width ?? 0, height: event.height ?? 0 };
        this.actualSize = size;
        for (const waiter of this.sizeWaiters) if (waiter.size.width === size.width && waiter.size.height === size.height) waiter.resolve();
        if (this.mappedNow) void this.readOrigin();
        return;
      }
      case 'ButtonPress': {
        if (event.wid !== this.id || event.keycode !== 1) return;
        const control = this.controlAt(event.x ?? -1, event.y ?? -1);
        // At once, not in turn: the person's next keys must find the keyboard here.
        if (control?.role === 'text_field') this.takeKeyboard();
        this.inTurn(() => {
          this.pressed = control?.id ?? null;
        });
        return;
      }
      case 'ButtonRelease': {
        if (event.wid !== this.id || event.keycode !== 1) return;
        const { x = -1, y = -1 } = event;
        this.inTurn(() => {
          const pressed = this.pressed;
          this.pressed = null;
          if (pressed !== null && this.controlAt(x, y)?.id === pressed) this.options.onPress?.(pressed);
        });
        return;
      }
      case 'KeyPress': {
        if (event.wid !== this.id || !this.options.onKey) return;
        const keymap = this.keymap;
        const { keycode = 0, buttons = 0 } = event;
        this.inTurn(async () => {
          const key = typedKey(await keymap, this.connection.display.min_keycode, keycode, buttons);
          if (key) this.options.onKey?.(key);
        });
        return;
      }
    }
  }

  /**
   * Runs the handling of an input event after that of the events before it: a key waits for the
   * keyboard mapping, and a click on Send after typing must come after the typed keys.
   */
  private inTurn(work: () => void | Promise<void>): void {
    this.inputs = this.inputs
      .then(async () => {
        if (!this.closed) await work();
      })
      .catch(() => undefined);
  }

  private controlAt(x: number, y: number): DrawnControl | undefined {
    return this.controls.find(({ bounds }) => x >= bounds.x && y >= bounds.y && x < bounds.x + bounds.width && y < bounds.y + bounds.height);
  }

  private readKeymap(): Promise<number[][]> {
    const { min_keycode: min, max_keycode: max } = this.connection.display;
    const read = this.connection.request<number[][]>((callback) => this.connection.client.GetKeyboardMapping(min, max - min + 1, callback));
    read.catch(() => undefined);
    return read;
  }
}

/** A canvas's RGBA pixels as a 24-bit X image, 32 bits a pixel: B G R X on a little-endian server, X R G B on a big-endian one. */
export function toXPixels(canvas: Canvas, bigEndian = false): Buffer {
  const rgba = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  const pixels = Buffer.alloc(rgba.length);
  for (let i = 0; i < rgba.length; i += 4) {
    if (bigEndian) {
      pixels[i + 1] = rgba[i];
      pixels[i + 2] = rgba[i + 1];
      pixels[i + 3] = rgba[i + 2];
    } else {
      pixels[i] = rgba[i + 2];
      pixels[i + 1] = rgba[i + 1];
      pixels[i + 2] = rgba[i];
    }
  }
  return pixels;
}
