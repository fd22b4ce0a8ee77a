import { CommandError, type Hypervisor, type MachineInput } from '../../runners/hypervisor';
import type { ConsoleInput } from './runner-protocol';

/**
 * The console's live view of a machine (docs/runners.md, "The console"), whichever provider
 * makes it: its screen as PNG bytes with a frame number, and clicks, text and keys carried out
 * on it as the person at the machine.
 */

/** `runner:screen`: the machine's screen now, as PNG bytes, with its frame number. */
export async function screenReply(hypervisor: Hypervisor, payload: unknown): Promise<object> {
  const machineId = (payload as { machine_id?: unknown } | null)?.machine_id;
  try {
    const screen = typeof machineId === 'string' ? await hypervisor.screen(machineId) : null;
    if (!screen) return { ok: false, message: `No machine ${String(machineId)} runs on this runner.` };
    return { ok: true, ...screen };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

/** `runner:input`: a click, text or keys from the console, carried out on the machine. */
export async function inputReply(hypervisor: Hypervisor, payload: unknown): Promise<object> {
  const request = payload as { machine_id?: unknown; input?: unknown } | null;
  const machineId = request?.machine_id;
  if (typeof machineId !== 'string' || !hypervisor.ids().includes(machineId)) return { ok: false, message: `No machine ${String(machineId)} runs on this runner.` };
  const input = consoleInput(request?.input);
  if (typeof input === 'string') return { ok: false, message: input };
  try {
    return await hypervisor.input(machineId, input);
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

/**
 * The `machine.input` command: what the person at the machine does for the service (an eval's
 * simulated customer typing a secret or clicking a button it was asked to). Besides the
 * console's inputs it takes `{ type: "click_label", label }`: the element with that label on the
 * screen now is clicked in its middle.
 */
export async function machineInput(hypervisor: Hypervisor, machineId: string, input: unknown): Promise<{ frame: number }> {
  if (!hypervisor.ids().includes(machineId)) throw new CommandError('no_such_machine', `No machine ${machineId} runs on this runner.`);
  const value = input as { type?: unknown; label?: unknown } | null;
  const parsed: MachineInput | string = value?.type === 'click_label' ? { type: 'click_label', label: String(value.label) } : consoleInput(input);
  if (typeof parsed === 'string') throw new CommandError('failed', parsed);
  const outcome = await hypervisor.input(machineId, parsed);
  if (!outcome.ok) throw new CommandError('failed', outcome.message);
  return { frame: outcome.frame };
}

/** The console input asked for, or why it is not one. */
function consoleInput(input: unknown): ConsoleInput | string {
  const value = input as (Partial<ConsoleInput> & Record<string, unknown>) | null;
  if (!value || typeof value !== 'object') return 'input must be an object: click, type or key.';
  switch (value.type) {
    case 'click':
      return Number.isFinite(value.x) && Number.isFinite(value.y) ? { type: 'click', x: value.x as number, y: value.y as number } : 'A click needs numbers x and y.';
    case 'type':
      return typeof value.text === 'string' ? { type: 'type', text: value.text } : 'A type input needs text.';
    case 'key':
      return typeof value.keys === 'string' ? { type: 'key', keys: value.keys } : 'A key input needs keys, such as "cmd+s".';
    default:
      return `Unknown input type "${String(value.type)}": click, type or key.`;
  }
}
