import { existsSync, readdirSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { HypervisorFactory } from '../../shared/simulator/runner/reference-runner';
import { chooseAccel, type AccelRequest } from './accel';
import { ensureAppDisk } from './app-disk';
import { writeForwarder } from './guest-forward';
import { runCommand } from './host-commands';
import { defaultImageDir, ensureImage } from './image-builder';
import { QemuHypervisor } from './qemu-hypervisor';
import { QemuProcesses } from './qemu-process';
import { ensureSnapshot } from './qemu-snapshot';

/**
 * The QEMU provider's composition root (`npx deskhand runner --provider qemu`): before the
 * runner connects, it makes sure of everything a machine needs, printing progress as JSON
 * lines: the image (built from the recipe when missing, minutes, root), the accelerator (KVM
 * only where a guest really boots under it), the app disk (this checkout's desktop app), and the
 * image's running snapshot (one cold boot when missing, with the app waiting in it). The runner
 * then reports `debian-12` (os `linux`) in its hello, ready to make machines.
 */

export interface QemuProviderOptions {
  /** The service: machines reach it at http://10.0.2.2:PORT, forwarded to this address. */
  baseUrl: string;
  slots: number;
  dataDir: string;
  /** Where images, app disks and snapshots are kept; `~/.cache/deskhand/images` by default. */
  imageDir?: string;
  accel: AccelRequest;
  memoryMb: number;
  out: (line: object) => void;
  /** Where each runner process keeps its machines' folders (sockets: keep it short); `/tmp/deskhand-qemu`. */
  runRoot?: string;
}

const TOOLS = [
  ['qemu-system-x86_64', 'qemu-system-x86'],
  ['qemu-img', 'qemu-utils'],
  ['setpriv', 'util-linux'],
  ['mkfs.ext4', 'e2fsprogs'],
] as const;

/** Prepares the provider; resolves with what makes its hypervisor for the runner. */
export async function prepareQemuProvider(options: QemuProviderOptions): Promise<HypervisorFactory<QemuHypervisor>> {
  const out = options.out;
  await checkTools();
  const service = new URL(options.baseUrl);
  if (service.protocol !== 'http:') throw new Error(`The QEMU provider's machines reach the service over plain http through the runner's host (--base-url ${options.baseUrl}); run the runner beside the service's http address.`);
  const port = Number(service.port || 80);
  const imageDir = options.imageDir ?? defaultImageDir();
  const runRoot = options.runRoot ?? '/tmp/deskhand-qemu';
  await sweepRunFolders(runRoot, out);
  const runDir = path.join(runRoot, String(process.pid));
  await mkdir(runDir, { recursive: true, mode: 0o700 });
  const processes = new QemuProcesses();
  try {
    const image = await ensureImage({ imageDir, out });
    const accel = await chooseAccel({ requested: options.accel, kernel: image.kernel, cacheDir: imageDir });
    out({ event: 'accel', ...accel });
    const app = await ensureAppDisk({ dir: path.join(imageDir, 'apps'), out });
    const snapshot = await ensureSnapshot({ image, accel: accel.accel, memoryMb: options.memoryMb, processes, runDir, appDisk: app.file, out });
    const command = await writeForwarder(runDir, service.hostname.replace(/^\[|\]$/g, ''), port);
    out({ event: 'provider_ready', provider: 'qemu', image: image.name, os: image.os, accel: accel.accel, memory_mb: options.memoryMb, snapshot: snapshot.key, app_disk: app.key, data_dir: options.dataDir });
    return (runnerOut) =>
      new QemuHypervisor({
        image,
        snapshot,
        accel: accel.accel,
        memoryMb: options.memoryMb,
        appDisk: app.file,
        slots: options.slots,
        dataDir: options.dataDir,
        runDir,
        processes,
        forward: { port, command },
        out: runnerOut,
      });
  } catch (error) {
    await processes.close();
    await rm(runDir, { recursive: true, force: true });
    throw error;
  }
}

async function checkTools(): Promise<void> {
  const missing: string[] = [];
  for (const [tool, pkg] of TOOLS) {
    try {
      await runCommand('sh', ['-c', `command -v ${tool}`]);
    } catch {
      missing.push(`${tool} (Debian package ${pkg})`);
    }
  }
  if (missing.length) throw new Error(`The QEMU provider needs ${missing.join(', ')} on this host.`);
}

/** Removes the machine folders of runner processes that are gone (their QEMUs died with them). */
async function sweepRunFolders(runRoot: string, out: (line: object) => void): Promise<void> {
  if (!existsSync(runRoot)) return;
  for (const entry of readdirSync(runRoot)) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid || isAlive(Number(entry))) continue;
    await rm(path.join(runRoot, entry), { recursive: true, force: true });
    out({ event: 'swept', folder: path.join(runRoot, entry), reason: `runner process ${entry} is gone` });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
