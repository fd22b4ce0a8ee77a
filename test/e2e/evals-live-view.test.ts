import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { projectVersion } from '../../bin/project-version';
import { ReferenceRunner } from '../../shared/simulator/runner/reference-runner';
import { startTestService, waitFor, type TestService } from '../support/service';

/**
 * docs/evals.md's live-view block, run as written with bash against a machine fresh from the
 * reference runner's `macos-15` image (issue 37: it used to click where a fresh machine has
 * nothing, and every call answered 409 `runner_refused`). What it typed must be on the disk the
 * state saves.
 */

const GUIDE = path.join(__dirname, '..', '..', 'docs', 'evals.md');

/** A file of a saved disk in the runner's data folder, as text; null when not on that disk. */
function savedFile(dataDir: string, stateId: string, version: number, file: string): string | null {
  const saved = JSON.parse(readFileSync(path.join(dataDir, 'disks', stateId, `${version}.json`), 'utf8')) as { disk: { entries: Array<{ path: string; kind: string; base64?: string }> } };
  const entry = saved.disk.entries.find((candidate) => candidate.path === file && candidate.kind === 'file');
  return entry ? Buffer.from(entry.base64!, 'base64').toString('utf8') : null;
}

/** Runs `script` with bash; its output and the HTTP status of each curl call (written to stderr by `-w`). */
function bash(script: string, env: Record<string, string>): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ stdout, stderr, code }));
  });
}

describe('docs/evals.md, the live view, run as written on a fresh machine', function () {
  this.timeout(90_000);
  let service: TestService;
  let key: string;
  let runner: ReferenceRunner;
  let dataDir: string;

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' }, ['web', 'worker-evals', 'worker-clock']);
    ({ key } = await service.newOrg('Live view doc'));
    const created = await service.api(key, 'POST', '/v1/runners', { name: 'doc rack' });
    dataDir = mkdtempSync(path.join(tmpdir(), 'live-view-doc-'));
    runner = new ReferenceRunner({
      token: created.body.token, baseUrl: service.baseUrl, name: 'doc rack', slots: 1, labels: [], images: ['macos-15', 'windows-11'], dataDir, bootMs: 0, version: projectVersion(), out: () => undefined,
    });
    runner.start();
    await waitFor(async () => (await service.api(key, 'GET', `/v1/runners/${created.body.runner_id}`)).body.status === 'online', 20_000, 'the runner online');
  });
  after(async () => {
    await runner?.stop();
    await service?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('opens Notes from the Dock, types and saves: each call answers ok, and the saved disk has the note', async () => {
    const block = /^```sh live-view\n([\s\S]*?)^```$/m.exec(readFileSync(GUIDE, 'utf8'))?.[1];
    expect(block, 'the ```sh live-view block of docs/evals.md').to.be.a('string');
    const made = await service.api(key, 'POST', '/v1/start_states', { name: 'by hand', from: 'macos-15', method: 'hand' });
    expect(made.status, JSON.stringify(made.body)).to.equal(200);
    const screen = `${service.baseUrl}${new URL(made.body.view.screen_url).pathname}/screen.png`;
    await waitFor(async () => (await fetch(screen)).status === 200, 20_000, 'the machine booted');

    const ran = await bash(block!, { INPUT_URL: service.baseUrl + new URL(made.body.view.input_url).pathname });
    expect(ran.code, ran.stderr).to.equal(0);
    const answers = ran.stdout.replace(/\}\{/g, '}\n{').trim().split('\n').map((line) => JSON.parse(line));
    expect(answers, ran.stdout).to.have.length(3);
    for (const answer of answers) expect(answer, ran.stdout).to.include({ ok: true }).and.to.have.property('frame').that.is.a('number');

    const saving = await service.api(key, 'POST', `/v1/start_states/${made.body.start_state_id}/save`);
    expect(saving.status, JSON.stringify(saving.body)).to.equal(200);
    await waitFor(async () => (await service.api(key, 'GET', `/v1/start_states/${made.body.start_state_id}`)).body.status === 'ready', 20_000, 'the state saved');
    expect(savedFile(dataDir, made.body.start_state_id, 1, '/home/user/Documents/Untitled.txt')).to.equal('hello');
  });
});
