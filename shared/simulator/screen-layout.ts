import type { ElementInfo, ElementRole, GuardrailCategory, Rect, WindowInfo } from '../desktop/protocol';
import { elementCategory } from '../guardrails/element-categories';
import { appView } from './app-views';
import {
  ADDRESS_BAR_LABEL,
  APPS,
  MAC_SYSTEM_APPS,
  SPOTLIGHT_FIELD_LABEL,
  WINDOWS_SHELL_APP,
  appByName,
  spotlightMatches,
  systemAppName,
  type AppName,
  type SimulatedOs,
} from './apps.catalog';
import type { ComputerState, StatusTone } from './computer-state';
import type { ContentBlock } from './content-blocks';

/**
 * Places everything the simulated computer shows: windows, system parts, elements with their
 * bounds, the screen text, and the drawing the renderer turns into pixels. A pure function of the
 * state and the screen size; the computer hit-tests against the elements it returns.
 *
 * Conventions a scripted model can rely on (docs/simulator.md):
 * - Every app window fills the same frame inside the work area, so only the front window shows.
 * - Each element's bounds are where a click acts on it; the centre is always inside.
 * - Elements, windows and visible labels are listed topmost first.
 */

export interface SimulatedDevice {
  os: SimulatedOs;
  width: number;
  height: number;
}

/** An element on screen with what the computer needs to act on it. */
export interface PlacedElement extends ElementInfo {
  /** Stable id tying the element to its behaviour (`mail.send`, `dock:Browser`). */
  id: string;
  /** False for a disabled button: visible but refusing clicks. */
  enabled: boolean;
  /** False while a modal dialog covers its window: visible but out of reach. */
  reachable: boolean;
  draggable: boolean;
}

export type DrawOp =
  | { op: 'rect'; x: number; y: number; w: number; h: number; fill?: string; stroke?: string; radius?: number; lineWidth?: number }
  | { op: 'circle'; x: number; y: number; r: number; fill: string }
  | {
      op: 'text';
      x: number;
      y: number;
      text: string;
      size: number;
      color: string;
      bold?: boolean;
      align?: 'left' | 'center' | 'right';
      maxWidth?: number;
    };

export interface ScreenLayout {
  /** Windows topmost first, system parts included; `url` set for the Browser's window. */
  windows: WindowInfo[];
  /** Elements topmost first: the order of hit-testing and of visible labels. */
  elements: PlacedElement[];
  /** The stacked surfaces (panels, bars, dialog, front window) topmost first, for hit-testing. */
  surfaces: Array<{ bounds: Rect; elements: PlacedElement[] }>;
  /** Visible text, topmost first, one entry a line. */
  text: string[];
  /** What to draw, bottom to top. */
  drawing: DrawOp[];
  /** The app that gets keys: Spotlight while open, else the front window's app. */
  focusedApp: string | null;
  dialog: { title: string; app: string } | null;
  /** The front app window's frame, when one is open. */
  frame: Rect | null;
}

export const MENU_BAR_HEIGHT = 24;
export const DOCK_ICON = 52;
export const TASKBAR_HEIGHT = 48;
export const TITLE_BAR_HEIGHT = 32;
export const BROWSER_TOOLBAR_HEIGHT = 44;
const DOCK_GAP = 8;
const DOCK_PADDING = 10;
const DOCK_BOTTOM_MARGIN = 4;
const TASKBAR_BUTTON = { width: 44, height: 40, gap: 4 };
const CONTENT_PADDING = 24;
const FIELD_LABEL_WIDTH = 120;
const LINE_HEIGHT = 20;
/** A text area keeps room for two lines (and its 12px margins) however small the screen. */
const TEXT_AREA_MIN = 2 * LINE_HEIGHT + 24;
/** DejaVu Sans at 14px averages under 8px a character; wrapping by count keeps layout font-free. */
const CHAR_WIDTH = 8;

const COLORS = {
  macDesktop: '#3b6b8f',
  windowsDesktop: '#0f4c81',
  window: '#ffffff',
  titleBar: '#ececec',
  titleText: '#333333',
  text: '#1d1d1f',
  muted: '#6e6e73',
  border: '#c7c7cc',
  field: '#ffffff',
  focus: '#0a84ff',
  button: '#f2f2f7',
  primary: '#0a84ff',
  disabled: '#b0b0b5',
  selected: '#d0e4ff',
  success: '#1f7a33',
  error: '#c62828',
  menuBar: '#f5f5f7',
  dock: '#e5e5ea',
  taskbar: '#202020',
  overlay: '#f9f9fb',
} as const;

