import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Container } from '../../../shared/container';
import { CommandError } from '../../../shared/runners/hypervisor';
import { backingChain, MAX_CHAIN } from '../../../runner/qemu/disk-versions';
import type { QemuHypervisor } from '../../../runner/qemu/qemu-hypervisor';
import { prepareQemuProvider } from '../../../runner/qemu/qemu-provider';
import { startTestService, waitFor, type TestService } from '../../support/service';
import { qemuProcessesIn } from '../../support/qemu-processes';

// The QEMU provider behind the hypervisor interface, in this process, against a real Deskhand
// service (web only): machines restored from the image's running snapshot with the desktop app
// waiting in it, paired as the machine session they are given (a Linux computer at 1280×800),
// scripts, the screen and input through QMP, saved versions as qcow2 chains with their own
// running state, kept for the next machine and deleted. One machine at a time, 1 GiB, TCG.

const MEMORY_MB = 1024;


const percentile = (values: number[], p: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)];

describe('the QEMU hypervisor: machines paired as machine sessions, scripts, screen and input, saved versions', function () {
  this.timeout(120_000);
  let service: TestService;
  let container: Container;
  let orgId: string;
  let hypervisor: QemuHypervisor;
  let dataDir: string;
  let runRoot: string;
  const lines: Array<Record<string, any>> = [];
  let count = 0;

  const machineSession = async (): Promise<string> => (await container.sessions.createMachineSession(container.db, { orgId, label: 'qemu hypervisor test' })).code;
  const ready = () => lines.filter((line) => line.event === 'machine_ready');

  async function withMachine<T>(disk: { image: string; state?: string; version?: number }, work: (machineId: string) => Promise<T>): Promise<T> {
    const machineId = `mc_qemu_${++count}`;
    await hypervisor.make(machineId, { disk, code: await machineSession(), os: 'linux' });
    try {
      return await work(machineId);
    } finally {
      await hypervisor.destroy(machineId);
    }
  }

  before(async function () {
    // The first run on a host builds the image (about 4 minutes) and cold-boots it with the app
    // disk (about 90 s under TCG); later runs take both from ~/.cache/deskhand/images.
    this.timeout(45 * 60_000);
    service = await startTestService({}, ['web']);
    container = service.running.container;
    orgId = (await service.newOrg('QEMU hypervisor org')).orgId;
    dataDir = mkdtempSync(path.join(tmpdir(), 'dhq-data-'));
    runRoot = mkdtempSync('/tmp/dhq-run-');
    const progress = (line: object): void => {
      lines.push(line as Record<string, any>);
      if ((line as { event?: string }).event !== 'machine_ready') process.stderr.write(`      ${JSON.stringify(line)}\n`);
    };
    const provide = await prepareQemuProvider({ baseUrl: service.baseUrl, slots: 1, dataDir, accel: 'auto', memoryMb: MEMORY_MB, out: progress, runRoot });
    hypervisor = provide(progress);
  });

  afterEach(async function () {
    expect(hypervisor.ids(), 'machines left by the test').to.deep.equal([]);
    expect(qemuProcessesIn(runRoot), 'QEMU processes left by the test').to.deep.equal([]);
  });

  after(async function () {
    this.timeout(60_000);
    await hypervisor?.destroyAll();
    await hypervisor?.close();
    const made = ready().map((line) => line.ms as number);
    if (made.length) {
      const part = (name: string) => ready().map((line) => line[name] as number);
      process.stderr.write(`      make until the service accepted the hello (ms): ${made.join(', ')}; p50 ${percentile(made, 50)}, p95 ${percentile(made, 95)}; restore p50 ${percentile(part('restore_ms'), 50)}, pairing p50 ${percentile(part('pair_ms'), 50)}\n`);
    }
    await service?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    if (runRoot) await rm(runRoot, { recursive: true, force: true });
  });

  it('makes a machine whose desktop app pairs as the machine session: a Linux computer at 1280×800', async () => {
    const code = await machineSession();
    await hypervisor.make('mc_qemu_pair', { disk: { image: 'debian-12' }, code, os: 'linux' });
    try {
      const session = await waitFor(async () => {
        const row = await container.db('sessions').where({ code }).first();
        return row?.device ? row : null;
      }, 10_000, 'the session to hold the device');
      expect(session.device).to.deep.include({ os: 'linux', width: 1280, height: 800, name: 'mc_qemu_pair' });
      const line = ready().at(-1)!;
      expect(line).to.deep.include({ machine_id: 'mc_qemu_pair', device: { os: 'linux', width: 1280, height: 800, app_version: line.device.app_version } });
      // The app and the launcher, started by the session from the app disk (anchored: the script's own command line names them too).
      const result = await hypervisor.run('mc_qemu_pair', { script: 'id -un; pgrep -c -f "^node /opt/deskhand/dist/desktop/src/guest-main"; pgrep -c -f "^node /opt/deskhand/dist/desktop/src/launcher-main"', timeoutMs: 20_000 });
      expect(result).to.include({ exit_code: 0, stdout: 'user\n1\n1\n', timed_out: false });
    } finally {
      await hypervisor.destroy('mc_qemu_pair');
    }
  });

  it('refuses another image, another system, a version it does not keep, and a second machine beyond its one slot', async () => {
    const code = await machineSession();
    const refusal = async (request: Parameters<QemuHypervisor['make']>[1]) => hypervisor.make(`mc_refused_${++count}`, request).then(() => null, (error: CommandError) => error);
    expect(await refusal({ disk: { image: 'macos-15' }, code, os: 'mac' })).to.include({ code: 'no_such_image' });
    expect(await refusal({ disk: { image: 'debian-12' }, code, os: 'windows' })).to.include({ code: 'failed' });
    expect(await refusal({ disk: { image: 'debian-12', state: 'ss_missing', version: 1 }, code, os: 'linux' })).to.include({ code: 'no_such_disk' });
    expect(await refusal({ disk: { image: 'debian-12' }, code: 'NOPE-NOPE', os: 'linux' })).to.include({ code: 'boot_failed' });
    await withMachine({ image: 'debian-12' }, async () => {
      const second = await refusal({ disk: { image: 'debian-12' }, code: await machineSession(), os: 'linux' });
      expect(second).to.include({ code: 'failed' });
      expect(second!.message).to.contain('slots');
    });
  });

  it('shows the screen through QMP and takes a click and typing into an xterm the launcher opened', async () => {
    await withMachine({ image: 'debian-12' }, async (machineId) => {
      const before = (await hypervisor.screen(machineId))!;
      expect({ width: before.width, height: before.height }).to.deep.equal({ width: 1280, height: 800 });
      expect(before.png.subarray(1, 4).toString()).to.equal('PNG');
      // The launcher is a dock along the bottom: Browser, Notes, Terminal (each 120 wide, 8 apart).
      const clicked = await hypervisor.input(machineId, { type: 'click', x: 8 + 2 * 128 + 60, y: 800 - 20 });
      expect(clicked.ok).to.equal(true);
      const focused = 'xprop -id "$(xprop -root _NET_ACTIVE_WINDOW | awk \'{print $5}\')" WM_CLASS 2>/dev/null | grep -q xterm';
      await waitFor(async () => (await hypervisor.run(machineId, { script: focused, timeoutMs: 20_000 })).exit_code === 0, 30_000, 'xterm to start and take the focus');
      const typed = await hypervisor.input(machineId, { type: 'type', text: 'echo typed-in-vm > ~/typed.txt\n' });
      expect(typed.ok).to.equal(true);
      const file = await waitFor(async () => (await hypervisor.run(machineId, { script: 'cat ~/typed.txt 2>/dev/null', timeoutMs: 20_000 })).stdout, 20_000, 'the typed command to run');
      expect(file).to.equal('typed-in-vm\n');
      const after = (await hypervisor.screen(machineId))!;
      expect(after.frame).to.be.above(before.frame);
      expect((await hypervisor.input(machineId, { type: 'type', text: 'é' })).ok).to.equal(false);
      expect(await hypervisor.input(machineId, { type: 'click_label', label: 'Notes' })).to.include({ ok: false });
    });
  });

  it('saves a machine as a version with its running state; the next machine from it has the file, a sibling from the image does not', async () => {
    let bytes = 0;
    await withMachine({ image: 'debian-12' }, async (machineId) => {
      expect((await hypervisor.run(machineId, { script: 'echo "Meeting at 3" > ~/meeting.txt', timeoutMs: 20_000 })).exit_code).to.equal(0);
      ({ bytes } = await hypervisor.save(machineId, { image: 'debian-12', state: 'ss_hyper', version: 1 }));
      const again = await hypervisor.run(machineId, { script: 'true', timeoutMs: 5000 }).then(() => null, (error: CommandError) => error);
      expect(again).to.include({ code: 'no_such_machine' });
    });
    expect(bytes).to.be.above(1_000_000);
    const version = path.join(dataDir, 'disks', 'ss_hyper', '1');
    expect(statSync(path.join(version, 'disk.qcow2')).mode & 0o777).to.equal(0o444);
    const manifest = JSON.parse(readFileSync(path.join(version, 'version.json'), 'utf8'));
    // Saved from a machine of the image's snapshot: rebased off the snapshot's overlay onto the image's own disk.
    expect(manifest).to.include({ image: 'debian-12', version: 1, flattened: true });
    expect(await backingChain(path.join(version, 'disk.qcow2'))).to.have.length(1);

    await withMachine({ image: 'debian-12', state: 'ss_hyper', version: 1 }, async (machineId) => {
      const read = await hypervisor.run(machineId, { script: 'cat ~/meeting.txt && echo v2 >> ~/meeting.txt', timeoutMs: 20_000 });
      expect(read.stdout).to.equal('Meeting at 3\n');
      await hypervisor.save(machineId, { image: 'debian-12', state: 'ss_hyper', version: 2 });
    });
    // Version 2 stands on version 1 (the same state), not flattened.
    const second = JSON.parse(readFileSync(path.join(dataDir, 'disks', 'ss_hyper', '2', 'version.json'), 'utf8'));
    expect(second).to.include({ flattened: false });
    expect(second.chain).to.have.length(2);
    expect(MAX_CHAIN).to.be.at.least(2);
    await withMachine({ image: 'debian-12', state: 'ss_hyper', version: 2 }, async (machineId) => {
      expect((await hypervisor.run(machineId, { script: 'cat ~/meeting.txt', timeoutMs: 20_000 })).stdout).to.equal('Meeting at 3\nv2\n');
    });
    await withMachine({ image: 'debian-12' }, async (machineId) => {
      expect((await hypervisor.run(machineId, { script: 'test -e ~/meeting.txt && echo seen || echo fresh', timeoutMs: 20_000 })).stdout).to.equal('fresh\n');
    });

    // A runner started again with the same data folder makes machines from the kept versions.
    const againRoot = mkdtempSync('/tmp/dhq-run-');
    const again = (await prepareQemuProvider({ baseUrl: service.baseUrl, slots: 1, dataDir, accel: 'auto', memoryMb: MEMORY_MB, out: () => undefined, runRoot: againRoot }))((line) => lines.push(line as Record<string, any>));
    try {
      await again.make('mc_again', { disk: { image: 'debian-12', state: 'ss_hyper', version: 2 }, code: await machineSession(), os: 'linux' });
      expect((await again.run('mc_again', { script: 'cat ~/meeting.txt', timeoutMs: 20_000 })).stdout).to.equal('Meeting at 3\nv2\n');
    } finally {
      await again.destroyAll();
      await again.close();
      await rm(againRoot, { recursive: true, force: true });
    }

    await hypervisor.deleteState('ss_hyper');
    expect(existsSync(path.join(dataDir, 'disks', 'ss_hyper'))).to.equal(false);
    const gone = await hypervisor.make('mc_gone', { disk: { image: 'debian-12', state: 'ss_hyper', version: 1 }, code: await machineSession(), os: 'linux' }).then(() => null, (error: CommandError) => error);
    expect(gone).to.include({ code: 'no_such_disk' });
  });

  it('boots a version with no running state for this runner\'s hardware (another app disk, memory or accelerator) once, then starts it in seconds', async function () {
    // A cold boot of the version's disk under TCG: about a minute.
    this.timeout(10 * 60_000);
    await withMachine({ image: 'debian-12' }, async (machineId) => {
      await hypervisor.run(machineId, { script: 'echo kept > ~/kept.txt', timeoutMs: 20_000 });
      await hypervisor.save(machineId, { image: 'debian-12', state: 'ss_cold', version: 1 });
    });
    // As if it had been saved by a runner with other hardware: no state for this one's key.
    const snapshots = path.join(dataDir, 'disks', 'ss_cold', '1', 'snapshots');
    await rm(snapshots, { recursive: true, force: true });
    for (const _ of [1, 2]) {
      await withMachine({ image: 'debian-12', state: 'ss_cold', version: 1 }, async (machineId) => {
        expect((await hypervisor.run(machineId, { script: 'cat ~/kept.txt', timeoutMs: 20_000 })).stdout).to.equal('kept\n');
      });
    }
    expect(lines.filter((line) => line.event === 'version_snapshot' && line.state === 'ss_cold').map((line) => line.step)).to.deep.equal(['cold_boot']);
    expect(readdirSync(snapshots)).to.have.length(1);
    expect(ready().at(-1)!.ms).to.be.below(15_000);
    await hypervisor.deleteState('ss_cold');
  });

  it('makes machines ready (the service accepted the hello) in seconds, and runs a script in under a second or so', async () => {
    const scripts: number[] = [];
    for (let i = 0; i < 4; i++) {
      await withMachine({ image: 'debian-12' }, async (machineId) => {
        for (let j = 0; j < 3; j++) {
          const began = Date.now();
          expect((await hypervisor.run(machineId, { script: 'id -un', timeoutMs: 20_000 })).stdout).to.equal('user\n');
          scripts.push(Date.now() - began);
        }
      });
    }
    const made = ready().map((line) => line.ms as number);
    process.stderr.write(`      a script (id -un, as user, with its tails) (ms): p50 ${percentile(scripts, 50)}, p95 ${percentile(scripts, 95)}\n`);
    const saves = lines.filter((line) => line.event === 'version_kept').map((line) => `${line.ms} ms (app reset ${line.reset_ms}, state ${line.state_ms})`);
    process.stderr.write(`      saves: ${saves.join('; ')}\n`);
    expect(percentile(made, 50)).to.be.below(10_000);
  });
});
