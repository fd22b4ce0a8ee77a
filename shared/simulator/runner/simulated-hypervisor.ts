import { setTimeout as sleep } from 'node:timers/promises';
import { osOfImage } from '../../desktop/os';
import { DesktopClient } from '../desktop-client';
import { MachineDisk } from '../machine-disk';
import { SimulatedComputer } from '../simulated-computer';
import { DiskStore } from './disk-store';
import { CommandError, type DiskRef } from './runner-protocol';

/**
 * The reference runner's simulated hypervisor: its machines are simulated computers with a
 * disk, each connected to the service's `/desktop` namespace as a desktop app (the reference
 * desktop client), so that tasks on them run exactly as on a person's computer.
 */

export interface HypervisorOptions {
  baseUrl: string;
  images: readonly string[];
  slots: number;
  /** How long a machine takes to start. */
  bootMs: number;
  /** How long destroying a machine takes (its desktop connection stays up meanwhile). */
  destroyMs?: number;
  store: DiskStore;
  /** Where each machine's desktop connection events go. */
  out: (line: object) => void;
  /** The socket.io path on the service; `/socket.io` by default. */
  path?: string;
  /** First delay between a machine's reconnection attempts. */
  reconnectDelayMs?: number;
}

/** The app version machines report: the current one, so a Mac detects categories. */
export const MACHINE_APP_VERSION = '1.0.20';
export const MACHINE_SCREEN = Object.freeze({ width: 1440, height: 900 });

interface Machine {
  id: string;
  computer: SimulatedComputer;
  client: DesktopClient | null;
  /** Aborted when the machine is destroyed while it boots. */
  stop: AbortController;
  /** Made: the service accepted its desktop hello. */
  ready: boolean;
}

export class SimulatedHypervisor {
  private readonly machines = new Map<string, Machine>();

  constructor(private readonly options: HypervisorOptions) {}

  /** The machines it runs now (booting ones too), by id. */
  ids(): string[] {
    return [...this.machines.keys()];
  }

  /** A running machine's computer, for the console. */
  computer(machineId: string): SimulatedComputer | undefined {
    return this.machines.get(machineId)?.computer;
  }

  /**
   * Boots a machine from a disk and connects it to the service with the pairing code; resolves
   * once the service accepted its hello.
   */
  async make(machineId: string, args: Record<string, unknown>): Promise<Record<string, never>> {
    if (this.machines.has(machineId)) throw new CommandError('failed', `Machine ${machineId} already runs on this runner.`);
    const disk = asDiskRef(args.disk);
    const code = (args.session as { code?: unknown } | undefined)?.code;
    if (typeof code !== 'string' || !code) throw new CommandError('failed', 'machine.make needs session.code, the pairing code.');
    if (!this.options.images.includes(disk.image)) throw new CommandError('no_such_image', `This runner has no image "${disk.image}"; it has ${this.options.images.join(', ')}.`);
    // The one image → OS rule (shared/desktop/os.ts); the simulator can be a Mac or a Windows PC.
    const os = args.os ?? osOfImage(disk.image);
    if (os !== 'mac' && os !== 'windows') throw new CommandError('failed', `This runner simulates mac or windows computers, not ${String(os)} (image "${disk.image}").`);
    const loaded = await this.loadDisk(disk);
    await loaded.ready();
    // Checked after the disk is read, with nothing awaited before the machine takes its slot.
    if (this.machines.has(machineId)) throw new CommandError('failed', `Machine ${machineId} already runs on this runner.`);
    if (this.machines.size >= this.options.slots) throw new CommandError('failed', `All ${this.options.slots} slots are taken.`);

    const stop = new AbortController();
    const computer = new SimulatedComputer({
      os,
      appVersion: MACHINE_APP_VERSION,
      ...MACHINE_SCREEN,
      name: machineId,
      accessibility: true,
      sleep: (ms) => sleep(ms),
      disk: loaded,
    });
    const machine: Machine = { id: machineId, computer, client: null, stop, ready: false };
    this.machines.set(machineId, machine);
    try {
      if (this.options.bootMs > 0) await sleep(this.options.bootMs, undefined, { signal: stop.signal });
      if (stop.signal.aborted) throw new CommandError('boot_failed', 'The machine was destroyed while it booted.');
      machine.client = new DesktopClient({
        baseUrl: this.options.baseUrl,
        code,
        os,
        appVersion: MACHINE_APP_VERSION,
        ...MACHINE_SCREEN,
        name: machineId,
        accessibility: true,
        delayMs: 0,
        computer: machine.computer,
        path: this.options.path,
        reconnectDelayMs: this.options.reconnectDelayMs,
        out: (line) => this.options.out({ ...line, event: `desktop.${(line as { event?: string }).event}`, machine_id: machineId }),
      });
      await machine.client.start();
      machine.ready = true;
      return {};
    } catch (error) {
      await machine.client?.close();
      if (this.machines.get(machineId) === machine) this.machines.delete(machineId);
      if (error instanceof CommandError) throw error;
      if (stop.signal.aborted) throw new CommandError('boot_failed', 'The machine was destroyed while it booted.');
      throw new CommandError('boot_failed', (error as Error).message);
    }
  }