const TONE_COLORS: Record<StatusTone, string> = { info: COLORS.text, success: COLORS.success, error: COLORS.error };

const MAC_CLOSE_COLOR = '#ff5f57';

/** The clock never moves: the simulator has no time, so every screen of a state is the same. */
const CLOCK = '9:41';

/** The area app windows may use: below the menu bar and above the Dock, or above the taskbar. */
export function workArea(device: SimulatedDevice): Rect {
  if (device.os === 'mac') {
    const bottom = device.height - (DOCK_ICON + 2 * DOCK_PADDING + DOCK_BOTTOM_MARGIN + 4);
    return { x: 0, y: MENU_BAR_HEIGHT, width: device.width, height: bottom - MENU_BAR_HEIGHT };
  }
  return { x: 0, y: 0, width: device.width, height: device.height - TASKBAR_HEIGHT };
}

/** The frame every app window takes: the work area less a margin. */
export function windowFrame(device: SimulatedDevice): Rect {
  const area = workArea(device);
  const mx = clamp(Math.round(device.width * 0.06), 12, 120);
  const my = clamp(Math.round(area.height * 0.04), 8, 40);
  return { x: area.x + mx, y: area.y + my, width: area.width - 2 * mx, height: area.height - 2 * my };
}

/** Lays out the whole screen for a state. */
export function layoutScreen(state: ComputerState, device: SimulatedDevice): ScreenLayout {
  const builder = new LayoutBuilder(device);
  builder.background();
  const front = state.windows[0] ?? null;
  const frame = front ? windowFrame(device) : null;
  let windowLayer: Layer | null = null;
  let dialogLayer: Layer | null = null;
  if (front && frame) {
    windowLayer = builder.appWindow(front, state, frame);
    if (state.dialog && state.dialog.app === front) {
      dialogLayer = builder.dialog(state, frame, appNameFor(device.os, front));
      for (const element of windowLayer.elements) element.reachable = false;
    }
  }
  const systemLayers = device.os === 'mac' ? builder.macSystem(state, front) : [builder.taskbar(state)];
  // Topmost first: Spotlight and Control Center float over everything, then the menu bar and
  // Dock (or taskbar), then the front window's dialog, then the window itself.
  const overlays = systemLayers.filter((layer) => layer.overlay).reverse();
  const bars = systemLayers.filter((layer) => !layer.overlay);
  const stack = [...overlays, ...bars, ...(dialogLayer ? [dialogLayer] : []), ...(windowLayer ? [windowLayer] : [])];

  const appWindows: WindowInfo[] = state.windows.map((app) => {
    const info: WindowInfo = { app: appNameFor(device.os, app), title: appView(app, state, device.os).title, bounds: frame!, system: false };
    if (app === 'Browser') info.url = state.page.url ?? 'about:blank';
    return info;
  });
  const systemWindows = stack.filter((layer) => layer.window).map((layer) => layer.window!);

  return {
    windows: [...systemWindows, ...appWindows],
    elements: stack.flatMap((layer) => layer.elements),
    surfaces: stack.map((layer) => ({ bounds: layer.bounds, elements: layer.elements })),
    // Text reads from what floats on top to the window's content; the bars' few words come last.
    text: [...overlays, ...(dialogLayer ? [dialogLayer] : []), ...(windowLayer ? [windowLayer] : []), ...bars].flatMap((layer) => layer.text),
    drawing: builder.drawing,
    focusedApp: state.spotlight.open && device.os === 'mac' ? MAC_SYSTEM_APPS.spotlight : front ? appNameFor(device.os, front) : null,
    dialog: dialogLayer ? { title: dialogLayer.title, app: dialogLayer.app } : null,
    frame,
  };
}

function appNameFor(os: SimulatedOs, app: AppName): string {
  return systemAppName(os, appByName(app)!);
}

/** One stacked part of the screen: its window entry (system parts), elements and text. */
interface Layer {
  title: string;
  /** The area it covers: a click there goes no further down, even between its elements. */
  bounds: Rect;
  app: string;
  window: WindowInfo | null;
  overlay: boolean;
  elements: PlacedElement[];
  text: string[];
}

