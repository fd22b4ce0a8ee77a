import type { Socket } from 'socket.io-client';
import type { DesktopComputer } from './computer';
import {
  DesktopEvents,
  type ActionResult,
  type DesktopAction,
  type HelloReply,
  type PersonMessage,
  type ResultMessage,
  type ShowMessage,
} from './protocol';
import { serviceSocket } from './service-socket';

/**
 * The desktop protocol's client side, whatever the computer: it connects out to the service
 * (nothing of it listens), says hello with the pairing code, reconnects (and says hello again)
 * when the connection drops, runs the acts the service sends one after another on its
 * `DesktopComputer`, runs each `act_id` once (a repeat after a reconnect gets the same result
 * again), keeps results and the person's messages in an outbox while the connection is down, and
 * keeps what the person's screen shows. Every protocol event becomes one JSON line (`out`).
 *
 * The reference desktop client (shared/simulator/desktop-client.ts) and the Linux app
 * (desktop/src/main.ts) are this client around their computer.
 */

export interface DesktopAppClientOptions<C extends DesktopComputer = DesktopComputer> {
  baseUrl: string;
  code: string;
  computer: C;
  /** For the `connecting` line: the system and app version the hello will report. */
  os: string;
  appVersion: string;
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
  /** Told of each `show` after the person's view took it in (the reference client's scripted person). */
  onShow?: (message: ShowMessage) => void;
  /** Told of the actions of a task carried out by one act. */
  onActed?: (taskId: string, actions: DesktopAction[]) => void;
  /** Told once, synchronously, when the client stops for good. */
  onEnd?: (end: DesktopClientEnd) => void;
}

/** What the person's screen shows besides the computer: the service's banner and messages. */
export interface PersonView {
  banner: Extract<ShowMessage, { kind: 'banner' }> | null;
  /** Narration lines, oldest first (the last 50). */
  narration: Array<Extract<ShowMessage, { kind: 'narration' }>>;
  /** Questions, approvals and secret requests still open, by their id. */
  pending: Record<string, Extract<ShowMessage, { kind: 'question' | 'approval' | 'type_secret' }>>;
  summaries: Array<Extract<ShowMessage, { kind: 'summary' }>>;
  ended: Array<Extract<ShowMessage, { kind: 'ended' }>>;
}

/** Why the client stopped. */
export type DesktopClientEnd =
  | { reason: 'released' }
  | { reason: 'closed' }
  | { reason: 'refused'; code: string; message: string };

export interface HelloAccepted {
  session_id: string;
  agent: { display_name: string; greeting: string };
}

const HELLO_TIMEOUT_MS = 10_000;
/** How long to wait for the service to acknowledge a result or a person's message. */
const DELIVERY_TIMEOUT_MS = 30_000;
const NARRATION_KEPT = 50;
/** How many acts (by `act_id`) the client remembers, to answer a repeat without running it again. */
const ACTS_REMEMBERED = 16;

export class DesktopAppClient<C extends DesktopComputer = DesktopComputer> {
  readonly computer: C;
  /** Settles once, when the client stops for good: released, closed or refused. */
  readonly finished: Promise<DesktopClientEnd>;
  private readonly options: DesktopAppClientOptions<C>;
  private readonly out: (line: object) => void;
  private socket: Socket | null = null;
  /** The pairing code; forgotten when the team releases the computer. */
  private code: string | null;
  private ended: DesktopClientEnd | null = null;
  private resolveFinished!: (end: DesktopClientEnd) => void;
  private hello: { resolve: (accepted: HelloAccepted) => void; reject: (error: Error) => void } | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  /** Batches of steps run one after another, as one person's computer would. */
  private actQueue: Promise<void> = Promise.resolve();
  /** True while the current connection's hello is accepted: results may go out. */
  private welcomed = false;
  private readonly outbox: Array<{ event: string; message: ResultMessage | PersonMessage }> = [];
  /** The latest acts run, by `act_id`: the service sends an act again after a reconnect, and it must not run twice. */
  private readonly actsRun = new Map<string, Promise<ActionResult>>();
  private readonly personView: PersonView = { banner: null, narration: [], pending: {}, summaries: [], ended: [] };

