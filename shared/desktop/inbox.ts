import type { SessionKind } from '../sessions/sessions.repository';

/** What a connected computer's socket carries once it said hello. */
export interface DesktopSocketData {
  code: string;
  orgId: string;
  /** A person's session or a runner's machine's. */
  kind: SessionKind;
  epoch: number;
}

/**
 * Messages from a computer beyond hello, handled by the domain that owns them (tasks). The
 * gateway routes each of `events` to `receive` and acknowledges with its answer.
 */
export interface DesktopInbox {
  events: readonly string[];
  /** `payload` is unchecked input from the app. */
  receive(session: DesktopSocketData, event: string, payload: unknown): Promise<unknown>;
  /**
   * The computer's hello was accepted (a first connection or a reconnect): `send` gives it what
   * it missed while no connection held it (see docs/desktop-protocol.md, Reconnecting).
   */
  welcomed?(session: DesktopSocketData, send: (event: string, payload: unknown) => void): Promise<void>;
}