class LayoutBuilder {
  readonly drawing: DrawOp[] = [];

  constructor(private readonly device: SimulatedDevice) {}

  background(): void {
    const { width, height, os } = this.device;
    this.rect({ x: 0, y: 0, width, height }, { fill: os === 'mac' ? COLORS.macDesktop : COLORS.windowsDesktop });
  }

  appWindow(app: AppName, state: ComputerState, frame: Rect): Layer {
    const { os } = this.device;
    const owner = appNameFor(os, app);
    const view = appView(app, state, os);
    const layer: Layer = { title: view.title, bounds: frame, app: owner, window: null, overlay: false, elements: [], text: [view.title] };
    this.rect(frame, { fill: COLORS.window, stroke: COLORS.border, radius: os === 'mac' ? 10 : 0 });
    this.rect({ ...frame, height: TITLE_BAR_HEIGHT }, { fill: COLORS.titleBar, radius: os === 'mac' ? 10 : 0 });
    this.text(view.title, frame.x + frame.width / 2, frame.y + 21, { size: 13, bold: true, color: COLORS.titleText, align: 'center', maxWidth: frame.width - 200 });

    const close: Rect =
      os === 'mac' ? { x: frame.x + 11, y: frame.y + 9, width: 14, height: 14 } : { x: frame.x + frame.width - 46, y: frame.y, width: 46, height: TITLE_BAR_HEIGHT };
    if (os === 'mac') {
      this.drawing.push({ op: 'circle', x: close.x + 7, y: close.y + 7, r: 6, fill: MAC_CLOSE_COLOR });
      this.drawing.push({ op: 'circle', x: close.x + 27, y: close.y + 7, r: 6, fill: '#febc2e' });
      this.drawing.push({ op: 'circle', x: close.x + 47, y: close.y + 7, r: 6, fill: '#28c840' });
    } else {
      this.text('×', close.x + close.width / 2, close.y + 22, { size: 18, color: COLORS.titleText, align: 'center' });
    }
    layer.elements.push(element('window.close', 'button', 'Close', close, owner));
    layer.elements.push(element('window.title', 'static_text', view.title, { ...frame, height: TITLE_BAR_HEIGHT }, owner));

    let top = frame.y + TITLE_BAR_HEIGHT;
    if (app === 'Browser') {
      this.rect({ x: frame.x, y: top, width: frame.width, height: BROWSER_TOOLBAR_HEIGHT }, { fill: COLORS.overlay });
      this.text('‹  ›', frame.x + 40, top + 28, { size: 18, color: COLORS.muted });
      const bar: Rect = { x: frame.x + 110, y: top + 7, width: frame.width - 220, height: 30 };
      const focused = state.focus === 'browser.address';
      const shown = state.address.editing ? state.address.value : (state.page.url ?? '');
      this.rect(bar, { fill: COLORS.field, stroke: focused ? COLORS.focus : COLORS.border, radius: 8, lineWidth: focused ? 2 : 1 });
      if (state.address.editing && state.address.selectAll && shown) {
        this.rect({ x: bar.x + 10, y: bar.y + 6, width: Math.min(bar.width - 20, shown.length * CHAR_WIDTH), height: 18 }, { fill: COLORS.selected });
      }
      this.text(shown || 'Search or enter website name', bar.x + 12, bar.y + 20, {
        size: 14,
        color: shown ? COLORS.text : COLORS.muted,
        maxWidth: bar.width - 24,
      });
      layer.elements.push(element('browser.address', 'address_bar', ADDRESS_BAR_LABEL, bar, owner));
      layer.text.push(`${ADDRESS_BAR_LABEL}: ${shown}`);
      top += BROWSER_TOOLBAR_HEIGHT;
    }

    const content: Rect = {
      x: frame.x + CONTENT_PADDING,
      y: top + 16,
      width: frame.width - 2 * CONTENT_PADDING,
      height: frame.y + frame.height - 16 - (top + 16),
    };
    this.blocks(view.blocks, content, state, owner, layer);
    return layer;
  }