  constructor(options: DesktopAppClientOptions<C>) {
    this.options = options;
    this.computer = options.computer;
    this.code = options.code;
    this.out = options.out ?? ((line) => process.stdout.write(`${JSON.stringify(line)}\n`));
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve));
  }

  /** Whether the client has stopped for good. */
  get stopped(): boolean {
    return this.ended !== null;
  }

  /**
   * Connects and says hello with the pairing code. Resolves with the service's welcome on the
   * first accepted hello; rejects when the service refuses the code or the client is closed
   * first. While the service cannot be reached it keeps trying, printing each failure.
   */
  start(): Promise<HelloAccepted> {
    if (this.socket) throw new Error('The desktop client is already started.');
    const socket = serviceSocket(this.options.baseUrl, '/desktop', this.options);
    this.socket = socket;
    const accepted = new Promise<HelloAccepted>((resolve, reject) => (this.hello = { resolve, reject }));

    let toldUnreachable = false;
    socket.on('connect', () => {
      toldUnreachable = false;
      this.emitLine({ event: 'connected' });
      this.sayHello(socket);
    });
    socket.on('disconnect', (reason) => {
      this.welcomed = false;
      this.emitLine({ event: 'disconnected', reason });
      // socket.io does not come back by itself after the server hangs up; a desktop app does.
      if (reason === 'io server disconnect' && !this.ended) this.retryLater(() => socket.connect());
    });
    socket.on('connect_error', (error) => {
      this.emitLine({ event: 'connect_error', message: error.message });
      // An error that socket.io will not retry comes from the service refusing the connection.
      if (!socket.active && !this.ended) this.end({ reason: 'refused', code: 'invalid', message: error.message });
      else if (!toldUnreachable && !this.ended) {
        toldUnreachable = true;
        this.options.onUnreachable?.(unreachableMessage(this.options.baseUrl, error.message));
      }
    });
    socket.on(DesktopEvents.act, (payload: unknown, ack?: (results: ActionResult[]) => void) => {
      this.actQueue = this.actQueue.then(() => this.handleAct(payload, ack)).catch((error: unknown) => {
        this.emitLine({ event: 'error', message: `act failed: ${errorMessage(error)}` });
      });
    });
    socket.on(DesktopEvents.show, (message: unknown) => this.handleShow(message));
    socket.on(DesktopEvents.released, (payload: unknown) => {
      const reason = (payload as { reason?: unknown } | null)?.reason;
      this.emitLine({ event: 'released', ...(typeof reason === 'string' ? { reason } : {}) });
      this.code = null;
      this.end({ reason: 'released' });
    });

    this.emitLine({ event: 'connecting', base_url: this.options.baseUrl, os: this.options.os, app_version: this.options.appVersion });
    socket.connect();
    return accepted;
  }

  /** Disconnects for good; pending answers and decisions are dropped. Safe to call twice. */
  async close(): Promise<void> {
    this.end({ reason: 'closed' });
    await this.finished;
  }

  /** What the person's screen shows now (a copy). */
  view(): PersonView {
    return structuredClone(this.personView);
  }

  private sayHello(socket: Socket): void {
    if (!this.code) return;
    const message = this.computer.hello(this.code);
    socket.timeout(HELLO_TIMEOUT_MS).emit(DesktopEvents.hello, message, (error: Error | null, reply: unknown) => {
      if (this.ended || socket !== this.socket) return;
      if (error) {
        // Cut off mid-hello: the reconnection says hello again by itself.
        if (!socket.connected) return;
        this.emitLine({ event: 'hello', ok: false, code: 'timeout', message: 'The service did not answer the hello.' });
        socket.disconnect();
        this.retryLater(() => socket.connect());
        return;
      }
      const answer = reply as HelloReply | undefined;
      if (!answer || typeof answer !== 'object' || typeof answer.ok !== 'boolean') {
        this.emitLine({ event: 'hello', ok: false, code: 'invalid', message: 'The service answered the hello with something unreadable.' });
        this.end({ reason: 'refused', code: 'invalid', message: 'unreadable hello reply' });
        return;
      }
      if (!answer.ok) {
        this.emitLine({ event: 'hello', ok: false, code: answer.code, message: answer.message });
        this.end({ reason: 'refused', code: answer.code, message: answer.message });
        return;
      }
      this.emitLine({ event: 'hello', ok: true, session_id: answer.session_id, agent: answer.agent });
      this.welcomed = true;
      for (const pending of this.outbox.splice(0)) this.deliver(pending.event, pending.message);
      this.hello?.resolve({ session_id: answer.session_id, agent: answer.agent });
      this.hello = null;
    });
  }

  /**
   * Runs what an `act` asks for. The service sends one action named by `act_id` and reads the
   * outcome from a `result` message (its Redis emitter cannot take acknowledgements); a batch
   * of `actions` sent with an acknowledgement is answered through that acknowledgement.
   */
  private async handleAct(payload: unknown, ack?: (results: ActionResult[]) => void): Promise<void> {
    const request = payload as { task_id?: unknown; act_id?: unknown; action?: unknown; actions?: unknown } | null;
    const taskId = typeof request?.task_id === 'string' ? request.task_id : null;
    const actId = typeof request?.act_id === 'string' ? request.act_id : null;
    if (taskId && actId && request?.action !== undefined) {
      const action = request.action as DesktopAction;
      const known = this.actsRun.get(actId);
      if (known) {
        // Sent again (the service lost this act or its result when a connection dropped): the
        // step is not run twice; its result goes out once more.
        const result = await known;
        if (this.ended) return;
        this.sendResult({ task_id: taskId, act_id: actId, result });
        if (typeof ack === 'function') ack([result]);
        this.emitLine({ event: 'act_repeated', task_id: taskId, act_id: actId, results: [summarize(result)] });
        return;
      }
      const running = this.computer.act(action);
      this.actsRun.set(actId, running);
      if (this.actsRun.size > ACTS_REMEMBERED) this.actsRun.delete(this.actsRun.keys().next().value!);
      const result = await running;
      if (this.ended) return;
      this.sendResult({ task_id: taskId, act_id: actId, result });
      if (typeof ack === 'function') ack([result]);
      this.emitLine({ event: 'act', task_id: taskId, act_id: actId, actions: [action], results: [summarize(result)] });
      this.options.onActed?.(taskId, [action]);
      return;
    }
    const actions = Array.isArray(request?.actions) ? (request.actions as DesktopAction[]) : null;
    if (!taskId || !actions) {
      const screen = await this.computer.observe();
      const results = [{ ...screen, ok: false, error: 'An act message needs task_id with act_id and action, or an array of actions.' }];
      if (typeof ack === 'function') ack(results);
      else if (taskId && actId) this.sendResult({ task_id: taskId, act_id: actId, result: results[0]! });
      this.emitLine({ event: 'act', task_id: taskId, act_id: actId, actions: [], results: results.map(summarize) });
      return;
    }
    const results: ActionResult[] = [];
    for (const action of actions) {
      const result = await this.computer.act(action);
      results.push(result);
      // Later steps were planned on a screen that did not come about: stop at the first failure.
      if (!result.ok) break;
    }
    if (this.ended) return;
    if (typeof ack === 'function') ack(results);
    this.emitLine({ event: 'act', task_id: taskId, actions, results: results.map(summarize) });
    this.options.onActed?.(taskId, actions.slice(0, results.length));
  }

  private sendResult(message: ResultMessage): void {
    this.deliver(DesktopEvents.result, message);
  }

  /**
   * Sends a message once the service knows this connection: one made while the connection was
   * down waits for the next welcome, since the service ignores messages before a hello. A
   * refusal in the service's acknowledgement is printed.
   */
  private deliver(event: string, message: ResultMessage | PersonMessage): void {
    const socket = this.socket;
    if (!socket || this.ended) return;
    if (!this.welcomed) {
      this.outbox.push({ event, message });
      return;
    }
    socket.timeout(DELIVERY_TIMEOUT_MS).emit(event, message, (error: Error | null, reply: unknown) => {
      const answer = reply as { ok?: unknown; message?: unknown } | undefined;
      if (error || answer?.ok !== false) return;
      this.emitLine({ event: 'refused', refused: event, task_id: message.task_id, message: String(answer.message ?? '') });
    });
  }

  private handleShow(raw: unknown): void {
    if (!raw || typeof raw !== 'object' || typeof (raw as { kind?: unknown }).kind !== 'string') {
      this.emitLine({ event: 'show', kind: 'unreadable' });
      return;
    }
    const message = raw as ShowMessage;
    // The person reads the secret off the screen; the log does not keep it.
    this.emitLine({ event: 'show', ...message, ...(message.kind === 'type_secret' ? { text: '[redacted]' } : {}) });
    const view = this.personView;
    switch (message.kind) {
      case 'banner':
        view.banner = message;
        break;
      case 'narration':
        view.narration = [...view.narration, message].slice(-NARRATION_KEPT);
        break;
      case 'summary':
        view.summaries.push(message);
        break;
      case 'question':
        view.pending[message.question_id] = message;
        break;
      case 'approval':
        view.pending[message.approval_id] = message;
        break;
      case 'type_secret':
        view.pending[message.request_id] = message;
        break;
      case 'clear':
        // Someone else answered or decided first: the person no longer can.
        delete view.pending[message.item_id];
        break;
      case 'ended':
        view.ended.push(message);
        if (view.banner?.task_id === message.task_id) view.banner = { ...view.banner, running: false };
        for (const [id, item] of Object.entries(view.pending)) if (item.task_id === message.task_id) delete view.pending[id];
        break;
    }
    this.computer.show?.(message);
    this.options.onShow?.(message);
  }

  /**
   * Sends something the person did, as the app's buttons do, and resolves with the service's
   * answer: `{ ok: true }`, or a refusal with its `message` and `code` (e.g. `already_answered`,
   * `customer_answers_off`), which is also printed as a `person_refused` line.
   */
  async person(message: PersonMessage): Promise<{ ok: boolean; [field: string]: unknown }> {
    const socket = this.socket;
    if (!socket || this.ended) throw new Error('The desktop client is not connected');
    this.emitLine({ event: 'person', ...message });
    const reply = (await socket.timeout(HELLO_TIMEOUT_MS).emitWithAck(DesktopEvents.person, message)) as { ok: boolean };
    if (!reply.ok) this.emitLine({ event: 'person_refused', ...reply });
    return reply;
  }

  /** Sends something the person did without waiting for the answer; kept in the outbox while the connection is down. */
  sendPerson(message: PersonMessage): void {
    const socket = this.socket;
    if (!socket || this.ended) return;
    delete this.personView.pending[pendingIdOf(message) ?? ''];
    this.deliver(DesktopEvents.person, message);
    this.emitLine({ event: 'person', ...message });
  }

  /** Prints one JSON line; a broken output never takes the computer down. */
  emitLine(line: object): void {
    try {
      this.out(line);
    } catch {
      // A broken stdout (a closed pipe) must not take the computer down with it.
    }
  }

  private retryLater(reconnect: () => void): void {
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.ended) reconnect();
    }, this.options.reconnectDelayMs ?? 1000);
  }

  private end(end: DesktopClientEnd): void {
    if (this.ended) return;
    this.ended = end;
    this.options.onEnd?.(end);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.socket?.disconnect();
    if (this.hello) {
      const reason = end.reason === 'refused' ? `The service refused the pairing code (${end.code}): ${end.message}` : `The desktop client was ${end.reason} before the service welcomed it.`;
      this.hello.reject(new Error(reason));
      this.hello = null;
    }
    if (end.reason === 'closed') this.emitLine({ event: 'closed' });
    this.resolveFinished(end);
  }
}

function pendingIdOf(message: PersonMessage): string | undefined {
  switch (message.kind) {
    case 'answer':
      return message.question_id;
    case 'decision':
      return message.approval_id;
    case 'typed_secret':
      return message.request_id;
    case 'stop':
      return undefined;
  }
}

/** A result as the JSON lines show it: no screenshot bytes, just what a reader needs. */
function summarize(result: ActionResult): object {
  const front = result.observation.windows.find((window) => typeof window.url === 'string');
  return {
    ok: result.ok,
    ...(result.error ? { error: result.error } : {}),
    focused_app: result.observation.focused_app,
    ...(front?.url ? { url: front.url } : {}),
    screenshot_bytes: result.screenshot.length,
  };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What a desktop client or runner says when the service does not answer at `baseUrl`. */
export function unreachableMessage(baseUrl: string, error: string): string {
  return `cannot reach the service at ${baseUrl} (${error}); is it running, and is --base-url right? Still trying.`;
}
