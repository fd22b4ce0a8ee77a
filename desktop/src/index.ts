/**
 * The Linux (X11) desktop app: `LinuxComputer` (the one computer interface the simulated computer
 * serves too) composed of one module per concern: the X connection, the screen, input (XTEST),
 * the window list (EWMH), waiting for a still screen, the accessibility tree (AT-SPI), role
 * mapping and hit-testing; `startLinuxApp` pairs it with the service through the shared protocol
 * client and shows the person's window (a drawn window of its own, which the agent can never act
 * on). `startLauncher` is the session's launcher panel (`deskhand-launcher`). docs/linux-desktop.md
 * says what each part sees and does.
 */
export { startLinuxApp, desktopAppVersion, type LinuxApp, type LinuxAppOptions } from './app';
export { LinuxComputer, invalidAction, MAX_WAIT_MS, OWN_WINDOW_REFUSAL, OWN_WINDOW_KEYBOARD_REFUSAL, type LinuxComputerOptions } from './linux-computer';
export { PersonWindow, type PersonWindowOptions } from './person-window';
export { startLauncher, parseLauncherApp, DEFAULT_LAUNCHER_APPS, LAUNCHER_HEIGHT, type Launcher, type LauncherApp, type LauncherOptions } from './launcher';
export { DrawnWindow, toXPixels, type DrawnControl, type DrawnWindowOptions } from './drawn-window';
export { parseDrawnElements, type DrawnElement } from './drawn-elements';
export { typedKey, characterOfKeysym, type TypedKey } from './typed-keys';
export { X11Connection } from './x11-connection';
export { ScreenCapture, toRgba, type Frame } from './screen-capture';
export { XInput, InputError, parseCombo, keysymOfCharacter, PIXELS_PER_NOTCH } from './input';
export { listWindows, toWindowInfo, type X11Window, type WindowList } from './windows';
export { waitForStillScreen, sameFrame, STILL_DEFAULTS, type StillOptions, type StillScreen } from './screen-still';
export {
  AccessibilityClient,
  AccessibilityUnavailable,
  toElementInfo,
  type AccessibleElement,
  type AccessibleWindow,
  type AccessibilitySnapshot,
  type ElementStates,
  type SnapshotOptions,
} from './accessibility';
export { protocolRole, isAddressBar, INTERACTIVE_ROLES, BROWSER_APPS, type RoleContext } from './roles';
export { hitTest, matchAccessibleWindows, actionable, type Hit } from './hit-test';