  /** Places content blocks top to bottom; a block that would not fit is left off, as if scrolled out. */
  private blocks(blocks: ContentBlock[], area: Rect, state: ComputerState, owner: string, layer: Layer): void {
    const bottom = area.y + area.height;
    const heights = this.fitHeights(blocks, area);
    let y = area.y;
    for (const [index, block] of blocks.entries()) {
      // A text area that fills the window takes whatever the blocks above left over.
      const height = block.kind === 'field' && block.fill ? Math.max(TEXT_AREA_MIN, bottom - y) : heights[index]!;
      if (y + height > bottom) break;
      this.block(block, { x: area.x, y, width: area.width, height }, state, owner, layer);
      y += height;
    }
  }

  /** Natural block heights, with text areas shrunk (to two lines at least) when a small screen needs the room. */
  private fitHeights(blocks: ContentBlock[], area: Rect): number[] {
    const heights = blocks.map((block) => this.blockHeight(block, area));
    let overflow = heights.reduce((sum, height) => sum + height, 0) - area.height;
    for (const [index, block] of blocks.entries()) {
      if (overflow <= 0) break;
      if (block.kind !== 'field' || block.role !== 'text_area' || block.fill) continue;
      const shrink = Math.min(overflow, heights[index]! - TEXT_AREA_MIN);
      heights[index]! -= shrink;
      overflow -= shrink;
    }
    return heights;
  }

  private blockHeight(block: ContentBlock, area: Rect): number {
    switch (block.kind) {
      case 'heading':
        return 38;
      case 'paragraph':
        return wrap(block.text, area.width).length * LINE_HEIGHT + 8;
      case 'field':
        if (block.role !== 'text_area') return 42;
        return block.fill ? TEXT_AREA_MIN : (block.rows ?? 4) * LINE_HEIGHT + 24;
      case 'buttons':
        return 44;
      case 'tiles':
        return 112;
    }
  }

  private block(block: ContentBlock, box: Rect, state: ComputerState, owner: string, layer: Layer): void {
    switch (block.kind) {
      case 'heading': {
        this.text(block.text, box.x, box.y + 26, { size: 22, bold: true, color: COLORS.text, maxWidth: box.width });
        layer.elements.push(element('text', 'static_text', block.text, { ...box, height: 32 }, owner));
        layer.text.push(block.text);
        return;
      }
      case 'paragraph': {
        const lines = wrap(block.text, box.width);
        lines.forEach((line, i) => this.text(line, box.x, box.y + 15 + i * LINE_HEIGHT, { size: 14, color: TONE_COLORS[block.tone ?? 'info'] }));
        layer.elements.push(element('text', 'static_text', block.text, { ...box, height: lines.length * LINE_HEIGHT }, owner));
        layer.text.push(block.text);
        return;
      }
      case 'field': {
        const boxRect: Rect = { x: box.x + FIELD_LABEL_WIDTH, y: box.y, width: box.width - FIELD_LABEL_WIDTH, height: box.height - 12 };
        const focused = state.focus === block.id;
        const shown = block.role === 'password_field' ? '•'.repeat([...block.value].length) : block.value;
        this.text(block.label, box.x, box.y + 20, { size: 14, color: COLORS.muted, maxWidth: FIELD_LABEL_WIDTH - 12 });
        this.rect(boxRect, { fill: COLORS.field, stroke: focused ? COLORS.focus : COLORS.border, radius: 6, lineWidth: focused ? 2 : 1 });
        const lineCapacity = Math.max(1, Math.floor((boxRect.height - 12) / LINE_HEIGHT));
        const lines = block.role === 'text_area' ? wrap(shown, boxRect.width - 20).slice(-lineCapacity) : [shown];
        lines.forEach((line, i) => this.text(line, boxRect.x + 10, boxRect.y + 20 + i * LINE_HEIGHT, { size: 14, color: COLORS.text, maxWidth: boxRect.width - 20 }));
        layer.elements.push(element(block.id, block.role, block.label, boxRect, owner));
        layer.text.push(`${block.label}: ${shown}`);
        return;
      }
      case 'buttons': {
        let x = box.x;
        for (const button of block.buttons) {
          const width = buttonWidth(button.label);
          const rect: Rect = { x, y: box.y, width, height: 32 };
          this.button(rect, button.label, { primary: button.primary === true, enabled: button.enabled !== false, focused: state.focus === button.id });
          const placed = element(button.id, 'button', button.label, rect, owner, { categoryOverride: button.categoryOverride });
          placed.enabled = button.enabled !== false;
          layer.elements.push(placed);
          layer.text.push(button.label);
          x += width + 12;
        }
        return;
      }
      case 'tiles': {
        const place = (tile: (typeof block.tiles)[number], x: number): void => {
          const rect: Rect = { x, y: box.y, width: 104, height: 96 };
          if (tile.selected) this.rect(rect, { fill: COLORS.selected, radius: 8 });
          const icon = tile.role === 'icon' ? '#8e8e93' : '#5ac8fa';
          this.rect({ x: x + 28, y: box.y + 8, width: 48, height: 48 }, { fill: icon, radius: 6 });
          this.text(tile.label, x + 52, box.y + 74, { size: 13, color: COLORS.text, align: 'center', maxWidth: 100 });
          if (tile.caption) this.text(tile.caption, x + 52, box.y + 91, { size: 11, color: COLORS.muted, align: 'center', maxWidth: 100 });
          const placed = element(tile.id, tile.role, tile.label, rect, owner, { categoryOverride: tile.categoryOverride });
          placed.draggable = tile.draggable === true;
          layer.elements.push(placed);
          layer.text.push(tile.caption ? `${tile.label} (${tile.caption})` : tile.label);
        };
        block.tiles.forEach((tile, i) => place(tile, box.x + i * 120));
        block.trailing.forEach((tile, i) => place(tile, box.x + box.width - 104 - i * 120));
        return;
      }
    }
  }

