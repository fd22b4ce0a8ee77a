import { EventEmitter } from 'node:events';
import net from 'node:net';

/**
 * A client of the QEMU Machine Protocol (QMP) over a unix socket: JSON objects separated by
 * line breaks; a greeting, then `qmp_capabilities`; each command carries an `id` that its answer
 * repeats; events (`{ event, data, timestamp }`) arrive between answers. No npm package of it is
 * kept up (none in the registry's lists); the protocol is small.
 */

export interface QmpEvent {
  event: string;
  data?: Record<string, unknown>;
  timestamp?: { seconds: number; microseconds: number };
}

export class QmpError extends Error {
  constructor(
    readonly command: string,
    readonly errorClass: string,
    description: string,
  ) {
    super(`QMP ${command}: ${errorClass}: ${description}`);
    this.name = 'QmpError';
  }
}

interface Pending {
  command: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

const COMMAND_TIMEOUT_MS = 30_000;

export class QmpClient extends EventEmitter<{ event: [QmpEvent]; close: [] }> {
  /** The greeting's `QMP.version.qemu` (major, minor, micro). */
  version: { major: number; minor: number; micro: number } | null = null;
  private readonly pending = new Map<string, Pending>();
  private buffer = '';
  private nextId = 1;
  private closed = false;

  private constructor(private readonly socket: net.Socket) {
    super();
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.read(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      for (const [id, pending] of this.pending) {
        clearTimeout(pending.timer);
        pending.reject(new Error(`QMP ${pending.command}: the connection closed (QEMU exited?).`));
        this.pending.delete(id);
      }
      this.emit('close');
    });
  }

  /** Connects to QEMU's QMP socket, reads its greeting and enters command mode. */
  static async connect(socketPath: string, timeoutMs = 10_000): Promise<QmpClient> {
    const socket = await connectUnix(socketPath, timeoutMs);
    const client = new QmpClient(socket);
    const greeting = await client.nextMessage(timeoutMs);
    const qmp = (greeting as { QMP?: { version?: { qemu?: QmpClient['version'] } } }).QMP;
    if (!qmp) {
      socket.destroy();
      throw new Error(`${socketPath} is not a QMP socket (no greeting).`);
    }
    client.version = qmp.version?.qemu ?? null;
    await client.execute('qmp_capabilities');
    return client;
  }

  /** Runs a command; resolves with its `return`, rejects with a `QmpError` for its `error`. */
  execute<T = unknown>(command: string, args?: Record<string, unknown>, timeoutMs = COMMAND_TIMEOUT_MS): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`QMP ${command}: the connection is closed.`));
    const id = `c${this.nextId++}`;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`QMP ${command}: no answer within ${timeoutMs} ms.`));
      }, timeoutMs);
      this.pending.set(id, { command, resolve: resolve as (value: unknown) => void, reject, timer });
      this.socket.write(`${JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}), id })}\n`);
    });
  }

  /** The next event named `name` (and matching `accept`), or a rejection after `timeoutMs`. */
  waitForEvent(name: string, timeoutMs: number, accept: (event: QmpEvent) => boolean = () => true): Promise<QmpEvent> {
    return new Promise((resolve, reject) => {
      const onEvent = (event: QmpEvent): void => {
        if (event.event !== name || !accept(event)) return;
        done();
        resolve(event);
      };
      const onClose = (): void => {
        done();
        reject(new Error(`QMP: the connection closed before the event ${name}.`));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`QMP: no ${name} event within ${timeoutMs} ms.`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        this.off('event', onEvent);
        this.off('close', onClose);
      };
      this.on('event', onEvent);
      this.on('close', onClose);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private greetingWaiter: ((message: unknown) => void) | null = null;

  private nextMessage(timeoutMs: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`QMP: no greeting within ${timeoutMs} ms.`)), timeoutMs);
      this.greetingWaiter = (message) => {
        clearTimeout(timer);
        resolve(message);
      };
    });
  }

  private read(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      if (!line) continue;
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      this.dispatch(message);
    }
  }

  private dispatch(message: Record<string, unknown>): void {
    if (this.greetingWaiter && 'QMP' in message) {
      const waiter = this.greetingWaiter;
      this.greetingWaiter = null;
      waiter(message);
      return;
    }
    if (typeof message.event === 'string') {
      this.emit('event', message as unknown as QmpEvent);
      return;
    }
    const id = typeof message.id === 'string' ? message.id : null;
    const pending = id ? this.pending.get(id) : undefined;
    if (!id || !pending) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    if ('error' in message) {
      const error = message.error as { class?: string; desc?: string };
      pending.reject(new QmpError(pending.command, error.class ?? 'GenericError', error.desc ?? 'failed'));
    } else {
      pending.resolve(message.return);
    }
  }
}

/** Connects to a unix socket, retrying while it does not exist yet or refuses (QEMU still starting). */
export async function connectUnix(socketPath: string, timeoutMs: number, signal?: AbortSignal): Promise<net.Socket> {
  const deadline = Date.now() + timeoutMs;
  let delay = 10;
  for (;;) {
    try {
      return await new Promise<net.Socket>((resolve, reject) => {
        const socket = net.createConnection(socketPath);
        socket.once('connect', () => {
          socket.removeAllListeners('error');
          resolve(socket);
        });
        socket.once('error', reject);
      });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== 'ENOENT' && code !== 'ECONNREFUSED') || Date.now() >= deadline || signal?.aborted) {
        throw new Error(`Cannot connect to ${socketPath}: ${(error as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 200);
    }
  }
}
