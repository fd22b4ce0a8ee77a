import { spawn } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';

/**
 * Host commands the QEMU provider runs to completion (debootstrap, apt in a chroot, mkfs,
 * qemu-img): each one's output goes to a log file, and a failure says which command failed with
 * the tail of what it printed.
 */

export interface CommandOptions {
  /** Appended to with the command line and everything it prints. */
  log?: WriteStream;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Ended (SIGKILL to its process group) after this long. */
  timeoutMs?: number;
}

export class HostCommandError extends Error {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly tail: string,
  ) {
    super(`${command} failed (${exitCode === null ? 'killed' : `exit ${exitCode}`})${tail ? `:\n${tail}` : ''}`);
    this.name = 'HostCommandError';
  }
}

const TAIL_BYTES = 4000;

/** Runs a command; resolves with its stdout (also logged), rejects with a `HostCommandError`. */
export function runCommand(file: string, args: readonly string[], options: CommandOptions = {}): Promise<string> {
  const line = [file, ...args].map((part) => (/^[\w@%+=:,./-]+$/.test(part) ? part : `'${part.replace(/'/g, `'\\''`)}'`)).join(' ');
  options.log?.write(`\n$ ${line}\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let tail = '';
    const keep = (chunk: Buffer, toStdout: boolean): void => {
      const text = chunk.toString('utf8');
      if (toStdout) stdout += text;
      tail = (tail + text).slice(-TAIL_BYTES);
      options.log?.write(chunk);
    };
    child.stdout.on('data', (chunk: Buffer) => keep(chunk, true));
    child.stderr.on('data', (chunk: Buffer) => keep(chunk, false));
    const timer = options.timeoutMs
      ? setTimeout(() => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // Already gone.
          }
        }, options.timeoutMs)
      : null;
    child.on('error', (error) => {
      if (timer) clearTimeout(timer);
      reject(new HostCommandError(line, null, error.message));
    });
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new HostCommandError(line, code, tail.trim()));
    });
  });
}

/** Opens a log file for appending. */
export function openLog(file: string): WriteStream {
  return createWriteStream(file, { flags: 'a' });
}