  dialog(state: ComputerState, frame: Rect, owner: string): Layer {
    const title = 'Empty the Trash?';
    const message = `The ${state.files.trash.length === 1 ? 'item' : 'items'} in the Trash will be deleted immediately. You can't undo this action.`;
    const width = Math.min(440, frame.width - 40);
    const box: Rect = { x: Math.round(frame.x + (frame.width - width) / 2), y: frame.y + TITLE_BAR_HEIGHT + 24, width, height: 176 };
    this.rect({ x: box.x + 3, y: box.y + 4, width: box.width, height: box.height }, { fill: 'rgba(0,0,0,0.18)', radius: 12 });
    this.rect(box, { fill: COLORS.overlay, stroke: COLORS.border, radius: 12 });
    this.text(title, box.x + 24, box.y + 36, { size: 16, bold: true, color: COLORS.text, maxWidth: box.width - 48 });
    wrap(message, box.width - 48).forEach((line, i) => this.text(line, box.x + 24, box.y + 66 + i * LINE_HEIGHT, { size: 13, color: COLORS.text }));
    const focus = state.dialog?.focus;
    const empty: Rect = { x: box.x + box.width - 24 - buttonWidth('Empty Trash'), y: box.y + box.height - 48, width: buttonWidth('Empty Trash'), height: 32 };
    const cancel: Rect = { x: empty.x - 12 - buttonWidth('Cancel'), y: empty.y, width: buttonWidth('Cancel'), height: 32 };
    this.button(cancel, 'Cancel', { primary: false, enabled: true, focused: focus === 'dialog.cancel' });
    this.button(empty, 'Empty Trash', { primary: true, enabled: true, focused: focus === 'dialog.empty-trash' });
    const defaultButton = element('dialog.empty-trash', 'button', 'Empty Trash', empty, owner, { dialog: title });
    defaultButton.is_default = true;
    return {
      title,
      bounds: box,
      app: owner,
      window: null,
      overlay: false,
      elements: [defaultButton, element('dialog.cancel', 'button', 'Cancel', cancel, owner, { dialog: title })],
      text: [title, message, 'Cancel', 'Empty Trash'],
    };
  }

