import { chmod, copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from './host-commands';
import type { Snapshot } from './qemu-snapshot';
import { readSnapshot, writeSnapshotManifest } from './qemu-snapshot';
import type { MachineHardware } from './qemu-args';

/**
 * Saved start state versions as real disks, in the runner's data folder, kept across restarts:
 *
 * ```
 * DATA/disks/ss_…/N/disk.qcow2        the machine's overlay as it was saved (read-only)
 * DATA/disks/ss_…/N/version.json      image, image key, hardware key, sizes, the chain
 * DATA/disks/ss_…/N/snapshots/KEY/    its running state for hardware KEY: `state` (saved with the
 *                                     machine, over disk.qcow2), or a cold boot's overlay and state
 * ```
 *
 * A version's disk is a qcow2 overlay whose backing chain holds only the image's disk and
 * earlier versions of the same state, at most `MAX_CHAIN` of them: a save whose chain would
 * hold more, or anything else (the image snapshot's frozen overlay, another state's version),
 * is rebased onto the image's disk (`qemu-img rebase`, which copies only what differs above it,
 * the image being in the old chain). So deleting a state never breaks another, and a chain never
 * grows deep. Every file of a version is read-only once written; machines run on overlays of
 * their own on top, so no machine sees another's writes.
 *
 * A version is written in `N.tmp-PID/` and renamed into place: a runner killed mid-save leaves
 * the versions before it whole and no half version.
 */

/** Earlier versions of the same state a version's disk may stand on before it is flattened. */
export const MAX_CHAIN = 3;

export interface VersionManifest {
  image: string;
  image_key: string;
  state: string;
  version: number;
  /** The hardware key of the running state saved with it. */
  hardware_key: string;
  saved_at: string;
  disk_bytes: number;
  state_bytes: number;
  /** The files under the disk, nearest first, after any flattening. */
  chain: string[];
  flattened: boolean;
}

export class DiskVersions {
  constructor(
    readonly dataDir: string,
    /** The image's own disk: the bottom of every chain. */
    private readonly imageDisk: string,
  ) {}

  versionDir(state: string, version: number): string {
    return path.join(this.stateDir(state), String(version));
  }

  /** A version's manifest, or null when this runner does not keep it. */
  async read(state: string, version: number): Promise<VersionManifest | null> {
    try {
      return JSON.parse(await readFile(path.join(this.versionDir(state, version), 'version.json'), 'utf8')) as VersionManifest;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  /** The running snapshot of a version for `hardware` (key `hardwareKey`), or null when it has none for it yet. */
  async snapshot(state: string, version: number, hardwareKey: string, hardware: MachineHardware): Promise<Snapshot | null> {
    return readSnapshot(path.join(this.versionDir(state, version), 'snapshots', hardwareKey), hardware);
  }

  /**
   * Keeps a saved machine as version `version`: its overlay (moved here; QEMU has quit) and the
   * running state written beside it, then flattened when its chain says so. Resolves with the
   * manifest.
   */
  async keep(input: { image: string; imageKey: string; state: string; version: number; overlay: string; runningState: string; hardwareKey: string; hardware: MachineHardware }): Promise<VersionManifest> {
    const final = this.versionDir(input.state, input.version);
    const work = `${final}.tmp-${process.pid}`;
    await rm(work, { recursive: true, force: true });
    const snapshotDir = path.join(work, 'snapshots', input.hardwareKey);
    await mkdir(snapshotDir, { recursive: true });
    const disk = path.join(work, 'disk.qcow2');
    await moveFile(input.overlay, disk);
    await moveFile(input.runningState, path.join(snapshotDir, 'state'));
    const flattened = await this.flattenIfNeeded(disk, input.state);
    const chain = await backingChain(disk);
    await chmod(disk, 0o444);
    await chmod(path.join(snapshotDir, 'state'), 0o444);
    await writeSnapshotManifest(snapshotDir, { key: input.hardwareKey, base: path.join(final, 'disk.qcow2'), hardware: input.hardware, disk: '../../disk.qcow2' });
    const manifest: VersionManifest = {
      image: input.image,
      image_key: input.imageKey,
      state: input.state,
      version: input.version,
      hardware_key: input.hardwareKey,
      saved_at: new Date().toISOString(),
      disk_bytes: (await stat(disk)).size,
      state_bytes: (await stat(path.join(snapshotDir, 'state'))).size,
      chain,
      flattened,
    };
    await writeFile(path.join(work, 'version.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await rm(final, { recursive: true, force: true });
    await rename(work, final);
    return manifest;
  }

  /** Deletes every version of a state (machines running on them keep their open files until they end). */
  async deleteState(state: string): Promise<void> {
    await rm(this.stateDir(state), { recursive: true, force: true });
  }

  /**
   * Rebases `disk` onto the image's disk when its chain holds anything but the image's disk and
   * at most `MAX_CHAIN` earlier versions of `state`; true when it did.
   */
  private async flattenIfNeeded(disk: string, state: string): Promise<boolean> {
    const chain = await backingChain(disk);
    const own = this.stateDir(state) + path.sep;
    const foreign = chain.filter((file) => file !== this.imageDisk && !file.startsWith(own));
    const ownDepth = chain.filter((file) => file.startsWith(own)).length;
    if (foreign.length === 0 && ownDepth <= MAX_CHAIN && chain.at(-1) === this.imageDisk) return false;
    // "Safe" rebase: what the old chain shows above the image's disk is copied into `disk`.
    await runCommand('qemu-img', ['rebase', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', this.imageDisk, disk]);
    return true;
  }

  private stateDir(state: string): string {
    return path.join(this.dataDir, 'disks', state);
  }
}

/** The files under a qcow2 disk, nearest first (absolute paths). */
export async function backingChain(disk: string): Promise<string[]> {
  const info = JSON.parse(await runCommand('qemu-img', ['info', '--backing-chain', '--output=json', '-U', disk])) as Array<{ filename: string; 'full-backing-filename'?: string }>;
  return info.slice(1).map((entry) => path.resolve(entry.filename));
}

/** Moves a file, copying it when it is on another file system. */
async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await copyFile(from, to);
    await rm(from, { force: true });
  }
}
