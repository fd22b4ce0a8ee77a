import { rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CommandError,
  type DiskRef,
  type Hypervisor,
  type InputOutcome,
  type MachineInput,
  type MachineScreen,
  type MakeRequest,
  type ScriptOutcome,
  type ScriptRequest,
  type StateDiskRef,
} from '../../shared/runners/hypervisor';
import type { Accel } from './accel';
import { DiskVersions } from './disk-versions';
import { GuestAppError, guestAppLogTail, pairGuestApp, resetGuestApp } from './guest-app';
import type { BuiltImage } from './image-builder';
import { GUEST_HOST_ADDRESS, type MachinePlaces } from './qemu-args';
import { QemuConsole } from './qemu-console';
import type { QemuMachine } from './qemu-machine';
import type { QemuProcesses } from './qemu-process';
import { ensureSnapshot, restoreMachine, saveRunningState, type Snapshot } from './qemu-snapshot';

/**
 * The QEMU provider (`provider: "qemu"`, a `Hypervisor` of shared/runners/hypervisor.ts): real
 * virtual machines of the image `debian-12` (os `linux`), each a QEMU process on a fresh qcow2
 * overlay of its disk version, started from that version's running snapshot (memory and disk),
 * so a machine is ready in seconds even under TCG.
 *
 * - make: the snapshot restored (qemu-snapshot.ts), then the desktop app already running in it
 *   is handed the pairing code of the machine session (guest-app.ts) and connects to the
 *   service over the guest's one way out (10.0.2.2:PORT, forwarded to the service); made once
 *   the service accepted its hello.
 * - run: the script as `user` through the guest agent (guest-script.ts).
 * - save: the app is told to close (so the saved memory never holds a paired app), the machine's
 *   memory and device state are written and QEMU quits; its overlay and that state become the
 *   version (disk-versions.ts). The service lets a machine go once it is saved, so a saved
 *   machine is not run on: a later script on it is `no_such_machine`.
 * - screen and input: QEMU's own (qemu-console.ts).
 */

export interface QemuHypervisorOptions {
  image: BuiltImage;
  /** The image's running snapshot (the app waiting for its code). */
  snapshot: Snapshot;
  accel: Accel;
  memoryMb: number;
  appDisk: string;
  slots: number;
  dataDir: string;
  /** A short folder for the machines' sockets and overlays (unix socket paths are limited to 107 bytes). */
  runDir: string;
  processes: QemuProcesses;
  /** The guest's way to the service: connections to 10.0.2.2:`port` are handed to `command` on the host. */
  forward: { port: number; command: string[] };
  out: (line: object) => void;
  /** How long the app may take to pair once it has the code. */
  pairTimeoutMs?: number;
}

export const QEMU_PROVIDER = 'qemu';
export const QEMU_IMAGE = 'debian-12';
const PAIR_TIMEOUT_MS = 60_000;
const RESET_TIMEOUT_MS = 30_000;
const SAVE_TIMEOUT_MS = 120_000;

interface Machine {
  id: string;
  dir: string;
  /** Aborted when the machine is destroyed while it starts. */
  stop: AbortController;
  vm: QemuMachine | null;
  console: QemuConsole | null;
  /** Made: the service accepted its app's hello. */
  ready: boolean;
  /** Saved: its state was written and QEMU quit. */
  saved: boolean;
}

export class QemuHypervisor implements Hypervisor {
  readonly provider = QEMU_PROVIDER;
  private readonly machines = new Map<string, Machine>();
  private readonly versions: DiskVersions;
  /** Versions being booted once for this runner's hardware, by `state/version`. */
  private readonly booting = new Map<string, Promise<Snapshot>>();
  private made = 0;

  constructor(private readonly options: QemuHypervisorOptions) {
    this.versions = new DiskVersions(options.dataDir, options.image.disk);
  }

  images(): readonly string[] {
    return [QEMU_IMAGE];
  }

  ids(): string[] {
    return [...this.machines.keys()];
  }