  /** The menu bar, Dock, Control Center and Spotlight of a Mac, bottom to top. */
  macSystem(state: ComputerState, front: AppName | null): Layer[] {
    const { width, height } = this.device;
    const layers: Layer[] = [];

    const menuBar: Rect = { x: 0, y: 0, width, height: MENU_BAR_HEIGHT };
    this.rect(menuBar, { fill: COLORS.menuBar });
    this.drawing.push({ op: 'circle', x: 20, y: 12, r: 6, fill: COLORS.text });
    const frontName = front ? appNameFor('mac', front) : 'Finder';
    this.text(frontName, 40, 17, { size: 13, bold: true, color: COLORS.text });
    const spotlightIcon: Rect = { x: width - 124, y: 0, width: 28, height: MENU_BAR_HEIGHT };
    const controlIcon: Rect = { x: width - 92, y: 0, width: 28, height: MENU_BAR_HEIGHT };
    this.text('⌕', spotlightIcon.x + 14, 18, { size: 16, color: COLORS.text, align: 'center' });
    this.rect({ x: controlIcon.x + 7, y: 6, width: 14, height: 12 }, { stroke: COLORS.text, radius: 3, lineWidth: 1.5 });
    this.text(CLOCK, width - 14, 17, { size: 13, color: COLORS.text, align: 'right' });
    layers.push({
      title: 'Menu Bar',
      bounds: menuBar,
      app: MAC_SYSTEM_APPS.menuBar,
      window: { app: MAC_SYSTEM_APPS.menuBar, title: 'Menu Bar', bounds: menuBar, system: true },
      overlay: false,
      elements: [
        element('menubar.spotlight', 'icon', 'Spotlight', spotlightIcon, MAC_SYSTEM_APPS.menuBar),
        element('menubar.control-center', 'icon', 'Control Center', controlIcon, MAC_SYSTEM_APPS.menuBar),
      ],
      text: [frontName, CLOCK],
    });

    const dockWidth = APPS.length * DOCK_ICON + (APPS.length - 1) * DOCK_GAP + 2 * DOCK_PADDING;
    const dock: Rect = {
      x: Math.round((width - dockWidth) / 2),
      y: height - DOCK_BOTTOM_MARGIN - DOCK_ICON - 2 * DOCK_PADDING,
      width: dockWidth,
      height: DOCK_ICON + 2 * DOCK_PADDING,
    };
    this.rect(dock, { fill: COLORS.dock, stroke: COLORS.border, radius: 16 });
    const dockElements = APPS.map((app, i) => {
      const icon: Rect = { x: dock.x + DOCK_PADDING + i * (DOCK_ICON + DOCK_GAP), y: dock.y + DOCK_PADDING, width: DOCK_ICON, height: DOCK_ICON };
      this.appIcon(icon, app.mac, app.color);
      if (state.windows.includes(app.name)) this.drawing.push({ op: 'circle', x: icon.x + DOCK_ICON / 2, y: dock.y + dock.height - 4, r: 2, fill: COLORS.text });
      return element(`dock:${app.name}`, 'icon', app.mac, icon, MAC_SYSTEM_APPS.dock);
    });
    layers.push({
      title: 'Dock',
      bounds: dock,
      app: MAC_SYSTEM_APPS.dock,
      window: { app: MAC_SYSTEM_APPS.dock, title: 'Dock', bounds: dock, system: true },
      overlay: false,
      elements: dockElements,
      // Dock icons show pictures, not words: nothing for the screen text.
      text: [],
    });

    if (state.controlCenter.open) {
      const panel: Rect = { x: width - 310, y: MENU_BAR_HEIGHT + 4, width: 300, height: 168 };
      this.rect(panel, { fill: COLORS.overlay, stroke: COLORS.border, radius: 14 });
      const toggles: Array<[string, string, boolean]> = [
        ['cc.wifi', 'Wi-Fi', state.controlCenter.wifi],
        ['cc.bluetooth', 'Bluetooth', state.controlCenter.bluetooth],
        ['cc.do-not-disturb', 'Do Not Disturb', state.controlCenter.doNotDisturb],
      ];
      const elements = toggles.map(([id, label, on], i) => {
        const rect: Rect = { x: panel.x + 14, y: panel.y + 14 + i * 50, width: panel.width - 28, height: 42 };
        this.rect(rect, { fill: on ? COLORS.primary : COLORS.button, radius: 10 });
        this.text(label, rect.x + 14, rect.y + 26, { size: 14, bold: true, color: on ? '#ffffff' : COLORS.text });
        this.text(on ? 'On' : 'Off', rect.x + rect.width - 14, rect.y + 26, { size: 13, color: on ? '#ffffff' : COLORS.muted, align: 'right' });
        return element(id, 'button', label, rect, MAC_SYSTEM_APPS.controlCenter);
      });
      layers.push({
        title: 'Control Center',
        bounds: panel,
        app: MAC_SYSTEM_APPS.controlCenter,
        window: { app: MAC_SYSTEM_APPS.controlCenter, title: 'Control Center', bounds: panel, system: true },
        overlay: true,
        elements,
        text: toggles.map(([, label, on]) => `${label}: ${on ? 'On' : 'Off'}`),
      });
    }

    if (state.spotlight.open) layers.push(this.spotlight(state));
    return layers;
  }

