import { io, type Socket } from 'socket.io-client';
import { RunnerEvents } from '../../shared/runners/runner-link';

/** What a runner reports in its hello, as the tests' runners report it. */
export const RUNNER_REPORT = { provider: 'simulated', version: '0.1.0', labels: ['eu', 'gpu'], slots: 2, images: ['macos-15', 'windows-11'] };

/** A command from the service (docs/runners.md, "Machines and commands"). */
export interface RunnerCommand {
  command_id: string;
  type: string;
  machine_id: string | null;
  args: Record<string, any>;
}

/** A bare runner connection on `/runners`: says hello and heartbeats when told. It hears commands and answers them only as a test tells it (the reference runner is `npx deskhand runner`). */
export class RawRunner {
  readonly socket: Socket;

  constructor(baseUrl: string) {
    this.socket = io(`${baseUrl}/runners`, { transports: ['websocket'], reconnection: false, forceNew: true });
    this.socket.on(RunnerEvents.command, (command: RunnerCommand) => this.commands.push(command));
  }

  /** Connects and says hello (the token and `RUNNER_REPORT`, with `overrides`); resolves with the service's reply. */
  async hello(token: string, overrides: Record<string, unknown> = {}): Promise<any> {
    if (!this.socket.connected) {
      await new Promise<void>((resolve, reject) => {
        this.socket.once('connect', () => resolve());
        this.socket.once('connect_error', reject);
      });
    }
    return this.socket.timeout(5000).emitWithAck(RunnerEvents.hello, { token, ...RUNNER_REPORT, ...overrides });
  }

  heartbeat(payload: Record<string, unknown> = {}): Promise<any> {
    return this.socket.timeout(5000).emitWithAck(RunnerEvents.heartbeat, payload);
  }

  /** What the service sent on `runner:command`, in order. */
  readonly commands: RunnerCommand[] = [];

  /** Hears each command (after it is recorded in `commands`). */
  onCommand(handler: (command: RunnerCommand) => void): void {
    this.socket.on(RunnerEvents.command, handler);
  }

  /** Answers a command (`runner:done`); resolves with the service's acknowledgement. */
  done(commandId: string, outcome: { result: Record<string, unknown> } | { error: { code: string; message: string } }): Promise<any> {
    const answer = 'result' in outcome ? { command_id: commandId, ok: true, result: outcome.result } : { command_id: commandId, ok: false, error: outcome.error };
    return this.socket.timeout(5000).emitWithAck(RunnerEvents.done, answer);
  }

  close(): void {
    this.socket.disconnect();
  }
}
