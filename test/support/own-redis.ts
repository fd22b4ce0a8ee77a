import { spawn, type ChildProcess } from 'node:child_process';
import { accepts, freePort } from './ports';
import { waitFor } from './service';

/** A redis-server of a test's own (never the shared one): it may be killed, stopped, flushed. */
export interface OwnRedis {
  url: string;
  /** `kill -9`: everything it held is gone (it keeps nothing on disk). */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  /** `SIGSTOP` / `SIGCONT`: a Redis that keeps its connections open and answers nothing. */
  pause(): void;
  resume(): void;
  /** FLUSHALL through redis-cli. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts a redis-server without persistence on a free port. */
export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess;
  const launch = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'], {
      stdio: 'ignore',
    });
    await waitFor(() => accepts('127.0.0.1', port), 10_000, `redis-server on port ${port}`);
  };
  await launch();
  const stopChild = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    await exited(child);
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    kill: stopChild,
    restart: launch,
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
    async flush() {
      const cli = spawn('redis-cli', ['-p', String(port), 'flushall'], { stdio: 'ignore' });
      await exited(cli);
      if (cli.exitCode !== 0) throw new Error(`redis-cli flushall exited with ${cli.exitCode}`);
    },
    close: stopChild,
  };
}
