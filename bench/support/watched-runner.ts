import type { Socket } from 'socket.io-client';
import { ReferenceRunner, type ReferenceRunnerOptions } from '../../shared/simulator/runner/reference-runner';
import { RunnerProtocolEvents as Events, type CommandDone, type RunnerCommand } from '../../shared/simulator/runner/runner-protocol';

/** Wall-clock milliseconds with a fraction, comparable with PostgreSQL's `now()` on the same host. */
export const wallClockMs = (): number => performance.timeOrigin + performance.now();

/** What the runner saw of one command, in `wallClockMs`. */
export interface CommandTimes {
  commandId: string;
  type: string;
  machineId: string;
  /** The `runner:command` event arrived (before the runner's own handler ran). */
  received: number;
  /** The runner sent its `runner:done`: the command carried out. */
  answered?: number;
  /** The service acknowledged the `runner:done`: it has recorded the answer and told the machine's owner. */
  acknowledged?: number;
  ok?: boolean;
}

/**
 * The reference runner, in the bench's process, with the moments of each command recorded
 * without changing what it does: its `runner:command` events are seen first (socket.io's
 * catch-all listeners run before the named ones), and its `runner:done` emits are wrapped so
 * that the service's acknowledgement is timed. The acknowledgement comes once the gateway's
 * handler has settled the command in PostgreSQL and queued the owner's advance, so it is the
 * moment the service (not only the runner) knows a machine is made or destroyed: a bench waits
 * for it instead of polling the API.
 */
export class WatchedRunner {
  readonly runner: ReferenceRunner;
  readonly commands = new Map<string, CommandTimes>();
  private readonly waiters = new Map<string, (times: CommandTimes) => void>();
  private welcomed!: () => void;
  private refused!: (error: Error) => void;
  private readonly hello = new Promise<void>((resolve, reject) => {
    this.welcomed = resolve;
    this.refused = reject;
  });

  constructor(options: Omit<ReferenceRunnerOptions, 'out'>) {
    this.runner = new ReferenceRunner({ ...options, out: (line) => this.line(line as Record<string, unknown>) });
  }

  /** Connects and resolves once the service accepted the hello. */
  async start(): Promise<void> {
    this.runner.start();
    // The connection is the runner's own (private); the bench only listens beside it.
    const socket = (this.runner as unknown as { socket: Socket }).socket;
    socket.onAny((event: string, payload: RunnerCommand) => {
      if (event !== Events.command || !payload?.command_id) return;
      if (!this.commands.has(payload.command_id)) {
        this.commands.set(payload.command_id, { commandId: payload.command_id, type: payload.type, machineId: payload.machine_id ?? '', received: wallClockMs() });
      }
    });
    const emit = socket.emit.bind(socket) as (event: string, ...args: unknown[]) => Socket;
    (socket as unknown as { emit: typeof emit }).emit = (event, ...args) => {
      const ack = args[args.length - 1];
      const times = event === Events.done ? this.commands.get((args[0] as CommandDone).command_id) : undefined;
      if (times && typeof ack === 'function') {
        times.answered ??= wallClockMs();
        times.ok = (args[0] as CommandDone).ok;
        args[args.length - 1] = (...reply: unknown[]) => {
          times.acknowledged ??= wallClockMs();
          this.waiters.get(key(times.machineId, times.type))?.(times);
          const claimer = times.type === 'machine.make' && !this.claimed.has(times.machineId) ? this.madeWaiters.shift() : undefined;
          if (claimer) {
            this.claimed.add(times.machineId);
            claimer(times);
          }
          (ack as (...reply: unknown[]) => void)(...reply);
        };
      }
      return emit(event, ...args);
    };
    await this.hello;
  }

  private readonly claimed = new Set<string>();
  private readonly madeWaiters: Array<(times: CommandTimes) => void> = [];

  /**
   * The next `machine.make` the service acknowledges that no caller claimed yet, claimed: its
   * moments (with its machine's id). Callers that wait are served in the order they asked.
   */
  nextMade(): Promise<CommandTimes> {
    for (const times of this.commands.values()) {
      if (times.type === 'machine.make' && times.acknowledged !== undefined && !this.claimed.has(times.machineId)) {
        this.claimed.add(times.machineId);
        return Promise.resolve(times);
      }
    }
    return new Promise((resolve) => this.madeWaiters.push(resolve));
  }

  /** Resolves once the service acknowledged the runner's answer to the `type` command about `machineId`. */
  acknowledged(machineId: string, type: RunnerCommand['type']): Promise<CommandTimes> {
    for (const times of this.commands.values()) {
      if (times.machineId === machineId && times.type === type && times.acknowledged !== undefined) return Promise.resolve(times);
    }
    return new Promise((resolve) => {
      this.waiters.set(key(machineId, type), (times) => {
        this.waiters.delete(key(machineId, type));
        resolve(times);
      });
    });
  }

  stop(): Promise<void> {
    return this.runner.stop();
  }

  private line(line: Record<string, unknown>): void {
    if (line.event === 'hello') {
      if (line.ok) this.welcomed();
      else this.refused(new Error(`the runner's hello was refused: ${String(line.code)} ${String(line.message)}`));
    }
    if (line.event === 'command_failed' || line.event === 'done_unacknowledged') process.stderr.write(`runner: ${JSON.stringify(line)}\n`);
  }
}

const key = (machineId: string, type: string) => `${machineId} ${type}`;
