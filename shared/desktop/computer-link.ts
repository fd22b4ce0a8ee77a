import type { Redis } from '../redis';
import { socketIoEmitter, socketIoKey, type NamespaceEmitter } from '../socket-io-redis';
import { DesktopEvents, type ShowMessage } from './protocol';

export const DESKTOP_NAMESPACE = '/desktop';

/** The socket.io room of a session: every connection of its computer joins it. */
export const sessionRoom = (code: string) => `session:${code}`;

export { socketIoKey };

/**
 * How any process (a worker, or a web process that does not hold the socket) reaches a
 * computer: socket.io's Redis emitter publishes (on a Redis Cluster, in the sharded adapter's
 * format: shared/socket-io-redis.ts), and the web process holding the connection delivers.
 * Nothing here holds a socket.
 */
export class ComputerLink {
  private readonly desktop: NamespaceEmitter;

  constructor(redis: Redis, prefix: string) {
    // The emitter fires and forgets its PUBLISH, and a failed one (Redis down, or closing) is
    // dropped. A lost action is sent again when the computer next says hello
    // (`DesktopInbox.welcomed`) and by the reconcile sweep (after Redis comes back, after a
    // cluster's failover, and once unanswered for a while); one never answered fails its task
    // through the sweep's act timeout.
    this.desktop = socketIoEmitter(redis, socketIoKey(prefix), DESKTOP_NAMESPACE);
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
