import { Emitter } from '@socket.io/redis-emitter';
import type { Redis } from '../redis';
import { DesktopEvents, type ShowMessage } from './protocol';

export const DESKTOP_NAMESPACE = '/desktop';

/** The socket.io room of a session: every connection of its computer joins it. */
export const sessionRoom = (code: string) => `session:${code}`;

/** The Redis key prefix of socket.io's adapter and emitter; both must agree. */
export const socketIoKey = (prefix: string) => `${prefix}:socket.io`;

/**
 * How any process (a worker, or a web process that does not hold the socket) reaches a
 * computer: socket.io's Redis emitter publishes, and the web process holding the connection
 * delivers. Nothing here holds a socket.
 */
export class ComputerLink {
  private readonly desktop;

  constructor(redis: Redis, prefix: string) {
    // The emitter fires and forgets its PUBLISH; a failed one (Redis down, or closing) must not
    // become an unhandled rejection, which would end the process. A lost action is sent again
    // when the computer next says hello (`DesktopInbox.welcomed`) and by the reconcile sweep
    // (after Redis comes back, and once unanswered for a while); one never answered fails its
    // task through the sweep's act timeout.
    const publisher = { publish: (channel: string, message: string | Buffer) => redis.publish(channel, message).catch(() => 0) };
    this.desktop = new Emitter(publisher, { key: socketIoKey(prefix) }).of(DESKTOP_NAMESPACE);
  }

  /**
   * Sends an event to the session's computer (all its connections). What is published goes
   * through Redis as it is, so it holds the protocol's message and nothing else: ids and the
   * act, never a task's state.
   */
  send(code: string, event: string, payload: unknown): void {
    this.desktop.to(sessionRoom(code)).emit(event, payload);
  }

  show(code: string, message: ShowMessage): void {
    this.send(code, DesktopEvents.show, message);
  }

  /** Tells the app the team let go of it (it forgets the code), then closes its connections. */
  release(code: string, reason: string): void {
    this.send(code, DesktopEvents.released, { reason });
    // Give the app a moment to read the message before the connection drops.
    setTimeout(() => this.desktop.in(sessionRoom(code)).disconnectSockets(true), 200).unref();
  }
}
