import {
  DesktopAppClient,
  unreachableMessage,
  type DesktopClientEnd,
  type HelloAccepted,
  type PersonView,
} from '../desktop/desktop-app-client';
import type { DesktopAction, PersonMessage, ShowMessage } from '../desktop/protocol';
import type { SimulatedOs } from './apps.catalog';
import { centerOf, SimulatedComputer } from './simulated-computer';

export { unreachableMessage, type DesktopClientEnd, type HelloAccepted, type PersonView };

/**
 * The reference desktop client (`npx deskhand desktop`): it pairs a simulated computer with the
 * service over the desktop protocol (the shared `DesktopAppClient`: socket, reconnect, outbox,
 * each `act_id` run once), and plays the person in front of the screen as told (answer
 * questions, decide approvals, type secrets, press Stop). Every protocol event becomes one JSON
 * line, so a test can follow what the person saw.
 */

export interface DesktopClientOptions {
  baseUrl: string;
  code: string;
  os: SimulatedOs;
  appVersion: string;
  name: string;
  width: number;
  height: number;
  accessibility: boolean;
  /** The person answers every question with this text. */
  answer?: string;
  /** The person approves (or denies) every approval shown. */
  approve?: boolean;
  deny?: boolean;
  /** The person types secrets and passwords when asked to. */
  typeSecrets?: boolean;
  /** The person presses Stop after the task's Nth action (screenshots do not count). */
  stopAfter?: number;
  /** How long the person takes before answering, deciding or typing. */
  delayMs: number;
  /** The socket.io path on the service; `/socket.io` by default. */
  path?: string;
  /** Where the JSON lines go; stdout by default. */
  out?: (line: object) => void;
  /** First delay between reconnection attempts; grows up to ten times that. */
  reconnectDelayMs?: number;
  /**
   * Told once, in words, when the service cannot be reached (a wrong `--base-url`, a service not
   * started): the JSON lines only say "websocket error" on every retry. Told again only after
   * the client has been connected in between.
   */
  onUnreachable?: (message: string) => void;
  /**
   * The computer to serve, made beforehand (a runner's machine, with its disk); by default one
   * is made from `os`, `appVersion`, the screen size, `name` and `accessibility`.
   */
  computer?: SimulatedComputer;
}

export class DesktopClient {
  readonly computer: SimulatedComputer;
  /** Settles once, when the client stops for good: released, closed or refused. */
  readonly finished: Promise<DesktopClientEnd>;
  private readonly options: DesktopClientOptions;
  private readonly app: DesktopAppClient<SimulatedComputer>;
  /** The scripted person's pending answers, decisions and typing, by the item's id. */
  private readonly timers = new Map<string, { taskId: string; timer: NodeJS.Timeout }>();
  private readonly actionsByTask = new Map<string, number>();
  private readonly stoppedTasks = new Set<string>();

  constructor(options: DesktopClientOptions) {
    this.options = options;
    this.computer = options.computer ?? new SimulatedComputer({
      os: options.os,
      appVersion: options.appVersion,
      width: options.width,
      height: options.height,
      name: options.name,
      accessibility: options.accessibility,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    });
    this.app = new DesktopAppClient({
      baseUrl: options.baseUrl,
      code: options.code,
      computer: this.computer,
      os: options.os,
      appVersion: options.appVersion,
      path: options.path,
      out: options.out,
      reconnectDelayMs: options.reconnectDelayMs,
      onUnreachable: options.onUnreachable,
      onShow: (message) => this.personSees(message),
      onActed: (taskId, actions) => this.countActions(taskId, actions),
      onEnd: () => {
        for (const id of [...this.timers.keys()]) this.cancel(id);
      },
    });
    this.finished = this.app.finished;
  }

  /**
   * Connects and says hello with the pairing code. Resolves with the service's welcome on the
   * first accepted hello; rejects when the service refuses the code or the client is closed
   * first. While the service cannot be reached it keeps trying, printing each failure.
   */
  start(): Promise<HelloAccepted> {
    return this.app.start();
  }

