import { randomInt } from 'node:crypto';
import type net from 'node:net';
import { connectUnix } from './qmp';

/**
 * A client of the QEMU guest agent (qemu-ga in the guest) over the host end of its virtio-serial
 * port, a unix socket. The agent answers one command at a time, without ids, so commands are
 * sent one after another; `guest-sync-delimited` (a 0xFF byte, then the sync with a random id)
 * puts the stream back in step after a connection, a restore from a snapshot, or an answer that
 * came too late: everything up to the agent's own 0xFF and the answer with that id is dropped.
 */

export class GuestAgentError extends Error {
  constructor(
    readonly command: string,
    readonly errorClass: string,
    description: string,
  ) {
    super(`guest agent ${command}: ${errorClass}: ${description}`);
    this.name = 'GuestAgentError';
  }
}

/** `guest-exec-status` as the agent answers it (base64 output only once the process ended). */
export interface GuestExecStatus {
  exited: boolean;
  exitcode?: number;
  signal?: number;
  'out-data'?: string;
  'err-data'?: string;
  'out-truncated'?: boolean;
  'err-truncated'?: boolean;
}

export interface GuestExecRequest {
  path: string;
  arg?: string[];
  /** The whole environment of the process (`NAME=value`). */
  env?: string[];
  /** Standard input, as bytes. */
  input?: Buffer;
  captureOutput?: boolean;
}

const SYNC_ATTEMPT_MS = 1000;
const COMMAND_TIMEOUT_MS = 15_000;
const DELIMITER = 0xff;

export class GuestAgent {
  private buffer = Buffer.alloc(0);
  /** Until the next sync succeeds, answers cannot be trusted to belong to the command sent. */
  private inStep = false;
  private waiter: ((message: Record<string, unknown>) => void) | null = null;
  private syncing: number | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
    });
  }

  /** Connects to the agent's socket (QEMU's end of the virtio-serial port); `sync` before the first command. */
  static async connect(socketPath: string, timeoutMs = 10_000): Promise<GuestAgent> {
    return new GuestAgent(await connectUnix(socketPath, timeoutMs));
  }

  /**
   * Waits until the agent answers a sync, trying again every second (a guest still booting or
   * just restored does not read its port yet); rejects after `timeoutMs`.
   */
  sync(timeoutMs: number): Promise<void> {
    return this.serial(() => this.resync(timeoutMs));
  }

  /** Runs one agent command; resolves with its `return`. */
  execute<T = unknown>(command: string, args?: Record<string, unknown>, timeoutMs = COMMAND_TIMEOUT_MS): Promise<T> {
    return this.serial(async () => {
      if (!this.inStep) await this.resync(timeoutMs);
      this.socket.write(`${JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}) })}\n`);
      const answer = await this.nextMessage(timeoutMs);
      if (!answer) {
        // Its answer may still come and would be taken for the next command's.
        this.inStep = false;
        throw new Error(`guest agent ${command}: no answer within ${timeoutMs} ms.`);
      }
      if ('error' in answer) {
        const error = answer.error as { class?: string; desc?: string };
        throw new GuestAgentError(command, error.class ?? 'GenericError', error.desc ?? 'failed');
      }
      return answer.return as T;
    });
  }

  /** Starts a process in the guest (as root, the agent's user); resolves with its pid. */
  async exec(request: GuestExecRequest): Promise<number> {
    const result = await this.execute<{ pid: number }>('guest-exec', {
      path: request.path,
      ...(request.arg ? { arg: request.arg } : {}),
      ...(request.env ? { env: request.env } : {}),
      ...(request.input ? { 'input-data': request.input.toString('base64') } : {}),
      'capture-output': request.captureOutput ?? true,
    });
    return result.pid;
  }

  /** The state of a process started by `exec`; once `exited`, the agent forgets it. */
  execStatus(pid: number): Promise<GuestExecStatus> {
    return this.execute<GuestExecStatus>('guest-exec-status', { pid });
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
  }

  private async resync(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.closed) throw new Error('guest agent: the connection closed (QEMU exited?).');
      const id = randomInt(1, 2 ** 47);
      this.syncing = id;
      this.inStep = false;
      this.socket.write(Buffer.from([DELIMITER]));
      this.socket.write(`${JSON.stringify({ execute: 'guest-sync-delimited', arguments: { id } })}\n`);
      const answer = await this.nextMessage(Math.min(SYNC_ATTEMPT_MS, Math.max(1, deadline - Date.now())));
      if (answer && answer.return === id) {
        this.syncing = null;
        this.inStep = true;
        return;
      }
      if (Date.now() >= deadline || this.closed) {
        this.syncing = null;
        throw new Error(`guest agent: no answer to a sync within ${timeoutMs} ms (is qemu-guest-agent running in the guest?).`);
      }
    }
  }

  /** Runs `work` after the commands before it (the agent answers one at a time). */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** The next whole answer (the sync's, while syncing), or null after `timeoutMs`. */
  private nextMessage(timeoutMs: number): Promise<Record<string, unknown> | null> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        resolve(null);
      }, timeoutMs);
      this.waiter = (message) => {
        clearTimeout(timer);
        this.waiter = null;
        resolve(message);
      };
      this.drain();
    });
  }

  private read(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    this.drain();
  }

  private drain(): void {
    for (;;) {
      if (this.syncing !== null) {
        // While syncing, only what follows the agent's delimiter counts.
        const delimiter = this.buffer.lastIndexOf(DELIMITER);
        if (delimiter >= 0) this.buffer = this.buffer.subarray(delimiter + 1);
      }
      const newline = this.buffer.indexOf(0x0a);
      if (newline < 0) return;
      const line = this.buffer.subarray(0, newline).toString('utf8').trim();
      this.buffer = this.buffer.subarray(newline + 1);
      if (!line) continue;
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      if (this.syncing !== null && message.return !== this.syncing) continue;
      if (!this.waiter) continue;
      this.waiter(message);
      return;
    }
  }
}
