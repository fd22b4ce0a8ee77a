import * as x11 from 'x11';
import type { XClient, XDisplay, XProperty } from 'x11';
import STANDARD_ATOMS from 'x11/lib/stdatoms';

/** The last of the atoms the X protocol predefines (WM_TRANSIENT_FOR). */
const LAST_PREDEFINED_ATOM = 68;

/**
 * One connection to an X server, opened by display name (`:99`), with the few requests the other
 * modules share wrapped as promises: atoms (interned once and remembered), window properties,
 * geometry. Every other module takes one of these; none opens its own.
 */
export class X11Connection {
  readonly client: XClient;
  readonly display: XDisplay;
  readonly displayName: string;
  readonly root: number;
  readonly width: number;
  readonly height: number;
  private readonly atoms = new Map<string, Promise<number>>();
  private readonly atomNames = new Map<number, Promise<string>>();
  private closed = false;
  /** The last connection error the server or the socket gave, for messages. */
  lastError: Error | null = null;

  private constructor(display: XDisplay, displayName: string) {
    this.display = display;
    this.client = display.client;
    this.displayName = displayName;
    const screen = display.screen[0];
    this.root = screen.root;
    this.width = screen.pixel_width;
    this.height = screen.pixel_height;
  }

  /**
   * Opens the display `name` (`:99`, or `$DISPLAY` when omitted). Rejects when the server cannot
   * be reached within `timeoutMs`.
   */
  static open(name: string | undefined = process.env.DISPLAY, timeoutMs = 5000): Promise<X11Connection> {
    if (!name) return Promise.reject(new Error('No X display named (give one, such as ":99", or set DISPLAY).'));
    return new Promise((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => fail(new Error(`The X display ${name} did not answer within ${timeoutMs} ms.`)), timeoutMs);
      const fail = (error: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        try {
          client.terminate();
        } catch {
          // the socket never opened
        }
        reject(error);
      };
      const client = x11.createClient({ display: name }, (error, display) => {
        if (error) return fail(new Error(`Cannot open the X display ${name}: ${error.message}`));
        if (settled) {
          display.client.terminate();
          return;
        }
        settled = true;
        clearTimeout(timer);
        // The library's atom cache is its module's table of predefined atoms itself, into which it
        // writes every atom a client interns: shared by every connection of the process, to any
        // server, where the same name may have another number. Each connection gets its own,
        // holding the protocol's predefined atoms only (1 to 68, the same on every server).
        display.client.atoms = predefinedAtoms();
        const connection = new X11Connection(display, name);
        // Errors of requests sent without a callback land here; keep the process alive and the
        // error at hand instead of an unhandled 'error' event.
        display.client.on('error', (clientError) => {
          connection.lastError = clientError;
        });
        resolve(connection);
      });
      client.on('error', (error) => fail(error instanceof Error ? error : new Error(String(error))));
    });
  }

  /** Calls a callback-style request of the client and resolves with its reply. */
  request<T>(send: (callback: (error: Error | null, result: T) => unknown) => void): Promise<T> {
    return new Promise((resolve, reject) => {
      send((error, result) => {
        if (error) reject(error);
        else resolve(result);
        // Handled: do not re-emit the error on the client.
        return true;
      });
    });
  }

  /** The atom named `name`, interned once per connection. */
  atom(name: string): Promise<number> {
    const predefined = this.client.atoms[name];
    if (predefined !== undefined) return Promise.resolve(predefined);
    let atom = this.atoms.get(name);
    if (!atom) {
      atom = this.request<number>((callback) => this.client.InternAtom(false, name, callback));
      this.atoms.set(name, atom);
    }
    return atom;
  }

  /** The name of `atom`, remembered per connection. */
  atomName(atom: number): Promise<string> {
    let name = this.atomNames.get(atom);
    if (!name) {
      name = this.request<string>((callback) => this.client.GetAtomName(atom, callback));
      this.atomNames.set(atom, name);
    }
    return name;
  }

  /** A window property by name (any type), or null when the window has none or is gone. */
  async property(window: number, name: string, maxLongs = 1 << 16): Promise<XProperty | null> {
    const atom = await this.atom(name);
    try {
      const property = await this.request<XProperty>((callback) => this.client.GetProperty(0, window, atom, 0, 0, maxLongs, callback));
      return property.type === 0 ? null : property;
    } catch {
      // BadWindow: the window went away between listing and reading; it has no property now.
      return null;
    }
  }

  /** A property of format 32 as unsigned numbers (window ids, atoms, cardinals); [] when absent. */
  async cardinals(window: number, name: string): Promise<number[]> {
    const property = await this.property(window, name);
    if (!property || property.format !== 32) return [];
    const read = this.display.byte_order === 1 ? (offset: number) => property.data.readUInt32BE(offset) : (offset: number) => property.data.readUInt32LE(offset);
    const values: number[] = [];
    for (let offset = 0; offset + 4 <= property.data.length; offset += 4) values.push(read(offset));
    return values;
  }

  /** A text property: UTF-8 for UTF8_STRING, Latin-1 for STRING; null when absent. */
  async text(window: number, name: string): Promise<string | null> {
    const property = await this.property(window, name);
    if (!property) return null;
    const utf8 = property.type === (await this.atom('UTF8_STRING'));
    return property.data.toString(utf8 ? 'utf8' : 'latin1');
  }

  /** Waits until the server has processed every request sent so far. */
  async sync(): Promise<void> {
    await this.client.sync();
  }

  /** Closes the connection (after a round trip, so that requests already sent are carried out). */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.client.terminate();
        resolve();
      }, 2000);
      this.client.close(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** The X protocol's predefined atoms (1 to 68), the same on every server. */
function predefinedAtoms(): Record<string, number> {
  return Object.fromEntries(Object.entries(STANDARD_ATOMS).filter(([, id]) => id >= 1 && id <= LAST_PREDEFINED_ATOM));
}
