/**
 * The simulated computer of docs/simulator.md and its pieces, for the reference desktop client,
 * the reference runner and the scripted model.
 */
export { SimulatedComputer, MAX_SCREEN, MAX_WAIT_MS, MIN_SCREEN, centerOf, describeInvalidAction, type SimulatedComputerOptions } from './simulated-computer';
export { capabilitiesFor, compareAppVersions, isAppVersion, ELEMENT_INFO_SINCE } from './capabilities';
export {
  ADDRESS_BAR_LABEL,
  APPS,
  MAC_SYSTEM_APPS,
  SIMULATED_OSES,
  SPOTLIGHT_FIELD_LABEL,
  WINDOWS_SHELL_APP,
  appByName,
  launcherFor,
  systemAppName,
  type AppEntry,
  type AppName,
  type SimulatedOs,
} from './apps.catalog';
export { KNOWN_HOSTS, NEWS_INJECTION, parseAddress } from './web-pages.catalog';
export type { ComputerState, SimulatorEffect } from './computer-state';
export { parseKeyCombo, type KeyCombo } from './key-combos';
export { windowFrame, workArea } from './screen-layout';
export type { RenderStats } from './screen-renderer';
export { DesktopClient, type DesktopClientEnd, type DesktopClientOptions, type HelloAccepted, type PersonView } from './desktop-client';
export { MachineDisk, HOME, DOCUMENTS, TRASH, SENT_MAIL, EFFECTS_LOG, type DiskSnapshot } from './machine-disk';
export { runScript, type ScriptResult } from './machine-shell';
export { ReferenceRunner, type ReferenceRunnerOptions, type RunnerEnd } from './runner/reference-runner';
