/**
 * Machines and the commands sent to runners about them, as PostgreSQL keeps them
 * (migrations/20261126000003): their types, and the few rules read off a status or an image, shared by the repository and the services.
 */

/** A disk a machine starts from: an image a runner has, or a saved start state version (docs/runners.md). */
export type Disk = { image: string } | { image: string; state: string; version: number };

/** waiting (for a free slot) → starting (make sent) → running → stopping (destroy sent) → destroyed; or failed. */
export type MachineStatus = 'waiting' | 'starting' | 'running' | 'stopping' | 'destroyed' | 'failed';

/** The statuses that take one of the runner's slots. */
export const LIVE_MACHINE_STATUSES: readonly MachineStatus[] = ['starting', 'running', 'stopping'];

/** Whether a machine in this status is over for good (destroyed, or failed): its slot, if it had one, is free. */
export const machineEnded = (status: MachineStatus): boolean => status === 'failed' || status === 'destroyed';

/** Who a machine is for; told of its changes (`NotifyOwner`). */
export type MachineOwnerKind = 'start_state' | 'try';

/** `mac`, `windows` or `linux` (`osOfImage`); another runner's image names its own. */
export type MachineOs = string;

export interface MachineRow {
  seq: number;
  id: string;
  org_id: string;
  owner_kind: MachineOwnerKind;
  owner_id: string;
  disk: Disk;
  image: string;
  os: MachineOs;
  pinned_runner_id: string | null;
  runner_id: string | null;
  status: MachineStatus;
  session_code: string;
  /** False when the owner has nothing to do once the machine runs (`MachineRequest.tellOwnerWhenRunning`). */
  tell_owner_when_running: boolean;
  placements: number;
  error: string | null;
  created_at: Date;
  updated_at: Date;
  ended_at: Date | null;
}

export type CommandType = 'machine.make' | 'machine.run' | 'machine.save' | 'machine.destroy' | 'machine.input' | 'disk.delete';
export type CommandStatus = 'sent' | 'done' | 'failed';

export interface CommandRow {
  seq: number;
  id: string;
  runner_id: string;
  machine_id: string | null;
  type: CommandType;
  args: Record<string, unknown>;
  status: CommandStatus;
  result: Record<string, unknown> | null;
  error_code: string | null;
  error: string | null;
  sent_at: Date;
  deadline_at: Date;
  finished_at: Date | null;
}

/** A runner's answer to a command (`runner:done`), checked by the gateway. */
export type CommandAnswer =
  | { command_id: string; ok: true; result: Record<string, unknown> }
  | { command_id: string; ok: false; error: { code: string; message: string }; result?: Record<string, unknown> };

/**
 * An image's OS by its id (shared/desktop/os.ts, the one rule the simulated hypervisor uses too):
 * `macos…` is `mac`, `windows…` is `windows`, a Linux distribution's id (`debian-12`) is `linux`,
 * any other image is named by its first word.
 */
export { osOfImage } from '../desktop/os';
