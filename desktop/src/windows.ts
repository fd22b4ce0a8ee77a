import { DRAWN_ELEMENTS_PROPERTY } from '../../shared/desktop/computer';
import type { Rect, WindowInfo } from '../../shared/desktop/protocol';
import { parseDrawnElements, type DrawnElement } from './drawn-elements';
import type { X11Connection } from './x11-connection';

/** A top-level window as the window manager lists it (EWMH), with what the protocol needs and more. */
export interface X11Window {
  /** The client window's id. */
  id: number;
  /**
   * The app as the protocol names it: WM_CLASS class in lower case (`chromium`, `mousepad`,
   * `xterm`). The class, not the instance: Chromium's instance names its profile folder when it
   * has one of its own (`chromium (/tmp/profile)`), Firefox's is `Navigator`.
   */
  app: string;
  /** WM_CLASS class as the app sets it (`Chromium`, `Mousepad`, `XTerm`). */
  appClass: string;
  /** WM_CLASS instance as the app sets it (`chromium`, `mousepad`, `xterm`). */
  instance: string;
  /** _NET_WM_NAME, else WM_NAME. */
  title: string;
  /** The window with its frame (title bar and borders), in screen pixels. */
  bounds: Rect;
  /** The client area (the app's own window, without the frame), in screen pixels. */
  client: Rect;
  /** A dock, panel or the desktop (_NET_WM_WINDOW_TYPE_DOCK / _DESKTOP). */
  system: boolean;
  /** _NET_WM_PID, when the app sets it. */
  pid: number | null;
  /** A modal dialog: _NET_WM_STATE_MODAL, or a dialog transient for another window. */
  modal: boolean;
  /** The window that has the keyboard focus (_NET_ACTIVE_WINDOW). */
  active: boolean;
  /**
   * The controls a window draws itself and publishes in DRAWN_ELEMENTS_PROPERTY (the person's
   * window, the launcher), bounds relative to the client area; [] for other windows.
   */
  drawn: DrawnElement[];
}

/** The windows on screen and what is in front. */
export interface WindowList {
  /** From the topmost down; minimized and unmapped windows left out. */
  windows: X11Window[];
  /** The app of the active window, or null when none is active. */
  focusedApp: string | null;
  /** The topmost open modal dialog, if any. */
  dialog: { title: string; app: string } | null;
}

const MAP_STATE_VIEWABLE = 2;

/**
 * Reads the window list an EWMH window manager keeps on the root window: _NET_CLIENT_LIST_STACKING
 * (bottom to top), each window's title, WM_CLASS, frame bounds (_NET_FRAME_EXTENTS around the
 * client area placed with TranslateCoordinates), type and state, the controls it draws itself
 * (DRAWN_ELEMENTS_PROPERTY), and _NET_ACTIVE_WINDOW.
 * Requests for all windows go out together, so the list costs a few round trips, not one a window.
 */
export async function listWindows(connection: X11Connection): Promise<WindowList> {
  const [stacking, active] = await Promise.all([connection.cardinals(connection.root, '_NET_CLIENT_LIST_STACKING'), connection.cardinals(connection.root, '_NET_ACTIVE_WINDOW')]);
  const activeId = active[0] ?? 0;
  const atoms = await internAll(connection, ['_NET_WM_WINDOW_TYPE_DOCK', '_NET_WM_WINDOW_TYPE_DESKTOP', '_NET_WM_WINDOW_TYPE_DIALOG', '_NET_WM_STATE_MODAL', '_NET_WM_STATE_HIDDEN']);
  const read = await Promise.all([...stacking].reverse().map((id) => readWindow(connection, id, id === activeId, atoms)));
  const windows = read.filter((window): window is X11Window => window !== null);
  const focused = windows.find((window) => window.active);
  const dialog = windows.find((window) => window.modal);
  return {
    windows,
    focusedApp: focused ? focused.app : null,
    dialog: dialog ? { title: dialog.title, app: dialog.app } : null,
  };
}

/** A window as the protocol reports it. */
export function toWindowInfo(window: X11Window, url?: string | null): WindowInfo {
  const info: WindowInfo = { app: window.app, title: window.title, bounds: { ...window.bounds }, system: window.system };
  if (url !== undefined) info.url = url;
  return info;
}

async function internAll(connection: X11Connection, names: string[]): Promise<Record<string, number>> {
  const values = await Promise.all(names.map((name) => connection.atom(name)));
  return Object.fromEntries(names.map((name, index) => [name, values[index]]));
}

async function readWindow(connection: X11Connection, id: number, active: boolean, atoms: Record<string, number>): Promise<X11Window | null> {
  const { client, root } = connection;
  const [attributes, geometry, origin, netName, wmName, wmClass, extents, types, states, transientFor, pid, drawn] = await Promise.all([
    connection.request<{ mapState: number }>((callback) => client.GetWindowAttributes(id, callback)).catch(() => null),
    connection.request<{ width: number; height: number }>((callback) => client.GetGeometry(id, callback)).catch(() => null),
    connection.request<{ destX: number; destY: number }>((callback) => client.TranslateCoordinates(id, root, 0, 0, callback)).catch(() => null),
    connection.text(id, '_NET_WM_NAME'),
    connection.text(id, 'WM_NAME'),
    connection.property(id, 'WM_CLASS'),
    connection.cardinals(id, '_NET_FRAME_EXTENTS'),
    connection.cardinals(id, '_NET_WM_WINDOW_TYPE'),
    connection.cardinals(id, '_NET_WM_STATE'),
    connection.cardinals(id, 'WM_TRANSIENT_FOR'),
    connection.cardinals(id, '_NET_WM_PID'),
    connection.text(id, DRAWN_ELEMENTS_PROPERTY),
  ]);
  // Gone since the list was read, not mapped, or minimized: not on screen.
  if (!attributes || !geometry || !origin) return null;
  if (attributes.mapState !== MAP_STATE_VIEWABLE || states.includes(atoms._NET_WM_STATE_HIDDEN)) return null;
  const [instance = '', klass = ''] = wmClass ? wmClass.data.toString('latin1').split('\0') : [];
  const [left = 0, right = 0, top = 0, bottom = 0] = extents;
  const dialog = types.includes(atoms._NET_WM_WINDOW_TYPE_DIALOG);
  return {
    id,
    app: (klass || instance).toLowerCase(),
    appClass: klass,
    instance,
    title: netName ?? wmName ?? '',
    bounds: { x: origin.destX - left, y: origin.destY - top, width: geometry.width + left + right, height: geometry.height + top + bottom },
    client: { x: origin.destX, y: origin.destY, width: geometry.width, height: geometry.height },
    system: types.includes(atoms._NET_WM_WINDOW_TYPE_DOCK) || types.includes(atoms._NET_WM_WINDOW_TYPE_DESKTOP),
    pid: pid[0] ?? null,
    modal: states.includes(atoms._NET_WM_STATE_MODAL) || (dialog && (transientFor[0] ?? 0) !== 0),
    active,
    drawn: parseDrawnElements(drawn),
  };
}
