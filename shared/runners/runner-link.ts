import type { Namespace } from 'socket.io';
import type { Redis } from '../redis';
import { socketIoEmitter, socketIoKey, type NamespaceEmitter } from '../socket-io-redis';
import { RunnerEvents } from './runner-events';

export const RUNNERS_NAMESPACE = '/runners';

export { RunnerEvents } from './runner-events';

/** The socket.io room of a runner: its connection joins it. */
export const runnerRoom = (runnerId: string) => `runner:${runnerId}`;

/** What both socket.io's emitter and a web process's namespace offer: a room to send to or close. */
type RunnerRooms = NamespaceEmitter;

/**
 * How any process reaches a runner's connection: through socket.io's Redis emitter, and the web
 * process that holds it acts. A web process sends through its own `/runners` namespace instead
 * (`attach`): a runner connected there gets the message at once, without the round trip through
 * Redis, and the Redis adapter still passes it on to the other web processes. Nothing here holds
 * a socket.
 */
export class RunnerLink {
  private runners: RunnerRooms;

  constructor(redis: Redis, prefix: string) {
    // A failed PUBLISH (Redis down) must not become an unhandled rejection; a revoked runner
    // whose disconnect was lost is refused at its next heartbeat (`RunnersService.heartbeat`).
    this.runners = socketIoEmitter(redis, socketIoKey(prefix), RUNNERS_NAMESPACE);
  }

  /** In a web process: sends through its `/runners` namespace from now on (the gateway attaches it). */
  attach(namespace: Namespace): void {
    this.runners = namespace;
  }

  /**
   * Sends a command (`runner:command`, docs/runners.md) to the runner, through whichever web
   * process holds its connection; lost when none does (it is sent again at the runner's next hello).
   */
  command(runnerId: string, command: { command_id: string; type: string; machine_id: string | null; args: Record<string, unknown> }): void {
    this.runners.to(runnerRoom(runnerId)).emit(RunnerEvents.command, command);
  }

  /** Closes the runner's connections, on whichever web process holds them. */
  disconnect(runnerId: string): void {
    this.runners.in(runnerRoom(runnerId)).disconnectSockets(true);
  }
}
