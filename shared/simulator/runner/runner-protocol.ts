/**
 * The runner side of the gateway protocol of docs/runners.md: event names and message shapes
 * as the reference runner sends and reads them. The service's gateway checks the same shapes
 * with its own schemas (api/sockets/runners.gateway.ts).
 */

export { RunnerEvents as RunnerProtocolEvents } from '../../runners/runner-events';
import type { CommandErrorCode } from '../../runners/hypervisor';

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

export { CommandError, type CommandErrorCode, type DiskRef } from '../../runners/hypervisor';

export type CommandDone =
  | { command_id: string; ok: true; result: Record<string, unknown> }
  | { command_id: string; ok: false; error: { code: CommandErrorCode; message: string }; result?: Record<string, unknown> };

/** Console input, as `runner:input` carries it. */
export type ConsoleInput = { type: 'click'; x: number; y: number } | { type: 'type'; text: string } | { type: 'key'; keys: string };
