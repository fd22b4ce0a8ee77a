import { CommandError, type CommandDone, type RunnerCommand } from './runner-protocol';
import type { SimulatedHypervisor } from './simulated-hypervisor';
import { machineInput } from './machine-console';

/**
 * Carries out one command of docs/runners.md ("Machines and commands") on the hypervisor and
 * words its `runner:done` answer; a failure becomes `ok: false` with its code. Prints one line
 * for what was done.
 */
export async function carryOutCommand(hypervisor: SimulatedHypervisor, command: RunnerCommand, emit: (line: object) => void): Promise<CommandDone> {
  const { command_id, type } = command;
  const args = command.args && typeof command.args === 'object' ? command.args : {};
  const machineId = typeof command.machine_id === 'string' ? command.machine_id : '';
  try {
    if (type !== 'disk.delete' && !machineId) throw new CommandError('failed', `${String(type)} needs machine_id.`);
    switch (type) {
      case 'machine.make': {
        const result = await hypervisor.make(machineId, args);
        emit({ event: 'machine_made', command_id, machine_id: machineId, disk: args.disk });
        return { command_id, ok: true, result };
      }
      case 'machine.run': {
        const result = await hypervisor.run(machineId, args);
        emit({ event: 'script_run', command_id, machine_id: machineId, exit_code: result.exit_code, output_bytes: Buffer.byteLength(result.output) });
        return { command_id, ok: true, result };
      }
      case 'machine.save': {
        const result = await hypervisor.save(machineId, args);
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
        const result = await hypervisor.deleteDisk(args);
        emit({ event: 'disk_deleted', command_id, state: args.state });
        return { command_id, ok: true, result };
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
