/**
 * Types for the parts of the `x11` package (a pure-JavaScript X11 protocol client, which ships no
 * types) that this package uses. Callback style as the package has it; x11-connection.ts wraps
 * the calls in promises.
 */
declare module 'x11' {
  type Callback<T> = (error: Error | null, result: T) => unknown;

  export interface XScreen {
    root: number;
    root_depth: number;
    root_visual: number;
    pixel_width: number;
    pixel_height: number;
    white_pixel: number;
    black_pixel: number;
  }

  export interface XDisplay {
    client: XClient;
    screen: XScreen[];
    min_keycode: number;
    max_keycode: number;
    byte_order: number;
    image_byte_order: number;
    isLocalSocket?: boolean;
  }

  export interface XProperty {
    type: number;
    format: number;
    bytesAfter: number;
    data: Buffer;
  }

  export interface XGeometry {
    depth: number;
    windowid: number;
    xPos: number;
    yPos: number;
    width: number;
    height: number;
    borderWidth: number;
  }

  export interface XWindowAttributes {
    mapState: number;
    overrideRedirect: number | boolean;
    klass: number;
  }

  export interface XTranslated {
    sameScreen: boolean;
    child: number;
    destX: number;
    destY: number;
  }

  export interface XImage {
    depth: number;
    visualId: number;
    data: Buffer;
  }

  /** A core event; input events carry `keycode` (the button for a button event), positions and `buttons` (the modifier state). */
  export interface XEvent {
    name: string;
    type: number;
    wid?: number;
    keycode?: number;
    x?: number;
    y?: number;
    rootx?: number;
    rooty?: number;
    buttons?: number;
    /** Expose, ConfigureNotify: the area. */
    width?: number;
    height?: number;
    /** Expose: how many more Expose events follow. */
    count?: number;
    /** MappingNotify: 0 modifier, 1 keyboard, 2 pointer. */
    request?: number;
  }

  export interface XTestExtension {
    KeyPress: number;
    KeyRelease: number;
    ButtonPress: number;
    ButtonRelease: number;
    MotionNotify: number;
    FakeInput(type: number, detail: number, time: number, window: number, x: number, y: number): void;
  }

  export interface XShmSegment {
    buffer: Buffer;
    size: number;
    getImage(drawable: number, x: number, y: number, width: number, height: number, planeMask: number, format: number | null, offset: number, cb: Callback<{ depth: number; visual: number; size: number }>): void;
    detach(cb?: () => void): void;
  }

  export interface XShmExtension {
    usable(cb: Callback<boolean>): void;
    createSegment(size: number, cb: Callback<XShmSegment>): void;
  }

  export interface XClient {
    atoms: Record<string, number>;
    AllocID(): number;
    InternAtom(onlyIfExists: boolean, name: string, cb: Callback<number>): void;
    GetAtomName(atom: number, cb: Callback<string>): void;
    GetProperty(del: number, window: number, name: number, type: number, longOffset: number, longLength: number, cb: Callback<XProperty>): void;
    ChangeProperty(mode: number, window: number, name: number, type: number, format: number, data: Buffer | string | number[]): void;
    GetGeometry(drawable: number, cb: Callback<XGeometry>): void;
    GetWindowAttributes(window: number, cb: Callback<XWindowAttributes>): void;
    TranslateCoordinates(src: number, dst: number, x: number, y: number, cb: Callback<XTranslated>): void;
    GetImage(format: number, drawable: number, x: number, y: number, width: number, height: number, planeMask: number, cb: Callback<XImage>): void;
    GetKeyboardMapping(first: number, count: number, cb: Callback<number[][]>): void;
    ChangeKeyboardMapping(first: number, keysymsPerKeycode: number, keysyms: number[], cb?: (error: Error | null) => unknown): void;
    CreateWindow(window: number, parent: number, x: number, y: number, width: number, height: number, borderWidth?: number, depth?: number, klass?: number, visual?: number, values?: Record<string, unknown>): void;
    MapWindow(window: number): void;
    UnmapWindow(window: number): void;
    DestroyWindow(window: number): void;
    ConfigureWindow(window: number, values: Record<string, number>): void;
    ChangeWindowAttributes(window: number, values: Record<string, unknown>): void;
    SetInputFocus(window: number, revertTo: number): void;
    ClearArea(window: number, x: number, y: number, width: number, height: number, exposures: boolean): void;
    CreateGC(gc: number, drawable: number, values: Record<string, number>): void;
    FreeGC(gc: number): void;
    /** format 2 is ZPixmap. */
    PutImage(format: number, drawable: number, gc: number, width: number, height: number, x: number, y: number, leftPad: number, depth: number, data: Buffer): void;
    /** `event` is the event's 32 bytes on the wire. */
    SendEvent(destination: number, propagate: number, eventMask: number, event: Buffer): void;
    GetInputFocus(cb: Callback<{ focus: number; revertTo: number }>): void;
    require(name: 'xtest', cb: Callback<XTestExtension>): void;
    require(name: 'shm', cb: Callback<XShmExtension>): void;
    sync(): Promise<void>;
    close(cb?: () => void): void;
    terminate(): void;
    on(event: 'error', listener: (error: Error) => void): this;
    on(event: 'event', listener: (event: XEvent) => void): this;
    removeAllListeners(event?: string): this;
  }

  export function createClient(options: { display?: string; shm?: false | 'off' }, cb: Callback<XDisplay>): XClient;

  export const eventMask: Record<string, number>;

  export const keySyms: Record<string, { code: number; description?: string }>;
}

/** The `x11` package's table of the protocol's predefined atoms (name → number). */
declare module 'x11/lib/stdatoms' {
  const atoms: Record<string, number>;
  export = atoms;
}
