import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { DiskSnapshot } from '../machine-disk';

/**
 * Saved start state disks in the runner's data folder, one JSON file per version:
 * `DATA_DIR/disks/ss_…/N.json`. Each is written to a temporary file and renamed into place, so
 * a runner killed mid-save leaves the previous versions whole and never a half-written one.
 */

/** A saved disk: the image it was made from, and its files. */
export interface SavedDisk {
  image: string;
  saved_at: string;
  disk: DiskSnapshot;
}

const STATE_ID = /^ss_[A-Za-z0-9_-]{1,100}$/;

export class DiskStore {
  constructor(readonly dataDir: string) {}

  /** Why a state id or version cannot name a file here, or null when it can. */
  static invalid(state: unknown, version?: unknown): string | null {
    if (typeof state !== 'string' || !STATE_ID.test(state)) return `"${String(state)}" is not a start state id (ss_…).`;
    if (version !== undefined && !(Number.isSafeInteger(version) && (version as number) >= 1)) return `A disk version is a whole number from 1, not ${String(version)}.`;
    return null;
  }

  /** Writes one version; resolves with its size in bytes. */
  async save(state: string, version: number, saved: SavedDisk): Promise<number> {
    const dir = this.stateDir(state);
    await mkdir(dir, { recursive: true });
    const body = JSON.stringify(saved);
    const final = path.join(dir, `${version}.json`);
    const temporary = `${final}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(temporary, body);
    await rename(temporary, final);
    return Buffer.byteLength(body);
  }

  /** One saved version, or null when this runner does not keep it. */
  async load(state: string, version: number): Promise<SavedDisk | null> {
    try {
      return JSON.parse(await readFile(path.join(this.stateDir(state), `${version}.json`), 'utf8')) as SavedDisk;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  /** Deletes every saved version of a state; nothing to delete is fine. */
  async deleteState(state: string): Promise<void> {
    await rm(this.stateDir(state), { recursive: true, force: true });
  }

  private stateDir(state: string): string {
    return path.join(this.dataDir, 'disks', state);
  }
}
