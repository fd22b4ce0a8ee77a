import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { chooseAccel, type AccelChoice } from '../../../runner/qemu/accel';
import { writeForwarder } from '../../../runner/qemu/guest-forward';
import { defaultImageDir, ensureImage, type BuiltImage } from '../../../runner/qemu/image-builder';
import type { QemuMachine } from '../../../runner/qemu/qemu-machine';
import { QemuProcesses } from '../../../runner/qemu/qemu-process';
import { ensureSnapshot, restoreMachine, type RestoreTimings, type Snapshot } from '../../../runner/qemu/qemu-snapshot';
import { qemuProcessesIn } from '../../support/qemu-processes';

// The QEMU provider's first slice with real processes: the debian-12 image (built on the first
// run, which takes minutes, then taken from ~/.cache/deskhand/images), its running snapshot (a
// cold boot on the first run), and machines restored from it, one at a time, with scripts run
// as `user` through the guest agent. Every test checks that none of its QEMUs is left.

const MEMORY_MB = 1024;


async function until<T>(condition: () => T | Promise<T>, what: string, timeoutMs: number): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 20; ; pause = Math.min(pause * 2, 500)) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await sleep(pause);
  }
}

describe('QEMU machines: the debian-12 image, its snapshot, scripts through the guest agent', function () {
  this.timeout(60_000);
  let runDir: string;
  let processes: QemuProcesses;
  let image: BuiltImage;
  let accel: AccelChoice;
  let snapshot: Snapshot;
  const restores: RestoreTimings[] = [];
  let count = 0;

  /** Restores a machine, runs `work` on it, and destroys it whatever happens. */
  async function withMachine<T>(work: (machine: QemuMachine) => Promise<T>, forward?: { guestPort: number; command: string[] }): Promise<T> {
    const { machine, timings } = await restoreMachine(snapshot, { name: `t${++count}`, dir: path.join(runDir, `m${count}`), processes, forward });
    restores.push(timings);
    try {
      return await work(machine);
    } finally {
      await machine.destroy();
    }
  }

  before(async function () {
    // The first run on a host builds the image (about 4 minutes here) and cold-boots it once
    // under TCG (about 70 s); later runs take both from the cache.
    this.timeout(45 * 60_000);
    runDir = mkdtempSync(path.join(tmpdir(), 'dhq-test-'));
    processes = new QemuProcesses();
    const progress = (line: object): void => void process.stderr.write(`      ${JSON.stringify(line)}\n`);
    image = await ensureImage({ out: progress });
    accel = await chooseAccel({ requested: 'auto', kernel: image.kernel, cacheDir: defaultImageDir() });
    progress({ event: 'accel', ...accel });
    snapshot = await ensureSnapshot({ image, accel: accel.accel, memoryMb: MEMORY_MB, processes, runDir, out: progress });
  });

  afterEach(async function () {
    // A test that failed half-way may have left its machine: end it, then fail if one was left.
    const left = qemuProcessesIn(runDir);
    await processes.close();
    processes = new QemuProcesses();
    expect(left, 'QEMU processes left by the test').to.deep.equal([]);
  });

  after(async function () {
    this.timeout(30_000);
    await processes?.close();
    if (restores.length) {
      const ready = restores.map((timing) => timing.clock_ms).sort((a, b) => a - b);
      process.stderr.write(`      restores until ready (ms): ${ready.join(', ')}; p50 ${ready[Math.floor((ready.length - 1) / 2)]}\n`);
    }
    if (runDir) await rm(runDir, { recursive: true, force: true });
  });

  // Whatever this host offers: with no usable KVM device the answer is TCG at once, saying why;
  // with one (here a stand-in file the process may open, so that the probe runs on any host), the
  // probe boots the image's kernel once and the next choice is taken from its answer.
  it('chooses the accelerator once per host and says why', async () => {
    const cacheDir = mkdtempSync(path.join(tmpdir(), 'dhq-accel-'));
    try {
      const noDevice = await chooseAccel({ requested: 'auto', kernel: image.kernel, cacheDir, kvmDevice: path.join(cacheDir, 'no-kvm') });
      expect(noDevice).to.include({ accel: 'tcg', cached: false });
      expect(noDevice.reason).to.contain('no-kvm');
      const device = path.join(cacheDir, 'kvm');
      writeFileSync(device, '');
      const probed = await chooseAccel({ requested: 'auto', kernel: image.kernel, cacheDir, kvmDevice: device });
      expect(probed.cached).to.equal(false);
      expect(probed.reason).to.be.a('string').and.not.equal('');
      const again = await chooseAccel({ requested: 'auto', kernel: image.kernel, cacheDir, kvmDevice: device });
      expect(again).to.deep.equal({ ...probed, cached: true });
      // The suite's own choice (the real device, or none) is one of the two answers.
      expect(['kvm', 'tcg']).to.include(accel.accel);
      expect(await chooseAccel({ requested: 'tcg', kernel: image.kernel, cacheDir })).to.include({ accel: 'tcg', cached: false });
    } finally {
      await rm(cacheDir, { recursive: true, force: true });
    }
  });

  it('restores a machine from the snapshot and runs a script as user', async () => {
    await withMachine(async (machine) => {
      const result = await machine.runScript('echo hi > ~/x && id -un', { timeoutMs: 20_000 });
      expect(result).to.include({ exit_code: 0, stdout: 'user\n', stderr: '', timed_out: false });
      const check = await machine.runScript('cat "$HOME/x"; pwd; echo "$DISPLAY"; stat -c %U ~/x', { timeoutMs: 20_000 });
      expect(check.stdout).to.equal('hi\n/home/user\n:0\nuser\n');
    });
  });

  it('gives a second machine from the same snapshot a fresh disk that does not see the first one’s file', async () => {
    const frozen = statSync(snapshot.disk);
    await withMachine(async (machine) => {
      expect((await machine.runScript('echo first > ~/x', { timeoutMs: 20_000 })).exit_code).to.equal(0);
    });
    await withMachine(async (machine) => {
      const result = await machine.runScript('test -e ~/x && echo seen || echo fresh', { timeoutMs: 20_000 });
      expect(result.stdout).to.equal('fresh\n');
    });
    const after = statSync(snapshot.disk);
    expect({ size: after.size, mtime: after.mtimeMs }).to.deep.equal({ size: frozen.size, mtime: frozen.mtimeMs });
  });

  it('shows the X session on the virtual screen, 1280×800, with the apps a script opens', async () => {
    await withMachine(async (machine) => {
      const opened = await machine.runScript('xterm -e "sleep 600" >/dev/null 2>&1 & xrandr | head -1; for i in $(seq 100); do xprop -root _NET_CLIENT_LIST_STACKING | grep -q 0x && break; sleep 0.2; done; xprop -root _NET_SUPPORTING_WM_CHECK _NET_CLIENT_LIST_STACKING', { timeoutMs: 30_000 });
      expect(opened.stdout).to.match(/current 1280 x 800/);
      // openbox manages the screen, and the xterm the script started is among its windows.
      expect(opened.stdout).to.match(/_NET_SUPPORTING_WM_CHECK\(WINDOW\): window id # 0x/);
      expect(opened.stdout).to.match(/_NET_CLIENT_LIST_STACKING\(WINDOW\): window id # 0x/);
      const file = path.join(machine.dir, 'screen.png');
      await machine.qmp.execute('screendump', { filename: file, format: 'png' });
      const png = readFileSync(file);
      expect({ width: png.readUInt32BE(16), height: png.readUInt32BE(20) }).to.deep.equal({ width: 1280, height: 800 });
    });
  });

  it('keeps the exit status and the tails of stdout and stderr apart', async () => {
    await withMachine(async (machine) => {
      const result = await machine.runScript('echo out; echo err >&2; exit 3', { timeoutMs: 20_000 });
      expect(result).to.include({ exit_code: 3, stdout: 'out\n', stderr: 'err\n', output: 'out\nerr\n', timed_out: false });
      const long = await machine.runScript('seq 1 20000', { timeoutMs: 20_000 });
      expect(Buffer.byteLength(long.stdout)).to.be.at.most(16 * 1024);
      expect(long.stdout.endsWith('\n19999\n20000\n')).to.equal(true);
    });
  });

  it('ends a script that hangs at its time limit, with what it printed and nothing of it left running', async () => {
    await withMachine(async (machine) => {
      const result = await machine.runScript('echo started; sleep 600; echo never', { timeoutMs: 3000 });
      expect(result).to.include({ exit_code: 124, stdout: 'started\n', timed_out: true });
      expect(result.duration_ms).to.be.within(3000, 12_000);
      const left = await machine.runScript('pgrep -u user -x sleep || echo none', { timeoutMs: 20_000 });
      expect(left.stdout).to.equal('none\n');
    });
  });

  it('lets an app started in the background outlive its script without holding it', async () => {
    await withMachine(async (machine) => {
      const started = await machine.runScript('sleep 300 & echo started', { timeoutMs: 20_000 });
      expect(started).to.include({ exit_code: 0, stdout: 'started\n' });
      expect(started.duration_ms).to.be.below(10_000);
      const running = await machine.runScript('pgrep -u user -x sleep >/dev/null && echo running', { timeoutMs: 20_000 });
      expect(running.stdout).to.equal('running\n');
    });
  });

  it('lets the guest reach the service at 10.0.2.2 and nothing else', async () => {
    const service = http.createServer((request, response) => response.end(`service ${request.url}\n`));
    const other = http.createServer((_request, response) => response.end('other\n'));
    await Promise.all([service, other].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    const port = (service.address() as AddressInfo).port;
    const otherPort = (other.address() as AddressInfo).port;
    try {
      const command = await writeForwarder(runDir, '127.0.0.1', port);
      await withMachine(async (machine) => {
        const probe = (host: string, probePort: number): string =>
          `timeout 5 bash -c 'exec 3<>/dev/tcp/${host}/${probePort} && printf "GET /${host} HTTP/1.0\\r\\n\\r\\n" >&3 && tail -n 1 <&3' 2>/dev/null || echo "${host}:${probePort} unreachable"`;
        const result = await machine.runScript([probe('10.0.2.2', port), probe('10.0.2.2', otherPort), probe('10.0.2.254', otherPort), probe('1.1.1.1', 80)].join('\n'), { timeoutMs: 30_000 });
        expect(result.stdout).to.equal(`service /10.0.2.2\n10.0.2.2:${otherPort} unreachable\n10.0.2.254:${otherPort} unreachable\n1.1.1.1:80 unreachable\n`);
      }, { guestPort: port, command });
    } finally {
      service.close();
      other.close();
    }
  });

  it('leaves no QEMU behind when the process that started it is killed', async () => {
    const dir = path.join(runDir, 'holder');
    const holder = spawn(process.execPath, ['-r', 'tsx/cjs', path.join(__dirname, 'machine-holder.ts'), JSON.stringify(snapshot), dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    holder.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        holder.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()));
        holder.once('exit', (code) => reject(new Error(`The holder exited (${code}) before its machine was ready: ${stderr}`)));
      });
      const pid = (JSON.parse(line) as { qemu_pid: number }).qemu_pid;
      expect(qemuProcessesIn(dir)).to.deep.equal([pid]);
      holder.kill('SIGKILL');
      await until(() => qemuProcessesIn(dir).length === 0, 'the QEMU of the killed process to end', 10_000);
    } finally {
      holder.kill('SIGKILL');
      // The holder's QEMU is not ours to reap: if the test failed, end it by its pid.
      for (const pid of qemuProcessesIn(dir)) process.kill(pid, 'SIGKILL');
    }
  });
});
