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

/**
 * A disk version kept as a running snapshot, from which every machine starts in seconds.
 *
 * Made once: a machine cold-boots on `disk.qcow2`, an overlay of the image (overlay0); once its
 * X session and guest agent are up it is paused and its memory and device state are written to
 * `state` with a QMP `migrate` to `exec:cat > FILE` (QEMU 7.2 has no `file:` migration, which
 * came in 8.2); QEMU quits, and overlay0 is made read-only: it is the version's disk, exactly as
 * the saved memory last saw it. A machine is then a fresh overlay on overlay0 (overlay1,
 * `qemu-img create -b overlay0`) and QEMU started with the same hardware and `-incoming
 * "exec:cat STATE"`. No machine ever writes to overlay0, so no machine sees another's writes.
 *
 * The snapshot's folder is named by a hash of what it depends on (the image's key, the
 * hardware: accelerator, memory, kernel command line, app disk; QEMU's version), so a change of
 * any is a new snapshot and an unchanged one is reused across runs.
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
  out?: (line: object) => void;
  /** How long a cold boot may take until the session is ready. */
  bootTimeoutMs?: number;
}

/** Changes to how snapshots are made that change them: bump it. */
const SNAPSHOT_VERSION = 1;
const COLD_BOOT_TIMEOUT_MS = 600_000;
/** The session is ready: openbox started (session.sh), and systemd has finished starting units. */
const SESSION_READY_SCRIPT = 'for i in $(seq 1200); do [ -e "$XDG_RUNTIME_DIR/deskhand-session-ready" ] && break; sleep 0.25; done; systemctl is-system-running --wait >/dev/null; test -e "$XDG_RUNTIME_DIR/deskhand-session-ready"';

/** The hardware machines of this image get. */
export function imageHardware(image: BuiltImage, accel: Accel, memoryMb: number, appDisk?: string): MachineHardware {
  return { accel, memoryMb, kernel: image.kernel, initrd: image.initrd, append: kernelAppend(), ...(appDisk ? { appDisk } : {}) };
}

/** The snapshot of an image's first version, from its folder or made now (a cold boot). */
export async function ensureSnapshot(options: SnapshotOptions): Promise<Snapshot> {
  const out = options.out ?? (() => undefined);
  const hardware = imageHardware(options.image, options.accel, options.memoryMb, options.appDisk);
  const qemuVersion = (await runCommand('qemu-system-x86_64', ['--version'])).split('\n')[0];
  // The whole command line, its places left as names: any change of devices is a new snapshot.
  const devices = qemuArgs('snapshot', hardware, { disk: 'DISK', qmpSocket: 'QMP', agentSocket: 'AGENT', vncSocket: 'VNC', serialLog: 'SERIAL' });
  const key = createHash('sha256')
    .update(JSON.stringify({ v: SNAPSHOT_VERSION, image: options.image.key, devices, app: options.appDisk ? await fileIdentity(options.appDisk) : null, qemu: qemuVersion }))
    .digest('hex')
    .slice(0, 16);
  const dir = path.join(options.image.dir, 'snapshots', key);
  const cached = await readSnapshot(dir, hardware);
  if (cached) {
    out({ event: 'snapshot', step: 'cached', key, dir });
    return cached;
  }

  const work = path.join(options.image.dir, 'snapshots', `.${key}-${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  const machineDir = path.join(options.runDir, `snap-${key.slice(0, 8)}`);
  out({ event: 'snapshot', step: 'cold_boot', key, accel: hardware.accel, memory_mb: hardware.memoryMb });
  const timeout = options.bootTimeoutMs ?? COLD_BOOT_TIMEOUT_MS;
  const machine = await QemuMachine.start({
    name: `snapshot-${key.slice(0, 8)}`,
    dir: machineDir,
    hardware,
    processes: options.processes,
    backingDisk: options.image.disk,
    readyTimeoutMs: timeout,
  });
  try {
    const sessionStarted = Date.now();
    const ready = await machine.runScript(SESSION_READY_SCRIPT, { timeoutMs: timeout });
    if (ready.exit_code !== 0) throw new Error(`The machine's X session did not start (exit ${ready.exit_code}): ${ready.output.slice(-2000)}. Its console: ${path.join(machineDir, 'serial.log')}`);
    // A moment for what the session started (the accessibility bus, the first redraws) to go idle.
    await sleep(2000);
    const session_ms = Date.now() - sessionStarted;
    out({ event: 'snapshot', step: 'saving', key, cold_boot_ms: machine.timings.agent_ms, session_ms });

    const saveStarted = Date.now();
    const state = path.join(work, 'state');
    await machine.qmp.execute('stop');
    // QEMU 7.2 limits migration to 32 MiB/s by default: the save is local, so no limit.
    await machine.qmp.execute('migrate-set-parameters', { 'max-bandwidth': 16 * 1024 ** 3 });
    await machine.qmp.execute('migrate', { uri: `exec:cat > '${state.replace(/'/g, `'\\''`)}'` });
    await waitMigrated(machine, timeout);
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
    await writeFile(path.join(work, 'snapshot.json'), `${JSON.stringify({ key, image: options.image.key, hardware, qemu: qemuVersion, made_at: new Date().toISOString(), made }, null, 2)}\n`);
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

async function readSnapshot(dir: string, hardware: MachineHardware): Promise<Snapshot | null> {
  try {
    const manifest = JSON.parse(await readFile(path.join(dir, 'snapshot.json'), 'utf8')) as { key: string };
    const snapshot: Snapshot = { key: manifest.key, dir, disk: path.join(dir, 'disk.qcow2'), state: path.join(dir, 'state'), hardware };
    await Promise.all([stat(snapshot.disk), stat(snapshot.state)]);
    return snapshot;
  } catch {
    return null;
  }
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

/** A file's size and modification time: enough to tell a rebuilt app disk from the one a snapshot was made with. */
async function fileIdentity(file: string): Promise<string> {
  const info = await stat(file);
  return `${path.resolve(file)}:${info.size}:${info.mtimeMs}`;
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
