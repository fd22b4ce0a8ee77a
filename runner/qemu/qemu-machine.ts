import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GuestAgent } from './guest-agent';
import { runGuestScript, type ScriptOptions, type ScriptResult } from './guest-script';
import { runCommand } from './host-commands';
import { QmpClient } from './qmp';
import { qemuArgs, type MachineHardware, type MachinePlaces } from './qemu-args';
import type { QemuProcess, QemuProcesses } from './qemu-process';

/**
 * One machine: a QEMU process on its own qcow2 overlay, with its QMP and guest agent
 * connections. It is started either cold (a boot of the disk, a minute or more under TCG) or
 * from a saved running state (`-incoming`), the way every machine of a start state starts.
 */

export interface MachineStart {
  /** The machine's name (its files and QEMU's `-name`). */
  name: string;
  /** The machine's folder: overlay, sockets, logs. Removed when the machine is destroyed. */
  dir: string;
  hardware: MachineHardware;
  processes: QemuProcesses;
  /** The disk the overlay is made on (an image's disk or a snapshot's frozen overlay). */
  backingDisk: string;
  /** The saved running state to start from; a cold boot without it. */
  incomingState?: string;
  forward?: MachinePlaces['forward'];
  /** How long until the guest agent answers. */
  readyTimeoutMs: number;
}

/** Where the time of a start went, in milliseconds. */
export interface StartTimings {
  overlay_ms: number;
  /** Until QEMU's QMP answered. */
  qmp_ms: number;
  /** Until the guest ran (a restore: the state loaded). */
  running_ms: number;
  /** Until the guest agent answered: the machine is ready for scripts. */
  agent_ms: number;
}

/** Unix socket paths are limited to 107 bytes. */
const SOCKET_PATH_MAX = 107;

export class QemuMachine {
  private destroyed: Promise<void> | null = null;

  private constructor(
    readonly name: string,
    readonly dir: string,
    readonly places: MachinePlaces,
    readonly qemu: QemuProcess,
    readonly qmp: QmpClient,
    readonly agent: GuestAgent,
    readonly timings: StartTimings,
  ) {}

  /** Makes the overlay, starts QEMU, and resolves once the guest agent answers. */
  static async start(start: MachineStart): Promise<QemuMachine> {
    const began = Date.now();
    await mkdir(start.dir, { recursive: true });
    const places: MachinePlaces = {
      disk: path.join(start.dir, 'disk.qcow2'),
      qmpSocket: path.join(start.dir, 'qmp.sock'),
      agentSocket: path.join(start.dir, 'agent.sock'),
      vncSocket: path.join(start.dir, 'vnc.sock'),
      serialLog: path.join(start.dir, 'serial.log'),
      incomingState: start.incomingState,
      forward: start.forward,
    };
    for (const socket of [places.qmpSocket, places.agentSocket, places.vncSocket]) {
      if (Buffer.byteLength(socket) > SOCKET_PATH_MAX) throw new Error(`The machine folder's path is too long for a unix socket (${socket}); use a shorter run folder.`);
    }
    await runCommand('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', start.backingDisk, '-F', 'qcow2', places.disk]);
    const overlay_ms = Date.now() - began;

    const qemu = start.processes.start(qemuArgs(start.name, start.hardware, places), path.join(start.dir, 'qemu.log'));
    let qmp: QmpClient | null = null;
    let agent: GuestAgent | null = null;
    const failed = qemu.exited.then((end) => {
      throw new Error(`QEMU ended while the machine started (${end.signal ?? `exit ${end.code}`}): ${qemu.logTail() || 'no message'}`);
    });
    failed.catch(() => undefined);
    try {
      qmp = await Promise.race([QmpClient.connect(places.qmpSocket, 15_000), failed]);
      const qmp_ms = Date.now() - began;
      await Promise.race([waitRunning(qmp, start.readyTimeoutMs), failed]);
      const running_ms = Date.now() - began;
      agent = await Promise.race([GuestAgent.connect(places.agentSocket, 5_000), failed]);
      await Promise.race([agent.sync(Math.max(1000, start.readyTimeoutMs - (Date.now() - began))), failed]);
      const agent_ms = Date.now() - began;
      return new QemuMachine(start.name, start.dir, places, qemu, qmp, agent, { overlay_ms, qmp_ms, running_ms, agent_ms });
    } catch (error) {
      agent?.close();
      qmp?.close();
      await qemu.kill();
      await rm(start.dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Runs a script in the guest as `user` (guest-script.ts). */
  runScript(script: string, options: ScriptOptions): Promise<ScriptResult> {
    return runGuestScript(this.agent, script, options);
  }

  /**
   * Sets the guest's clock to the host's: a machine restored from a state saved minutes or days
   * ago would otherwise go on from then. `date -s` through the agent (about 0.1 s under TCG),
   * not the agent's guest-set-time, which then writes the emulated hardware clock with hwclock
   * and waits up to a second for its tick.
   */
  async setClock(): Promise<void> {
    await this.runAsRoot('/bin/date', ['-u', '-s', `@${(Date.now() / 1000).toFixed(3)}`]);
  }

  /**
   * Writes what the guest's file systems hold in memory to its disk (`sync`). A saved state
   * carries the guest's page cache, so its disk alone would miss what was written last: a disk
   * version that is ever booted without its state (a runner with other hardware) needs it synced.
   */
  async syncDisks(): Promise<void> {
    await this.runAsRoot('/bin/sync', []);
  }

  /** Runs a program in the guest as root through the agent and waits for it to end. */
  private async runAsRoot(program: string, args: string[]): Promise<void> {
    const pid = await this.agent.exec({ path: program, arg: args, captureOutput: false });
    for (let pause = 5; ; pause = Math.min(pause * 2, 50)) {
      if ((await this.agent.execStatus(pid)).exited) return;
      await sleep(pause);
    }
  }

  /**
   * Kills QEMU (its process group), closes the connections and removes the machine's folder
   * (kept with `keepFiles`: a saved machine's overlay and state are moved out of it first).
   */
  destroy(options: { keepFiles?: boolean } = {}): Promise<void> {
    this.destroyed ??= (async () => {
      this.agent.close();
      this.qmp.close();
      await this.qemu.kill();
      if (!options.keepFiles) await rm(this.dir, { recursive: true, force: true });
    })();
    return this.destroyed;
  }
}

/** Waits until QEMU says the guest runs (after a restore: once the state is loaded, then resumed). */
async function waitRunning(qmp: QmpClient, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pause = 5;
  for (;;) {
    const status = await qmp.execute<{ status: string; running: boolean }>('query-status');
    if (status.running) return;
    // A state saved from a paused machine (the snapshot pauses it before saving) loads paused.
    if (status.status === 'paused') {
      await qmp.execute('cont');
      continue;
    }
    if (status.status !== 'inmigrate' && status.status !== 'prelaunch' && status.status !== 'paused') {
      const migration = await qmp.execute<{ status?: string; 'error-desc'?: string }>('query-migrate').catch(() => ({}) as { status?: string; 'error-desc'?: string });
      throw new Error(`The machine is ${status.status}, not running${migration['error-desc'] ? `: ${migration['error-desc']}` : ''}.`);
    }
    if (Date.now() >= deadline) throw new Error(`The machine did not run within ${timeoutMs} ms (QEMU says ${status.status}).`);
    await sleep(pause);
    pause = Math.min(pause * 2, 50);
  }
}
