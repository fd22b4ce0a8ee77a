import type { Socket } from 'socket.io-client';
import { serviceSocket } from '../../desktop/service-socket';
import { CommandJournal } from './command-journal';
import { DiskStore } from './disk-store';
import { carryOutCommand } from './machine-commands';
import { inputReply, screenReply } from './machine-console';
import { RunnerProtocolEvents as Events, type CommandDone, type HelloReply, type RunnerCommand, type RunnerHello } from './runner-protocol';
import { SimulatedHypervisor } from './simulated-hypervisor';
import type { Hypervisor } from '../../runners/hypervisor';
import { unreachableMessage } from '../../desktop/desktop-app-client';

/**
 * The runner's protocol client (`npx deskhand runner`, docs/runners.md): it connects out to the
 * service's `/runners` namespace, says hello with what its hypervisor has, heartbeats, and
 * carries out the service's commands on its hypervisor, each once however often it is sent.
 * The hypervisor is a provider of shared/runners/hypervisor.ts: by default the simulated one
 * (the reference runner, docs/reference-runner.md), or one handed to it (the QEMU provider,
 * runner/qemu/qemu-hypervisor.ts). Every event becomes one JSON line, as the desktop client's do.
 */

/** What the protocol client needs, whichever provider makes its machines. */
export interface RunnerClientOptions {
  token: string;
  baseUrl: string;
  name: string;
  slots: number;
  labels: string[];
  /** The runner's version, reported in its hello. */
  version: string;
  /** Where the JSON lines go; stdout by default. */
  out?: (line: object) => void;
  /** The socket.io path on the service; `/socket.io` by default. */
  path?: string;
  /** First delay between reconnection attempts; grows up to ten times that. */
  reconnectDelayMs?: number;
  /** Told once, in words, when the service cannot be reached (as the desktop client's `onUnreachable`). */
  onUnreachable?: (message: string) => void;
}

/** The reference runner: the client with the simulated hypervisor, made from these options. */
export interface ReferenceRunnerOptions extends RunnerClientOptions {
  images: string[];
  dataDir: string;
  bootMs: number;
  /** How long destroying a machine takes (0 when left out), to test a runner lost while it destroys one. */
  destroyMs?: number;
  /**
   * Where machines connect as desktop apps (`/desktop`); `baseUrl` by default. Only code sets
   * it: tests that play the runner side of the service themselves but pair machines with a real one.
   */
  desktopBaseUrl?: string;
}

/** Makes the runner's hypervisor, given where its lines go. */
export type HypervisorFactory<H extends Hypervisor> = (out: (line: object) => void) => H;

/** Why the runner stopped. */
export type RunnerEnd = { reason: 'stopped' } | { reason: 'refused'; code: string; message: string };

const HELLO_TIMEOUT_MS = 10_000;
const DONE_TIMEOUT_MS = 30_000;

export class ReferenceRunner<H extends Hypervisor = SimulatedHypervisor> {
  /** Settles once, when the runner stops for good: stopped, or its hello refused. */
  readonly finished: Promise<RunnerEnd>;
  readonly hypervisor: H;
  private readonly options: RunnerClientOptions;
  private readonly out: (line: object) => void;
  private readonly journal = new CommandJournal(1000);
  private socket: Socket | null = null;
  /** True while this connection's hello is accepted. */
  private welcomed = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryDelay: number;
  private ended: RunnerEnd | null = null;
  private stopping: Promise<void> | null = null;
  private resolveFinished!: (end: RunnerEnd) => void;

