import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Accel } from './accel';
import { runCommand } from './host-commands';
import type { BuiltImage } from './image-builder';
import { kernelAppend, qemuArgs, type MachineHardware, type MachinePlaces } from './qemu-args';
import { QemuMachine, type StartTimings } from './qemu-machine';
import type { QemuProcesses } from './qemu-process';
import { guestAppLogTail, waitGuestAppWaiting } from './guest-app';

/**
 * A disk version kept as a running snapshot, from which every machine starts in seconds.
 *
 * Made once: a machine cold-boots on `disk.qcow2`, an overlay of the disk (the image's, or a
 * saved version's: overlay0); once its X session, its guest agent and (with an app disk) the
 * desktop app waiting for its code are up, it is paused and its memory and device state are
 * written to `state` with a QMP `migrate` to `exec:cat > FILE` (QEMU 7.2 has no `file:`
 * migration, which came in 8.2); QEMU quits, and overlay0 is made read-only: it is the disk
 * exactly as the saved memory last saw it. A machine is then a fresh overlay on overlay0
 * (`qemu-img create -b overlay0`) and QEMU started with the same hardware and `-incoming
 * "exec:cat STATE"`. No machine ever writes to overlay0, so no machine sees another's writes. A
 * saved start state version is the same thing made at save time (disk-versions.ts).
 *
 * A snapshot's folder (`DISK_DIR/snapshots/KEY`) is named by its hardware key (`hardwareKey`:
 * the command line, the app disk, QEMU's version), so a change of any is a new snapshot and an
 * unchanged one is reused across runs.
 */

export interface Snapshot {
  key: string;
  dir: string;
  /** overlay0: the frozen disk the state was saved with. */
  disk: string;
  /** The saved memory and device state. */
  state: string;
  hardware: MachineHardware;
  /** The cold boot that made it and the save, when it was made now. */
  made?: SnapshotFigures;
}

export interface SnapshotFigures {
  cold_boot: StartTimings;
  /** From the agent's first answer until the session was ready. */
  session_ms: number;
  save_ms: number;
  state_bytes: number;
  disk_bytes: number;
}

export interface SnapshotOptions {
  image: BuiltImage;
  accel: Accel;
  memoryMb: number;
  processes: QemuProcesses;
  /** A short folder for the booting machine's sockets. */
  runDir: string;
  appDisk?: string;
  /**
   * The disk to boot and where its snapshots are kept; the image's disk and `IMAGE/snapshots`
   * by default. A saved start state version whose running state was made with other hardware
   * (another app disk, memory or accelerator) is booted this way once.
   */
  base?: { disk: string; snapshotsDir: string };
  out?: (line: object) => void;
  /** How long a cold boot may take until the session is ready. */
  bootTimeoutMs?: number;
}

/** Changes to how snapshots are made that change them: bump it. */
const SNAPSHOT_VERSION = 2;
const COLD_BOOT_TIMEOUT_MS = 600_000;
/** How long the desktop app (from the app disk) may take to load and wait for its code, on a cold boot. */
const APP_WAITING_TIMEOUT_MS = 180_000;
/** The session is ready: openbox started (session.sh), and systemd has finished starting units. */
const SESSION_READY_SCRIPT = 'for i in $(seq 1200); do [ -e "$XDG_RUNTIME_DIR/deskhand-session-ready" ] && break; sleep 0.25; done; systemctl is-system-running --wait >/dev/null; test -e "$XDG_RUNTIME_DIR/deskhand-session-ready"';

/** The hardware machines of this image get. */
export function imageHardware(image: BuiltImage, accel: Accel, memoryMb: number, appDisk?: string): MachineHardware {
  return { accel, memoryMb, kernel: image.kernel, initrd: image.initrd, append: kernelAppend(), ...(appDisk ? { appDisk } : {}) };
}

/**
 * What a saved running state is bound to, as a short hash: the whole QEMU command line with its
 * places left as names (devices, memory, CPU, accelerator, kernel and its command line), the app
 * disk (named by its contents) and QEMU's version. A state only loads into the very machine it
 * was saved from; any change is a new snapshot, made by a cold boot.
 */
