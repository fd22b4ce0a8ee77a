import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

/**
 * QEMU processes tied to the runner that started them, so that none outlives it:
 *
 * - each is started through `setpriv --pdeathsig KILL` (util-linux), which sets the parent-death
 *   signal and then executes QEMU in its place: when the runner's process dies, however it dies
 *   (SIGKILL included), the kernel kills its QEMUs;
 * - each runs in a process group of its own (not the runner's: a Ctrl+C reaches the runner,
 *   which then ends its machines in order) and is ended with SIGKILL to that group;
 * - `QemuProcesses` keeps every live one and kills them all on the runner's `exit`, the last
 *   resort of a runner that exits without destroying its machines.
 *
 * `-daemonize` is not used: a daemonized QEMU has no parent to die with.
 */

export interface QemuExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class QemuProcess {
  /** Settles when the process has ended and been reaped. */
  readonly exited: Promise<QemuExit>;
  private ended: QemuExit | null = null;

  constructor(
    readonly pid: number,
    exited: Promise<QemuExit>,
    /** QEMU's stderr, a file. */
    readonly logFile: string,
  ) {
    this.exited = exited.then((end) => (this.ended = end));
  }

  get running(): boolean {
    return this.ended === null;
  }

  /** Kills the process group at once and waits for the process to be reaped. */
  async kill(): Promise<QemuExit> {
    if (this.ended) return this.ended;
    killGroup(this.pid);
    return this.exited;
  }

  /** The end of QEMU's stderr, to say why it stopped. */
  logTail(bytes = 2000): string {
    try {
      return readFileSync(this.logFile, 'utf8').slice(-bytes).trim();
    } catch {
      return '';
    }
  }
}

export class QemuProcesses {
  private readonly live = new Set<QemuProcess>();
  private readonly onExit = (): void => {
    for (const child of this.live) killGroup(child.pid);
  };

  constructor(private readonly qemuBinary = 'qemu-system-x86_64') {
    process.on('exit', this.onExit);
  }

  /** Starts QEMU with `args`, its stdout and stderr appended to `logFile`. */
  start(args: readonly string[], logFile: string): QemuProcess {
    const log = openSync(logFile, 'a');
    let child;
    try {
      child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', this.qemuBinary, ...args], { detached: true, stdio: ['ignore', log, log] });
    } finally {
      closeSync(log);
    }
    const exited = new Promise<QemuExit>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', () => resolve({ code: null, signal: null }));
    });
    if (child.pid === undefined) throw new Error(`Cannot start ${this.qemuBinary} (is qemu-system-x86 installed?).`);
    const process_ = new QemuProcess(child.pid, exited, logFile);
    this.live.add(process_);
    void process_.exited.then(() => this.live.delete(process_));
    return process_;
  }

  /** The QEMUs running now. */
  running(): QemuProcess[] {
    return [...this.live];
  }

  /** Kills every QEMU and waits for them; then stops watching the runner's exit. */
  async close(): Promise<void> {
    await Promise.all([...this.live].map((child) => child.kill()));
    process.off('exit', this.onExit);
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is gone already.
  }
}