  private spotlight(state: ComputerState): Layer {
    const { width, height } = this.device;
    const matches = spotlightMatches(state.spotlight.query).slice(0, 6);
    const w = Math.min(680, width - 80);
    const panel: Rect = { x: Math.round((width - w) / 2), y: Math.round(height * 0.2), width: w, height: 60 + matches.length * 40 + (matches.length ? 8 : 0) };
    this.rect({ x: panel.x + 4, y: panel.y + 6, width: panel.width, height: panel.height }, { fill: 'rgba(0,0,0,0.2)', radius: 14 });
    this.rect(panel, { fill: COLORS.overlay, stroke: COLORS.border, radius: 14 });
    const field: Rect = { x: panel.x + 12, y: panel.y + 10, width: panel.width - 24, height: 40 };
    this.text('⌕', field.x + 14, field.y + 28, { size: 20, color: COLORS.muted, align: 'center' });
    this.text(state.spotlight.query || 'Spotlight Search', field.x + 34, field.y + 28, {
      size: 20,
      color: state.spotlight.query ? COLORS.text : COLORS.muted,
      maxWidth: field.width - 44,
    });
    const elements: PlacedElement[] = [element('spotlight.field', 'text_field', SPOTLIGHT_FIELD_LABEL, field, MAC_SYSTEM_APPS.spotlight)];
    const text = [`${SPOTLIGHT_FIELD_LABEL}: ${state.spotlight.query}`];
    matches.forEach((app, i) => {
      const row: Rect = { x: panel.x + 8, y: panel.y + 60 + i * 40, width: panel.width - 16, height: 36 };
      if (i === 0) this.rect(row, { fill: COLORS.primary, radius: 8 });
      this.appIcon({ x: row.x + 8, y: row.y + 4, width: 28, height: 28 }, app.mac, app.color);
      this.text(app.mac, row.x + 46, row.y + 24, { size: 15, color: i === 0 ? '#ffffff' : COLORS.text });
      this.text('Application', row.x + row.width - 12, row.y + 24, { size: 12, color: i === 0 ? '#ffffff' : COLORS.muted, align: 'right' });
      elements.push(element(`spotlight.result:${app.name}`, 'item', app.mac, row, MAC_SYSTEM_APPS.spotlight));
      text.push(app.mac);
    });
    return {
      title: 'Spotlight',
      bounds: panel,
      app: MAC_SYSTEM_APPS.spotlight,
      window: { app: MAC_SYSTEM_APPS.spotlight, title: 'Spotlight', bounds: panel, system: true },
      overlay: true,
      elements,
      text,
    };
  }

  /** The Windows taskbar: one button per app, centred, owned by explorer.exe. */
  taskbar(state: ComputerState): Layer {
    const { width, height } = this.device;
    const bar: Rect = { x: 0, y: height - TASKBAR_HEIGHT, width, height: TASKBAR_HEIGHT };
    this.rect(bar, { fill: COLORS.taskbar });
    const total = APPS.length * TASKBAR_BUTTON.width + (APPS.length - 1) * TASKBAR_BUTTON.gap;
    const x0 = Math.round((width - total) / 2);
    const elements = APPS.map((app, i) => {
      const button: Rect = { x: x0 + i * (TASKBAR_BUTTON.width + TASKBAR_BUTTON.gap), y: bar.y + 4, width: TASKBAR_BUTTON.width, height: TASKBAR_BUTTON.height };
      this.appIcon({ x: button.x + 8, y: button.y + 6, width: 28, height: 28 }, app.taskbarLabel, app.color);
      if (state.windows.includes(app.name)) {
        this.rect({ x: button.x + 14, y: button.y + button.height - 3, width: 16, height: 3 }, { fill: state.windows[0] === app.name ? '#4cc2ff' : '#9a9a9a', radius: 1 });
      }
      return element(`taskbar:${app.name}`, 'icon', app.taskbarLabel, button, WINDOWS_SHELL_APP);
    });
    this.text(CLOCK, width - 16, bar.y + 29, { size: 12, color: '#ffffff', align: 'right' });
    return {
      title: 'Taskbar',
      bounds: bar,
      app: WINDOWS_SHELL_APP,
      // The taskbar is an explorer.exe window like any other: on Windows nothing is exempt from app rules.
      window: { app: WINDOWS_SHELL_APP, title: 'Taskbar', bounds: bar, system: false },
      overlay: false,
      elements,
      text: [CLOCK],
    };
  }