  /** Disconnects for good; pending answers and decisions are dropped. Safe to call twice. */
  close(): Promise<void> {
    return this.app.close();
  }

  /** What the person's screen shows now (a copy). */
  view(): PersonView {
    return this.app.view();
  }

  /**
   * Sends something the person did, as the app's buttons do, and resolves with the service's
   * answer: `{ ok: true }`, or a refusal with its `message` and `code` (e.g. `already_answered`,
   * `customer_answers_off`), which is also printed as a `person_refused` line.
   */
  person(message: PersonMessage): Promise<{ ok: boolean; [field: string]: unknown }> {
    return this.app.person(message);
  }

  /** Counts the task's actions for `stopAfter`; screenshots only look, so they do not count. */
  private countActions(taskId: string, done: DesktopAction[]): void {
    const stopAfter = this.options.stopAfter;
    if (stopAfter === undefined) return;
    const count = (this.actionsByTask.get(taskId) ?? 0) + done.filter((action) => action?.type !== 'screenshot').length;
    this.actionsByTask.set(taskId, count);
    if (count >= stopAfter && !this.stoppedTasks.has(taskId)) {
      this.stoppedTasks.add(taskId);
      this.app.sendPerson({ kind: 'stop', task_id: taskId });
    }
  }

  /** The scripted person reacts to what the screen shows them, as the options say. */
  private personSees(message: ShowMessage): void {
    const { delayMs, answer, approve, deny, typeSecrets } = this.options;
    switch (message.kind) {
      case 'question':
        if (answer !== undefined) {
          this.later(message.question_id, message.task_id, delayMs, () =>
            this.app.sendPerson({ kind: 'answer', task_id: message.task_id, question_id: message.question_id, answer }),
          );
        }
        return;
      case 'approval':
        if (approve || deny) {
          const decision = approve ? 'approve' : 'deny';
          this.later(message.approval_id, message.task_id, delayMs, () =>
            this.app.sendPerson({ kind: 'decision', task_id: message.task_id, approval_id: message.approval_id, decision }),
          );
        }
        return;
      case 'type_secret':
        if (typeSecrets) this.later(message.request_id, message.task_id, delayMs, () => this.typeSecret(message));
        return;
      case 'clear':
        this.cancel(message.item_id);
        return;
      case 'ended':
        for (const [id, timer] of this.timers) if (timer.taskId === message.task_id) this.cancel(id);
        this.actionsByTask.delete(message.task_id);
        return;
      default:
        return;
    }
  }

  /** The person types the secret into the field they were asked about, then says so. */
  private async typeSecret(message: Extract<ShowMessage, { kind: 'type_secret' }>): Promise<void> {
    const screen = this.computer.inspect();
    const field = screen.visible_labels?.find((entry) => entry.label === message.field);
    const focusedLabel = screen.focused?.label;
    if (field && focusedLabel !== message.field) {
      const clicked = await this.computer.act({ type: 'click', ...centerOf(field.bounds) });
      if (!clicked.ok) return this.secretFailed(message, clicked.error);
    }
    const typed = await this.computer.act({ type: 'type', text: message.text });
    if (!typed.ok) return this.secretFailed(message, typed.error);
    this.app.sendPerson({ kind: 'typed_secret', task_id: message.task_id, request_id: message.request_id });
  }

  private secretFailed(message: Extract<ShowMessage, { kind: 'type_secret' }>, error: string | undefined): void {
    this.app.emitLine({ event: 'type_secret_failed', task_id: message.task_id, request_id: message.request_id, error });
  }

  private later(itemId: string, taskId: string, delayMs: number, act: () => void | Promise<void>): void {
    this.cancel(itemId);
    const timer = setTimeout(() => {
      this.timers.delete(itemId);
      Promise.resolve(act()).catch((error: unknown) => this.app.emitLine({ event: 'error', message: error instanceof Error ? error.message : String(error) }));
    }, delayMs);
    this.timers.set(itemId, { taskId, timer });
  }

  private cancel(itemId: string): void {
    const pending = this.timers.get(itemId);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.timers.delete(itemId);
  }
}
