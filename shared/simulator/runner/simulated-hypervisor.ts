import { setTimeout as sleep } from 'node:timers/promises';
import type { DesktopAction } from '../../desktop/protocol';
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
} from '../../runners/hypervisor';
import { DesktopClient } from '../desktop-client';
import { MachineDisk } from '../machine-disk';
import { centerOf, SimulatedComputer } from '../simulated-computer';
import { DiskStore } from './disk-store';

/**
 * The reference runner's simulated hypervisor (provider `simulated`, a `Hypervisor` of
 * shared/runners/hypervisor.ts): its machines are simulated computers with a disk, each
 * connected to the service's `/desktop` namespace as a desktop app (the reference desktop
 * client), so that tasks on them run exactly as on a person's computer.
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

export class SimulatedHypervisor implements Hypervisor {
  readonly provider = 'simulated';
  private readonly machines = new Map<string, Machine>();

  constructor(private readonly options: HypervisorOptions) {}

  images(): readonly string[] {
    return this.options.images;
  }

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
  async make(machineId: string, { disk, code, os }: MakeRequest): Promise<void> {
    if (this.machines.has(machineId)) throw new CommandError('failed', `Machine ${machineId} already runs on this runner.`);
    if (!this.options.images.includes(disk.image)) throw new CommandError('no_such_image', `This runner has no image "${disk.image}"; it has ${this.options.images.join(', ')}.`);
    // The simulator can be a Mac or a Windows PC (the OS comes from the image: shared/desktop/os.ts).
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
    } catch (error) {
      await machine.client?.close();
      if (this.machines.get(machineId) === machine) this.machines.delete(machineId);
      if (error instanceof CommandError) throw error;
      if (stop.signal.aborted) throw new CommandError('boot_failed', 'The machine was destroyed while it booted.');
      throw new CommandError('boot_failed', (error as Error).message);
    }
  }

  async run(machineId: string, { script, timeoutMs }: ScriptRequest): Promise<ScriptOutcome> {
    const machine = this.running(machineId);
    const { exit_code, output, stdout, stderr, timed_out } = await machine.computer.runScript(script, { timeoutMs });
    return { exit_code, output, stdout, stderr, timed_out };
  }

  async save(machineId: string, disk: StateDiskRef): Promise<{ bytes: number }> {
    const machine = this.running(machineId);
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

  async deleteState(state: string): Promise<void> {
    await this.options.store.deleteState(state);
  }

  async screen(machineId: string): Promise<MachineScreen | null> {
    const computer = this.computer(machineId);
    if (!computer) return null;
    const { screenshot } = computer.observe();
    return { frame: computer.frame, width: computer.device.width, height: computer.device.height, png: screenshot };
  }

  /** A click, text or keys as the person at the machine; `click_label` clicks the middle of the element with that label on the screen now. */
  async input(machineId: string, input: MachineInput): Promise<InputOutcome> {
    const computer = this.computer(machineId);
    if (!computer) throw new CommandError('no_such_machine', `No machine ${machineId} runs on this runner.`);
    let action: DesktopAction;
    if (input.type === 'click_label') {
      const element = computer.observe().observation?.elements?.find((candidate) => candidate.label === input.label);
      if (!element) return { ok: false, message: `Nothing labelled "${input.label}" is on the screen.`, frame: computer.frame };
      action = { type: 'click', ...centerOf(element.bounds) };
    } else {
      action = input;
    }
    const result = await computer.act(action);
    return result.ok ? { ok: true, frame: computer.frame } : { ok: false, message: result.error ?? 'The machine could not do that.', frame: computer.frame };
  }

  async destroyAll(): Promise<void> {
    await Promise.all(this.ids().map((id) => this.destroy(id)));
  }

  async close(): Promise<void> {
    // Nothing beyond its machines.
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
