/**
 * The Linux (X11) desktop app: `LinuxComputer` (the one computer interface the simulated computer
 * serves too) composed of one module per concern: the X connection, the screen, input (XTEST),
 * the window list (EWMH), waiting for a still screen, the accessibility tree (AT-SPI), role
 * mapping and hit-testing; `startLinuxApp` pairs it with the service through the shared protocol
 * client. The person's window is not built yet; docs/linux-desktop.md says what is.
 */
export { startLinuxApp, desktopAppVersion, type LinuxApp, type LinuxAppOptions } from './app';
export { LinuxComputer, invalidAction, MAX_WAIT_MS, type LinuxComputerOptions } from './linux-computer';
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