  async make(machineId: string, { disk, code, os }: MakeRequest): Promise<void> {
    const began = Date.now();
    if (this.machines.has(machineId)) throw new CommandError('failed', `Machine ${machineId} already runs on this runner.`);
    if (disk.image !== QEMU_IMAGE) throw new CommandError('no_such_image', `This runner has no image "${disk.image}"; it has ${QEMU_IMAGE}.`);
    if (os !== 'linux') throw new CommandError('failed', `This runner's machines are linux computers, not ${os} (image "${disk.image}").`);
    if (disk.state !== undefined) await this.checkVersion(disk);
    if (this.machines.has(machineId)) throw new CommandError('failed', `Machine ${machineId} already runs on this runner.`);
    if (this.machines.size >= this.options.slots) throw new CommandError('failed', `All ${this.options.slots} slots are taken.`);

    const machine: Machine = { id: machineId, dir: path.join(this.options.runDir, `m${++this.made}`), stop: new AbortController(), vm: null, console: null, ready: false, saved: false };
    this.machines.set(machineId, machine);
    const destroyedMeanwhile = () => new CommandError('boot_failed', 'The machine was destroyed while it started.');
    try {
      const snapshot = await this.snapshotOf(disk);
      if (machine.stop.signal.aborted) throw destroyedMeanwhile();
      const forward: MachinePlaces['forward'] = { guestPort: this.options.forward.port, command: this.options.forward.command };
      const { machine: vm, timings } = await restoreMachine(snapshot, { name: machineId.slice(0, 60), dir: machine.dir, processes: this.options.processes, forward });
      machine.vm = vm;
      machine.console = new QemuConsole(vm.qmp, machine.dir);
      if (machine.stop.signal.aborted) throw destroyedMeanwhile();
      const paired = await pairGuestApp(vm.agent, { code, baseUrl: `http://${GUEST_HOST_ADDRESS}:${this.options.forward.port}`, name: machineId }, this.options.pairTimeoutMs ?? PAIR_TIMEOUT_MS);
      if (machine.stop.signal.aborted) throw destroyedMeanwhile();
      machine.ready = true;
      this.options.out({ event: 'machine_ready', machine_id: machineId, disk, restore_ms: timings.clock_ms, pair_ms: paired.ms, ms: Date.now() - began, device: paired.state.device });
    } catch (error) {
      const log = machine.vm && !machine.stop.signal.aborted ? await guestAppLogTail(machine.vm.agent, 2000).catch(() => '') : '';
      if (this.machines.get(machineId) === machine) this.machines.delete(machineId);
      await machine.vm?.destroy();
      await rm(machine.dir, { recursive: true, force: true });
      if (error instanceof CommandError) throw error;
      if (machine.stop.signal.aborted) throw destroyedMeanwhile();
      const message = error instanceof GuestAppError && log ? `${error.message} The app's last lines: ${log}` : (error as Error).message;
      throw new CommandError('boot_failed', message);
    }
  }

  async run(machineId: string, { script, timeoutMs }: ScriptRequest): Promise<ScriptOutcome> {
    const { vm } = this.running(machineId);
    const { exit_code, output, stdout, stderr, timed_out } = await vm.runScript(script, { timeoutMs });
    return { exit_code, output, stdout, stderr, timed_out };
  }

  async save(machineId: string, disk: StateDiskRef): Promise<{ bytes: number }> {
    const began = Date.now();
    const machine = this.running(machineId);
    const { vm } = machine;
    // No machine started from this state may find the app paired as this machine's session.
    await resetGuestApp(vm.agent, RESET_TIMEOUT_MS).catch((error: Error) => {
      throw new CommandError('failed', `The machine could not be saved: ${error.message}`);
    });
    // The disk alone must hold what the guest wrote: a runner with other hardware boots it without the state.
    await vm.syncDisks();
    machine.ready = false;
    machine.saved = true;
    const reset_ms = Date.now() - began;
    const runningState = path.join(machine.dir, 'state');
    await saveRunningState(vm, runningState, SAVE_TIMEOUT_MS);
    const state_ms = Date.now() - began - reset_ms;
    await vm.qmp.execute('quit').catch(() => undefined);
    await Promise.race([vm.qemu.exited, sleep(10_000)]);
    await vm.destroy({ keepFiles: true });
    const manifest = await this.versions.keep({
      image: disk.image,
      imageKey: this.options.image.key,
      state: disk.state,
      version: disk.version,
      overlay: path.join(machine.dir, 'disk.qcow2'),
      runningState,
      hardwareKey: this.options.snapshot.key,
      hardware: this.options.snapshot.hardware,
    });
    this.options.out({ event: 'version_kept', machine_id: machineId, state: disk.state, version: disk.version, disk_bytes: manifest.disk_bytes, state_bytes: manifest.state_bytes, chain: manifest.chain.length, flattened: manifest.flattened, reset_ms, state_ms, ms: Date.now() - began });
    return { bytes: manifest.disk_bytes + manifest.state_bytes };
  }

