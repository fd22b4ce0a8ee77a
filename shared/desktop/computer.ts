import type { ActionResult, DesktopAction, HelloMessage, ShowMessage } from './protocol';

/**
 * A computer the desktop protocol can drive: the simulated computer (shared/simulator) and the
 * real Linux desktop (desktop/src/linux-computer.ts) both are one. The protocol client
 * (`DesktopAppClient`) needs nothing else of it.
 */
export interface DesktopComputer {
  /** The hello sent with a pairing code: the device (`os`, name, real screen size, app version) and what it can report. */
  hello(code: string): HelloMessage;
  /**
   * Carries out one step and reports the screen after it. A step that cannot be done resolves
   * with `ok: false` and a reason (`error`), the observation and screenshot filled either way;
   * the promise rejects only when the computer itself is gone.
   */
  act(action: DesktopAction): Promise<ActionResult>;
  /** The screen now, without doing anything (`ok: true`). */
  observe(): ActionResult | Promise<ActionResult>;
  /** What the service shows the person (banner, narration, questions, approvals); a computer without a person's window ignores it. */
  show?(message: ShowMessage): void;
}

/**
 * WM_CLASS class (lower case, as the window list reports `app`) of the Deskhand desktop app's own
 * windows: the person's window. The agent can never act on them: the app refuses such a step and
 * the guardrail engine never lets one run (rule `own_window`).
 */
export const DESKHAND_APP = 'deskhand-desktop';

/**
 * WM_CLASS class of the launcher panel a Linux session may run (`deskhand-launcher`): buttons
 * named Browser, Notes, Terminal… that open apps; the scripted model's `open APP` clicks them.
 */
export const LAUNCHER_APP = 'deskhand-launcher';

/**
 * An X window property (UTF8_STRING, JSON) on windows that draw their own controls without a
 * toolkit's accessibility (the launcher, the person's window): an array of
 * `{ role, label, bounds: {x, y, width, height} relative to the window, is_default? }`. The Linux
 * computer reports these as the window's elements.
 */
export const DRAWN_ELEMENTS_PROPERTY = '_DESKHAND_ELEMENTS';
