import type { DesktopAction } from '../../desktop/protocol';
import { CommandError, type ConsoleInput } from './runner-protocol';
import { centerOf } from '../simulated-computer';
import type { SimulatedHypervisor } from './simulated-hypervisor';

/**
 * The console's live view of a machine (docs/runners.md, "The console"): its screen as PNG
 * bytes with a frame number, and clicks, text and keys carried out on it.
 */

/** `runner:screen`: the machine's screen now, as PNG bytes, with its frame number. */
export function screenReply(hypervisor: SimulatedHypervisor, payload: unknown): object {
  const machineId = (payload as { machine_id?: unknown } | null)?.machine_id;
  const computer = typeof machineId === 'string' ? hypervisor.computer(machineId) : undefined;
  if (!computer) return { ok: false, message: `No machine ${String(machineId)} runs on this runner.` };
  const { screenshot } = computer.observe();
  return { ok: true, frame: computer.frame, width: computer.device.width, height: computer.device.height, png: screenshot };
}

/** `runner:input`: a click, text or keys from the console, carried out on the machine. */
export async function inputReply(hypervisor: SimulatedHypervisor, payload: unknown): Promise<object> {
  const request = payload as { machine_id?: unknown; input?: unknown } | null;
  const computer = typeof request?.machine_id === 'string' ? hypervisor.computer(request.machine_id) : undefined;
  if (!computer) return { ok: false, message: `No machine ${String(request?.machine_id)} runs on this runner.` };
  const action = consoleAction(request?.input);
  if (typeof action === 'string') return { ok: false, message: action };
  const result = await computer.act(action);
  return result.ok ? { ok: true, frame: computer.frame } : { ok: false, message: result.error, frame: computer.frame };
}

/**
 * The `machine.input` command: what the person at the machine does for the service (an eval's
 * simulated customer typing a secret or clicking a button it was asked to). Besides the
 * console's inputs it takes `{ type: "click_label", label }`: the element with that label on the
 * screen now is clicked in its middle.
 */
export async function machineInput(hypervisor: SimulatedHypervisor, machineId: string, input: unknown): Promise<{ frame: number }> {
  const computer = hypervisor.computer(machineId);
  if (!computer) throw new CommandError('no_such_machine', `No machine ${machineId} runs on this runner.`);
  const value = input as { type?: unknown; label?: unknown } | null;
  let action: DesktopAction | string;
  if (value?.type === 'click_label') {
    const element = computer.observe().observation?.elements?.find((candidate) => candidate.label === value.label);
    if (!element) throw new CommandError('failed', `Nothing labelled "${String(value.label)}" is on the screen.`);
    action = { type: 'click', ...centerOf(element.bounds) };
  } else {
    action = consoleAction(input);
  }
  if (typeof action === 'string') throw new CommandError('failed', action);
  const result = await computer.act(action);
  if (!result.ok) throw new CommandError('failed', result.error ?? 'The machine could not do that.');
  return { frame: computer.frame };
}

/** The desktop step a console input asks for, or why it is not one. */
function consoleAction(input: unknown): DesktopAction | string {
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