export async function hardwareKey(hardware: MachineHardware): Promise<string> {
  const qemuVersion = (await runCommand('qemu-system-x86_64', ['--version'])).split('\n')[0];
  const devices = qemuArgs('snapshot', { ...hardware, appDisk: hardware.appDisk ? 'APP' : undefined }, { disk: 'DISK', qmpSocket: 'QMP', agentSocket: 'AGENT', vncSocket: 'VNC', serialLog: 'SERIAL' });
  const app = hardware.appDisk ? await fileIdentity(hardware.appDisk) : null;
  return createHash('sha256').update(JSON.stringify({ v: SNAPSHOT_VERSION, devices, app, qemu: qemuVersion })).digest('hex').slice(0, 16);
}

/** The running snapshot of a disk (the image's, or a saved version's), from its folder or made now (a cold boot). */
export async function ensureSnapshot(options: SnapshotOptions): Promise<Snapshot> {
  const out = options.out ?? (() => undefined);
  const hardware = imageHardware(options.image, options.accel, options.memoryMb, options.appDisk);
  const key = await hardwareKey(hardware);
  const base = options.base ?? { disk: options.image.disk, snapshotsDir: path.join(options.image.dir, 'snapshots') };
  const dir = path.join(base.snapshotsDir, key);
  const cached = await readSnapshot(dir, hardware);
  if (cached) {
    out({ event: 'snapshot', step: 'cached', key, dir });
    return cached;
  }

  const work = path.join(base.snapshotsDir, `.${key}-${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  const machineDir = path.join(options.runDir, `snap-${key.slice(0, 8)}`);
  out({ event: 'snapshot', step: 'cold_boot', key, disk: base.disk, accel: hardware.accel, memory_mb: hardware.memoryMb, app_disk: hardware.appDisk ?? null });
  const timeout = options.bootTimeoutMs ?? COLD_BOOT_TIMEOUT_MS;
  const machine = await QemuMachine.start({
    name: `snapshot-${key.slice(0, 8)}`,
    dir: machineDir,
    hardware,
    processes: options.processes,
    backingDisk: base.disk,
    readyTimeoutMs: timeout,
  });
  try {
    const sessionStarted = Date.now();
    const ready = await machine.runScript(SESSION_READY_SCRIPT, { timeoutMs: timeout });
    if (ready.exit_code !== 0) throw new Error(`The machine's X session did not start (exit ${ready.exit_code}): ${ready.output.slice(-2000)}. Its console: ${path.join(machineDir, 'serial.log')}`);
    if (hardware.appDisk) {
      // Every machine of the snapshot starts with the app loaded and waiting for its code.
      await waitGuestAppWaiting(machine.agent, APP_WAITING_TIMEOUT_MS).catch(async (error: Error) => {
        throw new Error(`${error.message} Its log: ${await guestAppLogTail(machine.agent)}`);
      });
    }
    // A moment for what the session started (the accessibility bus, the first redraws) to go idle.
    await sleep(2000);
    const session_ms = Date.now() - sessionStarted;
    out({ event: 'snapshot', step: 'saving', key, cold_boot_ms: machine.timings.agent_ms, session_ms });

    const saveStarted = Date.now();
    const state = path.join(work, 'state');
    await saveRunningState(machine, state, timeout);
    await machine.qmp.execute('quit').catch(() => undefined);
    await Promise.race([machine.qemu.exited, sleep(10_000)]);
    const save_ms = Date.now() - saveStarted;

    await rename(path.join(machineDir, 'disk.qcow2'), path.join(work, 'disk.qcow2'));
    await chmod(path.join(work, 'disk.qcow2'), 0o444);
    await chmod(state, 0o444);
    const made: SnapshotFigures = {
      cold_boot: machine.timings,
      session_ms,
      save_ms,
      state_bytes: (await stat(state)).size,
      disk_bytes: (await stat(path.join(work, 'disk.qcow2'))).size,
    };
    await writeSnapshotManifest(work, { key, base: base.disk, hardware, made });
    await rm(dir, { recursive: true, force: true });
    await rename(work, dir);
    out({ event: 'snapshot', step: 'done', key, dir, ...made });
    const snapshot = await readSnapshot(dir, hardware);
    if (!snapshot) throw new Error(`The snapshot made in ${dir} cannot be read back.`);
    return { ...snapshot, made };
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  } finally {
    await machine.destroy();
  }
}