  /** The reference runner: its machines are the simulated hypervisor's, made from `options`. */
  constructor(options: ReferenceRunnerOptions);
  /** A runner whose machines are those of the hypervisor `provide` makes. */
  constructor(options: RunnerClientOptions, provide: HypervisorFactory<H>);
  constructor(options: RunnerClientOptions | ReferenceRunnerOptions, provide?: HypervisorFactory<H>) {
    this.options = options;
    this.out = options.out ?? ((line) => process.stdout.write(`${JSON.stringify(line)}\n`));
    this.retryDelay = options.reconnectDelayMs ?? 1000;
    const out = (line: object): void => this.emitLine(line);
    this.hypervisor = provide ? provide(out) : (simulatedHypervisor(options as ReferenceRunnerOptions, out) as Hypervisor as H);
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve));
  }

  /** Connects; from then on it keeps connecting (with growing delays) until it is stopped or refused. */
  start(): void {
    if (this.socket) throw new Error('The runner is already started.');
    const socket = serviceSocket(this.options.baseUrl, '/runners', this.options);
    this.socket = socket;
    let toldUnreachable = false;
    socket.on('connect', () => {
      toldUnreachable = false;
      this.emitLine({ event: 'connected', base_url: this.options.baseUrl });
      this.sayHello(socket);
    });
    socket.on('disconnect', (reason) => {
      this.welcomed = false;
      this.stopHeartbeat();
      this.emitLine({ event: 'disconnected', reason });
      // socket.io does not come back by itself after the server hangs up; a runner does.
      if (reason === 'io server disconnect' && !this.ended && !this.stopping) this.retryLater(() => socket.connect());
    });
    socket.on('connect_error', (error) => {
      this.emitLine({ event: 'connect_error', message: error.message });
      if (!toldUnreachable && !this.ended) {
        toldUnreachable = true;
        this.options.onUnreachable?.(unreachableMessage(this.options.baseUrl, error.message));
      }
    });
    socket.on(Events.command, (payload: unknown, ack?: unknown) => {
      if (typeof ack === 'function') (ack as (reply: object) => void)({ ok: true });
      this.takeCommand(payload);
    });
    socket.on(Events.screen, (payload: unknown, ack?: unknown) => {
      void screenReply(this.hypervisor, payload).then((reply) => {
        if (typeof ack === 'function') (ack as (reply: object) => void)(reply);
      });
    });
    socket.on(Events.input, (payload: unknown, ack?: unknown) => {
      void inputReply(this.hypervisor, payload).then((reply) => {
        if (typeof ack === 'function') (ack as (reply: object) => void)(reply);
      });
    });
    this.emitLine({ event: 'connecting', base_url: this.options.baseUrl, name: this.options.name, slots: this.options.slots, images: this.hypervisor.images(), provider: this.hypervisor.provider });
    socket.connect();
  }

  /**
   * Stops taking work, destroys its machines (their desktop connections close), and
   * disconnects. Safe to call twice.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopHeartbeat();
      if (this.retryTimer) clearTimeout(this.retryTimer);
      const machines = this.hypervisor.ids();
      await this.hypervisor.destroyAll();
      for (const machine_id of machines) this.emitLine({ event: 'destroyed', machine_id, reason: 'runner stopped' });
      await this.hypervisor.close().catch((error: unknown) => this.emitLine({ event: 'close_failed', message: (error as Error).message }));
      this.end({ reason: 'stopped' });
    })();
    return this.stopping;
  }

  private hello(): RunnerHello {
    const machines = this.hypervisor.ids();
    return {
      token: this.options.token,
      provider: this.hypervisor.provider,
      version: this.options.version,
      labels: this.options.labels,
      slots: this.options.slots,
      images: [...this.hypervisor.images()],
      busy: machines.length,
      machines,
    };
  }

  private sayHello(socket: Socket): void {
    const hello = this.hello();
    socket.timeout(HELLO_TIMEOUT_MS).emit(Events.hello, hello, (error: Error | null, reply: unknown) => {
      if (this.ended || this.stopping || socket !== this.socket) return;
      if (error) {
        if (!socket.connected) return;
        this.emitLine({ event: 'hello', ok: false, code: 'timeout', message: 'The service did not answer the hello.' });
        socket.disconnect();
        this.retryLater(() => socket.connect());
        return;
      }
      const answer = reply as HelloReply | undefined;
      if (!answer || typeof answer !== 'object' || typeof answer.ok !== 'boolean') {
        this.refused('invalid', 'The service answered the hello with something unreadable.');
        return;
      }
      if (!answer.ok) {
        this.refused(answer.code, answer.message);
        return;
      }
      this.welcomed = true;
      this.retryDelay = this.options.reconnectDelayMs ?? 1000;
      this.emitLine({ event: 'hello', ok: true, runner_id: answer.runner_id, name: answer.name, scope: answer.scope, heartbeat_ms: answer.heartbeat_ms, machines: hello.machines });
      this.startHeartbeat(socket, answer.heartbeat_ms);
    });
  }

  private refused(code: string, message: string): void {
    this.emitLine({ event: 'hello', ok: false, code, message });
    // Marked as stopping at once, so the service's hang-up that follows is not retried.
    this.stopping ??= this.hypervisor
      .destroyAll()
      .then(() => this.hypervisor.close())
      .catch(() => undefined)
      .then(() => this.end({ reason: 'refused', code, message }));
  }

  private startHeartbeat(socket: Socket, everyMs: number): void {
    this.stopHeartbeat();
    const interval = Number.isFinite(everyMs) && everyMs > 0 ? everyMs : 10_000;
    this.heartbeat = setInterval(() => {
      if (!this.welcomed || !socket.connected) return;
      socket.timeout(interval).emit(Events.heartbeat, { busy: this.hypervisor.ids().length }, (error: Error | null, reply: unknown) => {
        const answer = reply as { ok?: boolean; code?: string; message?: string } | undefined;
        if (!error && answer?.ok === false) this.emitLine({ event: 'heartbeat_refused', code: answer.code, message: answer.message });
      });
    }, interval);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /** Carries out a command once; a repeat of a finished one is answered again, of a running one ignored. */
  private takeCommand(payload: unknown): void {
    if (this.stopping || this.ended) return;
    const command = payload as RunnerCommand | null;
    if (!command || typeof command !== 'object' || typeof command.command_id !== 'string' || !command.command_id) {
      this.emitLine({ event: 'command_unreadable' });
      return;
    }
    const taken = this.journal.take(command.command_id);
    if (taken === 'running') {
      this.emitLine({ event: 'command_repeated', command_id: command.command_id, type: command.type, running: true });
      return;
    }
    if (taken !== 'new') {
      this.emitLine({ event: 'command_repeated', command_id: command.command_id, type: command.type, running: false });
      this.sendDone(taken);
      return;
    }
    void carryOutCommand(this.hypervisor, command, (line) => this.emitLine(line)).then((done) => {
      this.journal.finish(done);
      this.sendDone(done);
    });
  }

  /**
   * Answers a command on the connection there is now. One made while disconnected is not kept:
   * the service sends unanswered commands again after the next hello, and the journal answers.
   */
  private sendDone(done: CommandDone): void {
    const socket = this.socket;
    if (!socket || !this.welcomed || this.ended) return;
    socket.timeout(DONE_TIMEOUT_MS).emit(Events.done, done, (error: Error | null) => {
      if (error) this.emitLine({ event: 'done_unacknowledged', command_id: done.command_id });
    });
  }

  private retryLater(reconnect: () => void): void {
    if (this.retryTimer) return;
    const delay = this.retryDelay;
    this.retryDelay = Math.min(this.retryDelay * 2, (this.options.reconnectDelayMs ?? 1000) * 10);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.ended && !this.stopping) reconnect();
    }, delay);
  }

  private end(end: RunnerEnd): void {
    if (this.ended) return;
    this.ended = end;
    this.stopHeartbeat();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.socket?.disconnect();
    this.emitLine({ event: 'stopped', reason: end.reason, ...(end.reason === 'refused' ? { code: end.code } : {}) });
    this.resolveFinished(end);
  }

  private emitLine(line: object): void {
    try {
      this.out(line);
    } catch {
      // A broken stdout (a closed pipe) must not take the machines down with it.
    }
  }
}

/** The reference runner's simulated hypervisor, from its options. */
function simulatedHypervisor(options: ReferenceRunnerOptions, out: (line: object) => void): SimulatedHypervisor {
  return new SimulatedHypervisor({
    baseUrl: options.desktopBaseUrl ?? options.baseUrl,
    images: options.images,
    slots: options.slots,
    bootMs: options.bootMs,
    destroyMs: options.destroyMs ?? 0,
    store: new DiskStore(options.dataDir),
    out,
    path: options.path,
    reconnectDelayMs: options.reconnectDelayMs,
  });
}
