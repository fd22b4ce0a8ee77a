/**
 * The runner side of the gateway protocol of docs/runners.md: event names and message shapes
 * as the reference runner sends and reads them. The service's gateway checks the same shapes
 * with its own schemas (api/sockets/runners.gateway.ts).
 */

export { RunnerEvents as RunnerProtocolEvents } from '../../runners/runner-events';

export interface RunnerHello {
  token: string;
  provider: string;
  version: string;
  labels: string[];
  slots: number;
  images: string[];
  busy: number;
  /** The machines it runs now, so that after a reconnect the service knows which survived. */
  machines: string[];
}

export type HelloReply =
  | { ok: true; runner_id: string; name: string; scope: string; heartbeat_ms: number }
  | { ok: false; code: string; message: string };

export type CommandType = 'machine.make' | 'machine.run' | 'machine.save' | 'machine.destroy' | 'machine.input' | 'disk.delete';

export interface RunnerCommand {
  command_id: string;
  type: CommandType;
  machine_id?: string;
  args?: Record<string, unknown>;
}

/** A disk to make a machine from or to save one as: an image, or a saved start state version of one. */
export interface DiskRef {
  image: string;
  state?: string;
  version?: number;
}

export type CommandErrorCode = 'no_such_machine' | 'no_such_disk' | 'no_such_image' | 'boot_failed' | 'timeout' | 'failed';

export type CommandDone =
  | { command_id: string; ok: true; result: Record<string, unknown> }
  | { command_id: string; ok: false; error: { code: CommandErrorCode; message: string }; result?: Record<string, unknown> };

/** A command that could not be carried out, with the code the service reads. */
export class CommandError extends Error {
  constructor(
    readonly code: CommandErrorCode,
    message: string,
    /** What the command still has to say (a timed-out script's output so far). */
    readonly result?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}

/** Console input, as `runner:input` carries it. */
export type ConsoleInput = { type: 'click'; x: number; y: number } | { type: 'type'; text: string } | { type: 'key'; keys: string };
