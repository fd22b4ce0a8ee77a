import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * `npm run bench` compiles the project and the benches with tsc (tsconfig.bench.json, into
 * .bench-dist/) and runs the JavaScript, as production runs the compiled build: code run through
 * tsx costs more (its loader thread, and every named closure gets its name set as a property).
 * The benches also still run from their sources (`node --import tsx bench/run.ts NAME`).
 */
export const COMPILED = __filename.endsWith('.js');

/** The project's root folder (the one with package.json), from sources or from .bench-dist/. */
export const PROJECT_ROOT = (() => {
  let folder = __dirname;
  while (!fs.existsSync(path.join(folder, 'package.json'))) folder = path.dirname(folder);
  return folder;
})();

/** A bench file named by its source (`servers/follow-load.ts`) as this run loads it. */
export function benchFile(name: string): string {
  return path.join(__dirname, '..', COMPILED ? name.replace(/\.ts$/, '.js') : name);
}

/** Node flags that load a bench file: tsx when running from sources. */
export const LOADER_FLAGS: string[] = COMPILED ? [] : ['--import', 'tsx'];

/** Runs `bench/servers/FILE` in a child process with `env` added. */
export function forkServer(file: string, env: Record<string, string>, execArgv: string[] = []): ChildProcess {
  return fork(benchFile(`servers/${file}`), [], { execArgv: [...LOADER_FLAGS, ...execArgv], env: { ...process.env, ...env }, stdio: 'inherit' });
}

/** `--cpu-prof` into `BENCH_PROFILE_DIR` when it is set (a CPU profile of the process when it exits). */
export function cpuProfileFlags(): string[] {
  return process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
}

/** A bench server started and ready: its process and the first message it sent (its port…). */
export interface ReadyServer {
  child: ChildProcess;
  message: Record<string, unknown>;
}

/**
 * The server processes of one bench run: `start` forks one and waits for its first message,
 * `stop` ends one with SIGTERM (10 s at most), `stopAll` ends those left. Whatever happens to
 * the bench, its processes go with it (SIGKILL when the bench's process exits).
 */
export function benchServers(): {
  start(file: string, env: Record<string, string>, flags?: string[]): Promise<ReadyServer>;
  stop(child: ChildProcess): Promise<void>;
  stopAll(): Promise<void>;
} {
  const children: ChildProcess[] = [];
  process.once('exit', () => children.forEach((child) => child.kill('SIGKILL')));
  const stop = async (child: ChildProcess): Promise<void> => {
    const exited = new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  };
  return {
    start(file, env, flags = []) {
      const child = forkServer(file, env, flags);
      children.push(child);
      return new Promise((resolve, reject) => {
        child.once('message', (message: Record<string, unknown>) => resolve({ child, message }));
        child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
      });
    },
    stop,
    async stopAll() {
      await Promise.all(children.map(stop));
    },
  };
}

/**
 * The Node flags the Procfile gives a process type (`web: node FLAGS bin/deskhand.js …`), so that
 * a bench runs its server as production does.
 */
export function procfileNodeFlags(type: string): string[] {
  const procfile = fs.readFileSync(path.join(PROJECT_ROOT, 'Procfile'), 'utf8');
  const line = procfile.split('\n').find((candidate) => candidate.startsWith(`${type}:`));
  if (!line) throw new Error(`The Procfile has no ${type} process`);
  const words = line.slice(type.length + 1).trim().split(/\s+/);
  return words.slice(1, words.indexOf('bin/deskhand.js'));
}

/** For a bench server's `heap` message: heap in use after a full collection (run with --expose-gc). */
export function heapAfterFullGc(): { type: 'heap'; heapUsed: number } {
  (globalThis as { gc?: () => void }).gc?.();
  return { type: 'heap', heapUsed: process.memoryUsage().heapUsed };
}

/** Milliseconds of a /proc clock tick (USER_HZ is 100 on Linux). */
export const CPU_TICK_MS = 10;

/**
 * The CPU time (user + system, ms) used so far by the PostgreSQL backends connected to the
 * database `name` (their process titles name it), from Linux /proc: what a bench's statements
 * cost the server beside the other databases' work on the machine. A backend that exits between
 * two readings takes its time with it; the benches' pools keep theirs.
 */
export function databaseBackendsCpuMs(name: string): number {
  let total = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let title: string;
    try {
      title = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (title.startsWith('postgres: ') && title.includes(` ${name} `)) total += processCpuMs(pid)?.ms ?? 0;
  }
  return total;
}

/** A process's name and the CPU time (user + system) it has used so far, from Linux /proc; null when gone. */
export function processCpuMs(pid: number | string): { name: string; ms: number } | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ms: (Number(fields[11]) + Number(fields[12])) * CPU_TICK_MS };
  } catch {
    return null;
  }
}

/**
 * Lowers the priority of every thread of this process to `nice` (Linux: a priority is a
 * thread's, so each of /proc/self/task is set; threads started later, such as libuv's pool
 * that encodes the simulated screens, take their creator's). For benches whose own process holds
 * the simulated machines or desktops: in production those run on their own hardware, not on the
 * service's cores, so here they get a core only when the service's processes (started before,
 * at normal priority) leave one. Returns the value set, or null where it could not be set.
 */
export function yieldCoresToService(nice: number): number | null {
  try {
    for (const tid of fs.readdirSync('/proc/self/task')) os.setPriority(Number(tid), nice);
    return nice;
  } catch {
    return null;
  }
}
