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