/**
 * Writes a snapshot's `snapshot.json`. `disk` is where its frozen disk is, relative to the
 * snapshot's folder: `disk.qcow2` inside it (a cold boot), or a saved version's own disk beside it.
 */
export async function writeSnapshotManifest(dir: string, manifest: { key: string; base: string; hardware: MachineHardware; disk?: string; made?: object }): Promise<void> {
  await writeFile(path.join(dir, 'snapshot.json'), `${JSON.stringify({ disk: 'disk.qcow2', ...manifest, made_at: new Date().toISOString() }, null, 2)}\n`);
}

/** The snapshot kept in `dir`, when it is there whole. */
export async function readSnapshot(dir: string, hardware: MachineHardware): Promise<Snapshot | null> {
  try {
    const manifest = JSON.parse(await readFile(path.join(dir, 'snapshot.json'), 'utf8')) as { key: string; disk?: string };
    const snapshot: Snapshot = { key: manifest.key, dir, disk: path.resolve(dir, manifest.disk ?? 'disk.qcow2'), state: path.join(dir, 'state'), hardware };
    await Promise.all([stat(snapshot.disk), stat(snapshot.state)]);
    return snapshot;
  } catch {
    return null;
  }
}

/**
 * Writes a running machine's memory and device state to `file`: QMP `stop`, then `migrate` to
 * `exec:cat > FILE` (QEMU 7.2 has no `file:` migration) without the default 32 MiB/s limit,
 * until `completed`. The machine stays paused; its disk is exactly what the state knows (the
 * migration's end flushes it).
 */
export async function saveRunningState(machine: QemuMachine, file: string, timeoutMs: number): Promise<void> {
  await machine.qmp.execute('stop');
  // QEMU 7.2 limits migration to 32 MiB/s by default: the save is local, so no limit.
  await machine.qmp.execute('migrate-set-parameters', { 'max-bandwidth': 16 * 1024 ** 3 });
  await machine.qmp.execute('migrate', { uri: `exec:cat > '${file.replace(/'/g, `'\\''`)}'` });
  await waitMigrated(machine, timeoutMs);
}

async function waitMigrated(machine: QemuMachine, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = await machine.qmp.execute<{ status?: string; 'error-desc'?: string }>('query-migrate');
    if (info.status === 'completed') return;
    if (info.status === 'failed' || info.status === 'cancelled') throw new Error(`Saving the machine's state failed: ${info['error-desc'] ?? info.status}`);
    if (Date.now() >= deadline) throw new Error(`Saving the machine's state took over ${timeoutMs} ms.`);
    await sleep(50);
  }
}

/** An app disk's identity: its name (which carries the hash of its contents) and size. */
async function fileIdentity(file: string): Promise<string> {
  const info = await stat(file);
  return `${path.basename(file)}:${info.size}`;
}

export interface RestoreOptions {
  name: string;
  /** The machine's folder (short: its sockets are in it). */
  dir: string;
  processes: QemuProcesses;
  forward?: MachinePlaces['forward'];
  readyTimeoutMs?: number;
}

/** Where a restore's time went: the start's, then the guest's clock set to now. */
export interface RestoreTimings extends StartTimings {
  clock_ms: number;
}

/**
 * A machine from a snapshot: a fresh overlay on the snapshot's frozen disk, its saved state
 * loaded, the guest's clock set to now. Ready for scripts when it resolves.
 */
export async function restoreMachine(snapshot: Snapshot, options: RestoreOptions): Promise<{ machine: QemuMachine; timings: RestoreTimings }> {
  const began = Date.now();
  const machine = await QemuMachine.start({
    name: options.name,
    dir: options.dir,
    hardware: snapshot.hardware,
    processes: options.processes,
    backingDisk: snapshot.disk,
    incomingState: snapshot.state,
    forward: options.forward,
    readyTimeoutMs: options.readyTimeoutMs ?? 60_000,
  });
  try {
    await machine.setClock();
  } catch (error) {
    await machine.destroy();
    throw error;
  }
  return { machine, timings: { ...machine.timings, clock_ms: Date.now() - began } };
}