  async destroy(machineId: string): Promise<{ existed: boolean }> {
    const machine = this.machines.get(machineId);
    if (!machine) return { existed: false };
    this.machines.delete(machineId);
    machine.stop.abort();
    await machine.vm?.destroy();
    await rm(machine.dir, { recursive: true, force: true });
    return { existed: true };
  }

  async deleteState(state: string): Promise<void> {
    await this.versions.deleteState(state);
  }

  async screen(machineId: string): Promise<MachineScreen | null> {
    const machine = this.machines.get(machineId);
    if (!machine) return null;
    if (!machine.console || machine.saved) throw new Error(`Machine ${machineId} is ${machine.saved ? 'saved and stopped' : 'still starting'}.`);
    return machine.console.screen();
  }

  async input(machineId: string, input: MachineInput): Promise<InputOutcome> {
    const machine = this.machines.get(machineId);
    if (!machine) throw new CommandError('no_such_machine', `No machine ${machineId} runs on this runner.`);
    if (!machine.console || machine.saved) return { ok: false, message: `Machine ${machineId} is ${machine.saved ? 'saved and stopped' : 'still starting'}.`, frame: 0 };
    return machine.console.input(input);
  }

  async destroyAll(): Promise<void> {
    await Promise.all(this.ids().map((id) => this.destroy(id)));
  }

  async close(): Promise<void> {
    await this.options.processes.close();
    await rm(this.options.runDir, { recursive: true, force: true });
  }

  private running(machineId: string): Machine & { vm: QemuMachine } {
    const machine = this.machines.get(machineId);
    if (!machine || !machine.ready || !machine.vm) {
      const why = machine?.saved ? ' (it was saved, which stops it)' : '';
      throw new CommandError('no_such_machine', `No machine ${machineId} runs on this runner${why}.`);
    }
    return machine as Machine & { vm: QemuMachine };
  }

  private async checkVersion(disk: DiskRef): Promise<void> {
    const { state, version } = disk;
    if (typeof state !== 'string' || !Number.isSafeInteger(version) || (version as number) < 1 || !/^ss_[A-Za-z0-9_-]{1,100}$/.test(state)) {
      throw new CommandError('no_such_disk', `${String(state)} version ${String(version)} is not a start state version.`);
    }
    const manifest = await this.versions.read(state, version as number);
    if (!manifest) throw new CommandError('no_such_disk', `This runner keeps no version ${version} of ${state}.`);
    if (manifest.image_key !== this.options.image.key) {
      throw new CommandError('no_such_disk', `Version ${version} of ${state} was saved on another build of ${QEMU_IMAGE} (${manifest.image_key}, this runner has ${this.options.image.key}).`);
    }
  }

  /** The running snapshot a machine of `disk` starts from: the image's, or the version's (booted once for this runner's hardware if it has none yet). */
  private async snapshotOf(disk: DiskRef): Promise<Snapshot> {
    if (disk.state === undefined) return this.options.snapshot;
    const { state } = disk;
    const version = disk.version as number;
    const { key, hardware } = this.options.snapshot;
    const kept = await this.versions.snapshot(state, version, key, hardware);
    if (kept) return kept;
    const name = `${state}/${version}`;
    let booting = this.booting.get(name);
    if (!booting) {
      this.options.out({ event: 'version_snapshot', state, version, step: 'cold_boot', reason: 'no running state for this runner\'s hardware (another app disk, memory or accelerator)' });
      booting = ensureSnapshot({
        image: this.options.image,
        accel: this.options.accel,
        memoryMb: this.options.memoryMb,
        appDisk: this.options.appDisk,
        processes: this.options.processes,
        runDir: this.options.runDir,
        base: { disk: path.join(this.versions.versionDir(state, version), 'disk.qcow2'), snapshotsDir: path.join(this.versions.versionDir(state, version), 'snapshots') },
        out: this.options.out,
      }).finally(() => this.booting.delete(name));
      this.booting.set(name, booting);
    }
    return booting;
  }
}
