import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { GuestAgent } from './guest-agent';

/**
 * A setup or check script run in the guest as `user` through the guest agent, with a time limit
 * (docs/runners.md, `machine.run`). The agent starts, as root, a small sh wrapper that:
 *
 * - goes to /home/user and runs `timeout -k 5 LIMIT setpriv --reuid user … bash -c SCRIPT`, so
 *   the script and everything it starts share `timeout`'s process group, which is ended (TERM,
 *   then KILL 5 s later) at the limit; `setpriv` changes the user without a new session (unlike
 *   su/runuser -c, whose setsid would take the script out of that group);
 * - sends the script's stdout and stderr to files, not to the agent's pipes, so an app the script
 *   leaves running in the background (`mousepad notes.txt &`) neither holds the agent's output
 *   open nor keeps the script from ending, and keeps running for the task;
 * - prints the last 16 KB of each file and exits with the script's status.
 *
 * The host polls `guest-exec-status` with growing pauses, and gives up on its own a little after
 * the limit should have ended everything (a guest that stopped answering).
 */

export interface ScriptResult {
  exit_code: number;
  /** stdout then stderr, the last 16 KB. */
  output: string;
  stdout: string;
  stderr: string;
  /** Ended at its limit (exit code 124, or 137 when TERM was not enough). */
  timed_out: boolean;
  duration_ms: number;
}

export interface ScriptOptions {
  timeoutMs: number;
  /** The guest user the script runs as. */
  user?: string;
}

export const OUTPUT_TAIL_BYTES = 16 * 1024;
const KILL_AFTER_S = 5;
/** Beyond the limit and the KILL, how long the host still waits for the wrapper to report. */
const HOST_GRACE_MS = 15_000;

/** The environment a script sees: the user's, with the session's display and buses. */
export function scriptEnvironment(user = 'user', home = `/home/${user}`, uid = 1000): string[] {
  return [
    `HOME=${home}`,
    `USER=${user}`,
    `LOGNAME=${user}`,
    'SHELL=/bin/bash',
    'PATH=/usr/local/bin:/usr/bin:/bin',
    'LANG=C.UTF-8',
    'DISPLAY=:0',
    `XDG_RUNTIME_DIR=/run/user/${uid}`,
    `DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/${uid}/bus`,
  ];
}

// $1 the limit in seconds, $2 the user, $3 the script, $4 a random mark. Runs as root, from the
// guest agent. Every process costs some 50 ms under TCG, so it starts few: sh, timeout,
// setpriv (which becomes bash), one tail for both files (the mark, appended to stdout's file,
// tells where its tail ends and stderr's begins), rm.
const WRAPPER = [
  'cd "$HOME" || exit 125',
  'o=/run/deskhand-script.$$.out e=/run/deskhand-script.$$.err',
  `timeout -k ${KILL_AFTER_S} "$1" setpriv --reuid="$2" --regid="$2" --init-groups -- bash -c "$3" </dev/null >"$o" 2>"$e"`,
  'code=$?',
  'printf %s "$4" >>"$o"',
  `tail -q -c ${OUTPUT_TAIL_BYTES + 64} "$o" "$e"`,
  'rm -f "$o" "$e"',
  'exit $code',
].join('\n');

/** Runs `script` in the guest as the user, within `timeoutMs`. */
export async function runGuestScript(agent: GuestAgent, script: string, options: ScriptOptions): Promise<ScriptResult> {
  const user = options.user ?? 'user';
  const started = Date.now();
  const limitS = Math.max(0.1, options.timeoutMs / 1000);
  const mark = `--deskhand-${randomBytes(16).toString('hex')}--`;
  const pid = await agent.exec({
    path: '/bin/sh',
    arg: ['-c', WRAPPER, 'deskhand-script', limitS.toFixed(3), user, script, mark],
    env: scriptEnvironment(user),
    captureOutput: true,
  });
  const giveUpAt = started + options.timeoutMs + KILL_AFTER_S * 1000 + HOST_GRACE_MS;
  let pause = 10;
  for (;;) {
    const status = await agent.execStatus(pid);
    if (status.exited) {
      const [stdout, stderr] = splitTails(Buffer.from(status['out-data'] ?? '', 'base64'), mark);
      const exit_code = status.exitcode ?? (status.signal !== undefined ? 128 + status.signal : -1);
      const duration_ms = Date.now() - started;
      // timeout's 124 (TERM) or 137 (KILL) only counts as the limit when the limit has passed:
      // a script may exit 124 itself.
      const timed_out = (exit_code === 124 || exit_code === 137) && duration_ms >= options.timeoutMs;
      return { exit_code, output: tail(stdout + stderr), stdout, stderr, timed_out, duration_ms };
    }
    if (Date.now() >= giveUpAt) {
      return { exit_code: 124, output: '', stdout: '', stderr: '', timed_out: true, duration_ms: Date.now() - started };
    }
    await sleep(pause);
    pause = Math.min(pause * 2, 250);
  }
}

/** The wrapper's output: stdout's tail, the mark, stderr's tail; each cut to its last 16 KB. */
function splitTails(bytes: Buffer, mark: string): [string, string] {
  const at = bytes.indexOf(mark);
  if (at < 0) return [tail(bytes.toString('utf8')), ''];
  return [tail(bytes.subarray(0, at).toString('utf8')), tail(bytes.subarray(at + Buffer.byteLength(mark)).toString('utf8'))];
}

/** A tail cut inside a character starts with replacement characters: they go. */
function dropBrokenStart(text: string): string {
  return text.replace(/^\uFFFD+/, '');
}

/** The last 16 KB of a text, cut at a character boundary. */
function tail(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= OUTPUT_TAIL_BYTES) return text;
  return dropBrokenStart(bytes.subarray(bytes.length - OUTPUT_TAIL_BYTES).toString('utf8'));
}
