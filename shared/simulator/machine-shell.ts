import { Bash, type IFileSystem } from 'just-bash';
import { HOME } from './machine-disk';

/**
 * The simulated machine's shell, where setup and check scripts run (docs/reference-runner.md, "The shell"): bash as
 * just-bash interprets it, over the machine's disk, with `HOME=/home/user` and $HOME as the
 * working directory. No network and no real processes: only the disk changes.
 */

/** How much output a script's result keeps: its last 16 KB (docs/runners.md, `machine.run`). */
export const OUTPUT_KEPT_BYTES = 16 * 1024;

/** The exit status of a script stopped at its deadline, as `timeout(1)` reports it. */
export const TIMEOUT_EXIT_CODE = 124;

export interface ScriptResult {
  exit_code: number;
  /** stdout, then stderr: the last 16 KB of both. */
  output: string;
  /** stdout alone, its last 16 KB. */
  stdout: string;
  /** stderr alone, its last 16 KB. */
  stderr: string;
  timed_out: boolean;
}

/** Runs one script to its end or its deadline. */
export async function runScript(fs: IFileSystem, script: string, options: { timeoutMs: number }): Promise<ScriptResult> {
  const bash = new Bash({ fs, cwd: HOME, env: { HOME, USER: 'user', LANG: 'C.UTF-8' } });
  const deadline = deadlineSignal(options.timeoutMs);
  try {
    const result = await bash.exec(script, { signal: deadline.signal, cwd: HOME });
    const timedOut = deadline.passed();
    return {
      exit_code: timedOut ? TIMEOUT_EXIT_CODE : result.exitCode,
      output: lastBytes(result.stdout + result.stderr, OUTPUT_KEPT_BYTES),
      stdout: lastBytes(result.stdout, OUTPUT_KEPT_BYTES),
      stderr: lastBytes(result.stderr, OUTPUT_KEPT_BYTES),
      timed_out: timedOut,
    };
  } finally {
    deadline.clear();
  }
}

/**
 * An abort signal that fires at a deadline. A timer alone is not enough: a busy loop in the
 * interpreter runs on microtasks and never lets a timer fire, so the signal also compares the
 * clock whenever the interpreter reads `aborted` (at every statement).
 */
function deadlineSignal(timeoutMs: number): { signal: AbortSignal; passed: () => boolean; clear: () => void } {
  const controller = new AbortController();
  const deadline = Date.now() + timeoutMs;
  const abort = (): void => controller.abort(new Error(`The script ran past its ${timeoutMs} ms.`));
  const timer = setTimeout(abort, timeoutMs);
  const signal = new Proxy(controller.signal, {
    get(target, property) {
      if (property === 'aborted' && !target.aborted && Date.now() >= deadline) abort();
      const value: unknown = Reflect.get(target, property, target);
      // AbortSignal's methods check their receiver, so they run on the real signal.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { signal, passed: () => controller.signal.aborted, clear: () => clearTimeout(timer) };
}

/** The end of `text`, at most `max` bytes of UTF-8, cut at a character boundary. */
export function lastBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let start = bytes.length - max;
  // Continuation bytes (10xxxxxx) are the middle of a character: start after them.
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString('utf8');
}
