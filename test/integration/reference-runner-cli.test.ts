import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { testEnv } from '../support/environment';
import { FakeRunnerService } from '../support/fake-runner-service';
import { waitFor } from '../support/service';

const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');

/** `npx deskhand runner` as a real child process, against a stand-in for the service's runner side. */
describe('npx deskhand runner (a child process)', function () {
  this.timeout(60_000);
  let fake: FakeRunnerService;
  let dataDir: string;
  let child: ChildProcessWithoutNullStreams | null = null;

  beforeEach(async () => {
    fake = await FakeRunnerService.start();
    dataDir = mkdtempSync(path.join(tmpdir(), 'deskhand-runner-cli-'));
  });
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    child = null;
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Spawns the runner; `lines()` are its stdout JSON lines so far, `stderr()` its stderr. */
  function spawnRunner(...args: string[]) {
    const spawned = spawn(process.execPath, [bin, 'runner', ...args], { env: { ...process.env, ...testEnv() } });
    child = spawned;
    let stdout = '';
    let stderr = '';
    spawned.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    spawned.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(spawned, 'exit').then(([code]) => code as number | null);
    return {
      child: spawned,
      exited,
      lines: () => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>),
      stderr: () => stderr,
    };
  }

  it('serves machines, prints one JSON line per event, and on SIGTERM destroys them, disconnects and exits 0', async () => {
    const runner = spawnRunner('--token', 'dhr_cli', '--base-url', fake.baseUrl, '--name', 'cli rack', '--labels', 'eu,gpu', '--images', 'macos-15', '--slots', '1', '--data-dir', dataDir);
    await fake.waitForRunner();
    expect(fake.hellos[0]).to.include({ token: 'dhr_cli', provider: 'simulated', slots: 1, busy: 0 });
    expect(fake.hellos[0]!.labels).to.deep.equal(['eu', 'gpu']);
    expect(fake.hellos[0]!.images).to.deep.equal(['macos-15']);

    const made = await fake.command({ command_id: 'cmd_cli_1', type: 'machine.make', machine_id: 'mc_cli', args: { disk: { image: 'macos-15' }, session: { code: 'ABCD-EFGH' }, os: 'mac' } });
    expect(made.ok).to.equal(true);
    expect(fake.desktopHellos.map((hello) => hello.code)).to.deep.equal(['ABCD-EFGH']);
    const ran = await fake.command({ command_id: 'cmd_cli_2', type: 'machine.run', machine_id: 'mc_cli', args: { script: 'cat Documents/report.txt | grep -c Revenue', timeout_ms: 5000 } });
    expect(ran).to.deep.include({ ok: true, result: { exit_code: 0, output: '1\n', stdout: '1\n', stderr: '' } });

    runner.child.kill('SIGTERM');
    expect(await runner.exited).to.equal(0);
    const events = runner.lines().map((line) => line.event);
    expect(events).to.include.members(['connected', 'hello', 'machine_made', 'script_run', 'destroyed', 'stopped']);
    expect(runner.lines().find((line) => line.event === 'destroyed')).to.include({ machine_id: 'mc_cli' });
    await waitFor(() => !fake.connected, 5000, 'the runner to disconnect');
  });

  it('exits 1 with a clear stderr line when the service refuses its token', async () => {
    fake.helloReply = () => ({ ok: false, code: 'unknown_token', message: 'No runner has this token.' });
    const runner = spawnRunner('--token', 'dhr_nobody', '--base-url', fake.baseUrl, '--data-dir', dataDir);
    expect(await runner.exited).to.equal(1);
    expect(runner.stderr()).to.contain('refused the runner token (unknown_token): No runner has this token.');
  });

  it('refuses bad options on stderr with a non-zero exit', async () => {
    for (const args of [['--token', 't', '--slots', 'two'], ['--token', 't', '--base-url', 'ftp://x'], ['--slots', '2'], ['--token', 't', '--boot-ms', '-5']]) {
      const runner = spawnRunner(...args, '--data-dir', dataDir);
      expect(await runner.exited, args.join(' ')).to.not.equal(0);
      expect(runner.stderr(), args.join(' ')).to.match(/error/);
    }
    expect(fake.hellos).to.deep.equal([]);
  });
});
