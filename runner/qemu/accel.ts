import { spawn } from 'node:child_process';
import { constants, accessSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { hostname, release } from 'node:os';
import path from 'node:path';
import { runCommand } from './host-commands';

/**
 * Which accelerator machines run under: KVM where it really boots a guest, TCG (QEMU's own
 * translator, slower, works anywhere) otherwise. `/dev/kvm` existing is not enough: a host that
 * is itself a virtual machine may offer a KVM on which QEMU aborts with `-cpu host`, or on which
 * the default CPU hangs in the kernel's decompressor. So `auto` boots the image's own kernel
 * under KVM with no root file system (it runs to "Kernel panic … VFS: Unable to mount root fs"
 * in about a second on a working KVM) and takes KVM only when that panic shows on the serial
 * console within the probe's time. The answer is kept per host (name, kernel release, QEMU's
 * version) in a small JSON file, and said with its reason.
 */

export type Accel = 'kvm' | 'tcg';
export type AccelRequest = Accel | 'auto';

export interface AccelChoice {
  accel: Accel;
  /** In words: why this one. */
  reason: string;
  /** Taken from the cache file rather than probed now. */
  cached: boolean;
}

export interface AccelOptions {
  requested: AccelRequest;
  /** A kernel to boot for the probe (the image's). */
  kernel: string;
  /** Where the answer is remembered (a folder). */
  cacheDir: string;
  qemuBinary?: string;
  probeTimeoutMs?: number;
  /** The KVM device; `/dev/kvm` by default. */
  kvmDevice?: string;
}

const PROBE_TIMEOUT_MS = 15_000;
/** The line that shows the guest kernel ran through its start under the accelerator. */
const PROBE_SUCCESS = /Kernel panic|Unable to mount root fs/;

/** Chooses the accelerator; `kvm` asked for explicitly must work, or this throws. */
export async function chooseAccel(options: AccelOptions): Promise<AccelChoice> {
  const qemu = options.qemuBinary ?? 'qemu-system-x86_64';
  if (options.requested === 'tcg') return { accel: 'tcg', reason: 'asked for (--accel tcg)', cached: false };
  const device = kvmDeviceProblem(options.kvmDevice ?? '/dev/kvm');
  if (options.requested === 'kvm') {
    if (device) throw new Error(`--accel kvm: ${device}`);
    const probe = await probeKvm(qemu, options.kernel, options.probeTimeoutMs ?? PROBE_TIMEOUT_MS);
    if (!probe.ok) throw new Error(`--accel kvm: a guest kernel does not boot under KVM here: ${probe.reason}`);
    return { accel: 'kvm', reason: `asked for (--accel kvm); ${probe.reason}`, cached: false };
  }
  if (device) return { accel: 'tcg', reason: device, cached: false };

  const identity = { host: hostname(), kernel_release: release(), qemu: await qemuVersion(qemu) };
  const cacheFile = path.join(options.cacheDir, `accel-${identity.host.replace(/[^\w.-]/g, '_')}.json`);
  const known = await readCache(cacheFile);
  if (known && known.host === identity.host && known.kernel_release === identity.kernel_release && known.qemu === identity.qemu) {
    return { accel: known.accel, reason: known.reason, cached: true };
  }
  const probe = await probeKvm(qemu, options.kernel, options.probeTimeoutMs ?? PROBE_TIMEOUT_MS);
  const choice: AccelChoice = probe.ok
    ? { accel: 'kvm', reason: `KVM boots a guest kernel here (${probe.reason})`, cached: false }
    : { accel: 'tcg', reason: `/dev/kvm is there but a guest kernel does not boot under it (${probe.reason}); using TCG`, cached: false };
  await mkdir(options.cacheDir, { recursive: true });
  const temporary = `${cacheFile}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify({ ...identity, accel: choice.accel, reason: choice.reason, checked_at: new Date().toISOString() }, null, 2)}\n`);
  await rename(temporary, cacheFile);
  return choice;
}

/** Why `/dev/kvm` cannot be used by this process, or null when it can be opened for reading and writing. */
export function kvmDeviceProblem(device: string): string | null {
  try {
    accessSync(device, constants.R_OK | constants.W_OK);
    return null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `${device} does not exist (no KVM on this host); using TCG` : `${device} cannot be opened (${code}); using TCG`;
  }
}

interface ProbeResult {
  ok: boolean;
  reason: string;
}

/**
 * Boots `kernel` under KVM with no root file system and `panic=-1` (so the panic ends QEMU) and
 * watches the serial console. Tried with `-cpu host`, then with QEMU's default CPU.
 */
export async function probeKvm(qemu: string, kernel: string, timeoutMs: number): Promise<ProbeResult> {
  const reasons: string[] = [];
  for (const cpu of ['host', 'default']) {
    const result = await probeOnce(qemu, kernel, cpu, timeoutMs);
    if (result.ok) return { ok: true, reason: `-cpu ${cpu}: ${result.reason}` };
    reasons.push(`-cpu ${cpu}: ${result.reason}`);
  }
  return { ok: false, reason: reasons.join('; ') };
}

function probeOnce(qemu: string, kernel: string, cpu: string, timeoutMs: number): Promise<ProbeResult> {
  const args = [
    '-accel', 'kvm', ...(cpu === 'default' ? [] : ['-cpu', cpu]),
    '-m', '256', '-smp', '1', '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot',
    '-kernel', kernel, '-append', 'console=ttyS0 earlyprintk=ttyS0 panic=-1 root=/dev/nonexistent',
    '-serial', 'stdio',
  ];
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', qemu, ...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let console = '';
    let stderr = '';
    let settled = false;
    const finish = (result: ProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already ended.
      }
      resolve(result);
    };
    const timer = setTimeout(() => finish({ ok: false, reason: `no kernel panic on the console within ${timeoutMs} ms (${console ? 'the kernel started but did not get far' : 'nothing printed'})` }), timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      console = (console + chunk.toString('utf8')).slice(-8000);
      if (PROBE_SUCCESS.test(console)) finish({ ok: true, reason: `the kernel ran to its panic in ${Date.now() - started} ms` });
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2000)));
    child.on('error', (error) => finish({ ok: false, reason: error.message }));
    child.on('exit', (code, signal) => {
      // A panic with panic=-1 ends QEMU too: let its last output be read first.
      setTimeout(() => {
        if (PROBE_SUCCESS.test(console)) finish({ ok: true, reason: `the kernel ran to its panic in ${Date.now() - started} ms` });
        else finish({ ok: false, reason: `QEMU ended (${signal ?? `exit ${code}`})${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-1)[0]}` : ''}` });
      }, 50);
    });
  });
}

async function qemuVersion(qemu: string): Promise<string> {
  const text = await runCommand(qemu, ['--version']);
  return /version\s+(\S+)/.exec(text)?.[1] ?? text.split('\n')[0];
}

async function readCache(file: string): Promise<{ host: string; kernel_release: string; qemu: string; accel: Accel; reason: string } | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch {
    return null;
  }
}
