import { osOfImage } from '../../desktop/os';
import type { DiskRef, Hypervisor, StateDiskRef } from '../../runners/hypervisor';
import { DiskStore } from './disk-store';
import { machineInput } from './machine-console';
import { CommandError, type CommandDone, type RunnerCommand } from './runner-protocol';

/**
 * Carries out one command of docs/runners.md ("Machines and commands") on the hypervisor,
 * whichever provider it is: checks the command's arguments, hands the hypervisor typed requests
 * and words its `runner:done` answer; a failure becomes `ok: false` with its code. Prints one
 * line for what was done.
 */
export async function carryOutCommand(hypervisor: Hypervisor, command: RunnerCommand, emit: (line: object) => void): Promise<CommandDone> {
  const { command_id, type } = command;
  const args = command.args && typeof command.args === 'object' ? command.args : {};
  const machineId = typeof command.machine_id === 'string' ? command.machine_id : '';
  try {
    if (type !== 'disk.delete' && !machineId) throw new CommandError('failed', `${String(type)} needs machine_id.`);
    switch (type) {
      case 'machine.make': {
        const disk = asDiskRef(args.disk);
        const code = (args.session as { code?: unknown } | undefined)?.code;
        if (typeof code !== 'string' || !code) throw new CommandError('failed', 'machine.make needs session.code, the pairing code.');
        // The one image → OS rule (shared/desktop/os.ts) when the service leaves it out.
        const os = typeof args.os === 'string' ? args.os : osOfImage(disk.image);
        await hypervisor.make(machineId, { disk, code, os });
        emit({ event: 'machine_made', command_id, machine_id: machineId, disk: args.disk });
        return { command_id, ok: true, result: {} };
      }
      case 'machine.run': {
        const { script, timeout_ms: timeoutMs } = args;
        if (typeof script !== 'string') throw new CommandError('failed', 'machine.run needs script, a string.');
        if (!(Number.isSafeInteger(timeoutMs) && (timeoutMs as number) > 0)) throw new CommandError('failed', 'machine.run needs timeout_ms, a whole number above 0.');
        const { exit_code, output, stdout, stderr, timed_out } = await hypervisor.run(machineId, { script, timeoutMs: timeoutMs as number });
        if (timed_out) throw new CommandError('timeout', `The script ran past its ${timeoutMs as number} ms.`, { exit_code, output, stdout, stderr });
        emit({ event: 'script_run', command_id, machine_id: machineId, exit_code, output_bytes: Buffer.byteLength(output) });
        return { command_id, ok: true, result: { exit_code, output, stdout, stderr } };
      }
      case 'machine.save': {
        const result = await hypervisor.save(machineId, asStateDisk(args.disk));
        emit({ event: 'saved', command_id, machine_id: machineId, disk: args.disk, bytes: result.bytes });
        return { command_id, ok: true, result };
      }
      case 'machine.destroy': {
        emit({ event: 'destroying', command_id, machine_id: machineId });
        const { existed } = await hypervisor.destroy(machineId);
        emit({ event: 'destroyed', command_id, machine_id: machineId, existed });
        return { command_id, ok: true, result: {} };
      }
      case 'machine.input': {
        const result = await machineInput(hypervisor, machineId, args.input);
        emit({ event: 'input', command_id, machine_id: machineId, input: (args.input as { type?: string } | undefined)?.type });
        return { command_id, ok: true, result };
      }
      case 'disk.delete': {
        const invalid = DiskStore.invalid(args.state);
        if (invalid) throw new CommandError('failed', invalid);
        await hypervisor.deleteState(args.state as string);
        emit({ event: 'disk_deleted', command_id, state: args.state });
        return { command_id, ok: true, result: {} };
      }
      default:
        throw new CommandError('failed', `Unknown command type "${String(type)}".`);
    }
  } catch (error) {
    const failure = error instanceof CommandError ? error : new CommandError('failed', (error as Error).message);
    emit({ event: 'command_failed', command_id, type, machine_id: machineId || undefined, code: failure.code, message: failure.message });
    return { command_id, ok: false, error: { code: failure.code, message: failure.message }, ...(failure.result ? { result: failure.result } : {}) };
  }
}

function asDiskRef(value: unknown): DiskRef {
  const disk = value as Partial<DiskRef> | null | undefined;
  if (!disk || typeof disk !== 'object' || typeof disk.image !== 'string' || !disk.image) throw new CommandError('failed', 'A disk needs an image, e.g. { "image": "macos-15" }.');
  return { image: disk.image, ...(disk.state !== undefined ? { state: disk.state } : {}), ...(disk.version !== undefined ? { version: disk.version } : {}) };
}

/** `machine.save`'s disk: a state version whose id and number can name files. */
function asStateDisk(value: unknown): StateDiskRef {
  const disk = asDiskRef(value);
  const invalid = DiskStore.invalid(disk.state, disk.version);
  if (invalid || disk.state === undefined || disk.version === undefined) throw new CommandError('failed', invalid ?? 'machine.save needs a state disk: image, state and version.');
  return { image: disk.image, state: disk.state, version: disk.version };
}