  private appIcon(rect: Rect, name: string, color: string): void {
    this.rect(rect, { fill: color, radius: Math.round(rect.width * 0.22) });
    this.text(name.slice(0, 1).toUpperCase(), rect.x + rect.width / 2, rect.y + rect.height * 0.68, {
      size: Math.round(rect.height * 0.5),
      bold: true,
      color: '#ffffff',
      align: 'center',
    });
  }

  private button(rect: Rect, label: string, look: { primary: boolean; enabled: boolean; focused: boolean }): void {
    const fill = !look.enabled ? COLORS.button : look.primary ? COLORS.primary : COLORS.button;
    this.rect(rect, { fill, stroke: look.focused ? COLORS.focus : COLORS.border, radius: 7, lineWidth: look.focused ? 2 : 1 });
    const color = !look.enabled ? COLORS.disabled : look.primary ? '#ffffff' : COLORS.text;
    this.text(label, rect.x + rect.width / 2, rect.y + 21, { size: 14, color, align: 'center', maxWidth: rect.width - 12 });
  }

  private rect(r: Rect, style: { fill?: string; stroke?: string; radius?: number; lineWidth?: number }): void {
    this.drawing.push({ op: 'rect', x: r.x, y: r.y, w: r.width, h: r.height, ...style });
  }

  private text(
    text: string,
    x: number,
    y: number,
    style: { size: number; color: string; bold?: boolean; align?: 'left' | 'center' | 'right'; maxWidth?: number },
  ): void {
    if (text) this.drawing.push({ op: 'text', x, y, text, ...style });
  }
}

/**
 * An element as placed, its category from the element classifier (the one the Linux app uses),
 * judged from its role, label and dialog, unless the view overrules it (ButtonSpec.categoryOverride).
 */
function element(
  id: string,
  role: ElementRole,
  label: string,
  bounds: Rect,
  app: string,
  options: { dialog?: string; categoryOverride?: GuardrailCategory | null } = {},
): PlacedElement {
  const category = options.categoryOverride !== undefined ? options.categoryOverride : elementCategory({ role, label, dialog: options.dialog });
  return { id, role, label, category, is_default: false, bounds, app, enabled: true, reachable: true, draggable: false };
}

/** Button width from its label, so that layout does not depend on the fonts installed. */
export function buttonWidth(label: string): number {
  return Math.max(72, label.length * CHAR_WIDTH + 32);
}

/** Breaks text into lines that fit `width` at the body font, keeping the author's line breaks. */
export function wrap(text: string, width: number): string[] {
  const perLine = Math.max(8, Math.floor(width / CHAR_WIDTH));
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      let rest = word;
      // A word longer than a line is cut, as a text box breaks a long address.
      while (rest.length > perLine) {
        if (line) lines.push(line);
        lines.push(rest.slice(0, perLine));
        rest = rest.slice(perLine);
        line = '';
      }
      const candidate = line ? `${line} ${rest}` : rest;
      if (candidate.length > perLine) {
        lines.push(line);
        line = rest;
      } else {
        line = candidate;
      }
    }
    lines.push(line);
  }
  return lines;
}

/**
 * The element a click at (x, y) lands on: the topmost surface under the point decides, so a
 * click on the empty part of a panel or dialog does not fall through to the window below.
 */
export function elementAt(layout: ScreenLayout, x: number, y: number, except?: string): PlacedElement | undefined {
  for (const surface of layout.surfaces) {
    const hit = surface.elements.find((element) => element.id !== except && contains(element.bounds, x, y));
    if (hit) return hit;
    if (contains(surface.bounds, x, y)) return undefined;
  }
  return undefined;
}

/** True when the point lies inside the rectangle (right and bottom edges excluded). */
export function contains(rect: Rect, x: number, y: number): boolean {
  return x >= rect.x && y >= rect.y && x < rect.x + rect.width && y < rect.y + rect.height;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
