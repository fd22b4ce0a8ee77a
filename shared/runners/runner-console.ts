import type { Namespace } from 'socket.io';
import { ApiError } from '../errors';
import { RunnerEvents, runnerRoom } from './runner-link';

/** What a person does on an open machine's live view (docs/evals.md, "The live view"). */
export type ConsoleInput = { type: 'click'; x: number; y: number } | { type: 'type'; text: string } | { type: 'key'; keys: string };

/** A machine's screen as its runner showed it: `frame` rises with each change. */
export interface ConsoleScreen {
  frame: number;
  width: number;
  height: number;
  png: Buffer;
}

/** How long a runner has to answer the console. */
const CONSOLE_TIMEOUT_MS = 10_000;

/**
 * A machine's console, as a hypervisor's viewer reaches it (docs/runners.md, "The console"):
 * its screen and the person's input, asked of the runner with an acknowledgement through
 * whichever web process holds its connection (socket.io's Redis adapter answers across
 * processes). Only a web process has the namespace; the gateway attaches it.
 */
export class RunnerConsole {
  private namespace: Namespace | null = null;

  attach(namespace: Namespace): void {
    this.namespace = namespace;
  }

  async screen(runnerId: string, machineId: string): Promise<ConsoleScreen> {
    const answer = await this.ask(runnerId, RunnerEvents.screen, { machine_id: machineId });
    const png = answer.png;
    if (!Number.isInteger(answer.frame) || !(png instanceof Uint8Array)) throw unavailable('The runner sent no picture of the screen');
    return { frame: answer.frame as number, width: Number(answer.width), height: Number(answer.height), png: Buffer.from(png) };
  }

  async input(runnerId: string, machineId: string, input: ConsoleInput): Promise<{ frame: number }> {
    const answer = await this.ask(runnerId, RunnerEvents.input, { machine_id: machineId, input });
    return { frame: Number(answer.frame) };
  }

  private async ask(runnerId: string, event: string, payload: object): Promise<Record<string, unknown>> {
    if (!this.namespace) throw new Error('the runner console works in a web process only');
    let answers: unknown[];
    try {
      answers = await this.namespace.in(runnerRoom(runnerId)).timeout(CONSOLE_TIMEOUT_MS).emitWithAck(event, payload);
    } catch {
      throw unavailable('The machine\'s runner did not answer in time; try again');
    }
    const answer = answers[0] as Record<string, unknown> | undefined;
    if (!answer) throw unavailable('The machine\'s runner is not connected now; try again in a moment');
    if (answer.ok !== true) throw new ApiError('conflict', `The runner refused: ${typeof answer.message === 'string' ? answer.message : 'no reason given'}`, { code: 'runner_refused' });
    return answer;
  }
}

function unavailable(message: string): ApiError {
  return new ApiError('server_error', message, { status: 503, code: 'runner_unavailable' });
}