  async run(machineId: string, args: Record<string, unknown>): Promise<{ exit_code: number; output: string; stdout: string; stderr: string }> {
    const machine = this.running(machineId);
    const script = args.script;
    const timeoutMs = args.timeout_ms;
    if (typeof script !== 'string') throw new CommandError('failed', 'machine.run needs script, a string.');
    if (!(Number.isSafeInteger(timeoutMs) && (timeoutMs as number) > 0)) throw new CommandError('failed', 'machine.run needs timeout_ms, a whole number above 0.');
    const { exit_code, output, stdout, stderr, timed_out } = await machine.computer.runScript(script, { timeoutMs: timeoutMs as number });
    if (timed_out) throw new CommandError('timeout', `The script ran past its ${timeoutMs as number} ms.`, { exit_code, output, stdout, stderr });
    return { exit_code, output, stdout, stderr };
  }

  async save(machineId: string, args: Record<string, unknown>): Promise<{ bytes: number }> {
    const machine = this.running(machineId);
    const disk = asDiskRef(args.disk);
    const invalid = DiskStore.invalid(disk.state, disk.version);
    if (invalid || disk.state === undefined || disk.version === undefined) throw new CommandError('failed', invalid ?? 'machine.save needs a state disk: image, state and version.');
    const snapshot = await machine.computer.saveDisk();
    const bytes = await this.options.store.save(disk.state, disk.version, { image: disk.image, saved_at: new Date().toISOString(), disk: snapshot });
    return { bytes };
  }

  /** Stops a machine and forgets it; a machine it does not run is already destroyed. */
  async destroy(machineId: string): Promise<{ existed: boolean }> {
    const machine = this.machines.get(machineId);
    if (!machine) return { existed: false };
    if (this.options.destroyMs) {
      await sleep(this.options.destroyMs);
      // Destroyed meanwhile by another command (one sent again after a reconnect).
      if (this.machines.get(machineId) !== machine) return { existed: false };
    }
    this.machines.delete(machineId);
    machine.stop.abort();
    await machine.client?.close();
    return { existed: true };
  }

  async deleteDisk(args: Record<string, unknown>): Promise<Record<string, never>> {
    const invalid = DiskStore.invalid(args.state);
    if (invalid) throw new CommandError('failed', invalid);
    await this.options.store.deleteState(args.state as string);
    return {};
  }

  async destroyAll(): Promise<void> {
    await Promise.all(this.ids().map((id) => this.destroy(id)));
  }

  private running(machineId: string): Machine {
    const machine = this.machines.get(machineId);
    if (!machine || !machine.ready) throw new CommandError('no_such_machine', `No machine ${machineId} runs on this runner.`);
    return machine;
  }

  private async loadDisk(ref: DiskRef): Promise<MachineDisk> {
    if (ref.state === undefined) return MachineDisk.fresh();
    const invalid = DiskStore.invalid(ref.state, ref.version ?? 0);
    if (invalid) throw new CommandError('no_such_disk', invalid);
    const saved = await this.options.store.load(ref.state, ref.version!);
    if (!saved) throw new CommandError('no_such_disk', `This runner keeps no version ${ref.version} of ${ref.state}.`);
    return MachineDisk.fromSnapshot(saved.disk);
  }
}


function asDiskRef(value: unknown): DiskRef {
  const disk = value as Partial<DiskRef> | null | undefined;
  if (!disk || typeof disk !== 'object' || typeof disk.image !== 'string' || !disk.image) throw new CommandError('failed', 'A disk needs an image, e.g. { "image": "macos-15" }.');
  return { image: disk.image, ...(disk.state !== undefined ? { state: disk.state } : {}), ...(disk.version !== undefined ? { version: disk.version } : {}) };
}
