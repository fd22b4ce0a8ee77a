import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { testEnv } from '../support/environment';
import { startTestService, waitFor, type TestService } from '../support/service';
import { connectDesktop, script } from '../support/tasks';
import { freePort } from '../support/ports';

const run = promisify(execFile);
const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');
/** A port nothing listens on (the discard port; unprivileged processes cannot bind it). */
const NOWHERE = 'http://127.0.0.1:9';
/** No model can run in a child given these. */
const NO_MODELS = { DESKHAND_SCRIPTED_MODELS: '', ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '' };

async function deskhand(env: Record<string, string>, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { env: { ...process.env, ...testEnv(), ...env } });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout: string; stderr: string; code: number };
    return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
  }
}

/** A long-running command as a child process, with what it has written so far. */
class Child {
  stdout = '';
  stderr = '';
  readonly process: ChildProcessWithoutNullStreams;
  constructor(args: string[], env: Record<string, string>) {
    this.process = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...testEnv(), ...env } });
    this.process.stdout.on('data', (chunk: Buffer) => (this.stdout += chunk.toString()));
    this.process.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
  }
  async stop(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    this.process.kill('SIGTERM');
    await exited;
  }
}

describe('npx deskhand: first-run friction', function () {
  this.timeout(60_000);
  let service: TestService;
  let key: string;
  let orgId: string;
  let desktop: DesktopClient;
  const children: Child[] = [];
  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' }, ['web', 'worker-agent']);
    ({ key, orgId } = await service.newOrg('Friction org'));
  });
  afterEach(async () => {
    await Promise.all(children.splice(0).map((child) => child.stop()));
  });
  after(async () => {
    await desktop?.close();
    await service.stop();
  });

  it('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
    const { stdout, code } = await deskhand({}, '--version');
    expect(code).to.equal(0);
    expect(stdout.trim()).to.equal(version);
  });

  it('orgs list prints every org as JSON', async () => {
    const { stdout, code } = await deskhand({}, 'orgs', 'list');
    expect(code).to.equal(0);
    const orgs = JSON.parse(stdout) as Array<{ org_id: string; name: string }>;
    expect(orgs.find((org) => org.org_id === orgId)).to.include({ object: 'org', name: 'Friction org' });
  });

  it("keys list --org prints the org's keys as JSON, revoked ones marked and no secret", async () => {
    const created = JSON.parse((await deskhand({}, 'keys', 'create', '--org', orgId, '--name', 'ci')).stdout);
    await deskhand({}, 'keys', 'revoke', created.key_id);
    const { stdout, code } = await deskhand({}, 'keys', 'list', '--org', orgId);
    expect(code).to.equal(0);
    const keys = JSON.parse(stdout) as Array<Record<string, unknown>>;
    expect(keys.map((k) => k.name)).to.deep.equal(['Default key', 'ci']);
    expect(keys[1]!.revoked_at).to.be.a('string');
    expect(keys[0]!.revoked_at).to.equal(null);
    expect(stdout).not.to.include(created.api_key);
    expect(keys.every((k) => !('api_key' in k) && !('hash' in k))).to.equal(true);
    const unknown = await deskhand({}, 'keys', 'list', '--org', 'org_nope');
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.include('no org org_nope');
  });

  it('tasks follow prints the events readably and exits when the task ends; --json prints JSON lines', async () => {
    const connected = await connectDesktop(service, key);
    desktop = connected.client;
    const started = await service.api(key, 'POST', `/v1/sessions/${connected.code}/tasks`, { prompt: script('done "finished"') });
    expect(started.status).to.equal(200);
    const taskId = started.body.task_id as string;
    const env = { DESKHAND_API_KEY: key, DESKHAND_BASE_URL: service.baseUrl };

    const readable = await deskhand(env, 'tasks', 'follow', taskId);
    expect(readable.code, readable.stderr).to.equal(0);
    const lines = readable.stdout.trim().split('\n');
    expect(lines[0]).to.match(/^\d\d:\d\d:\d\d {2}#1 +started /);
    expect(lines.at(-1)).to.equal(`Task ${taskId} completed: finished`);

    const json = await deskhand(env, 'tasks', 'follow', taskId, '--json');
    expect(json.code).to.equal(0);
    const objects = json.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(objects[0]).to.include({ cursor: 1, type: 'started' });
    expect(objects.slice(0, -1).map((event) => event.cursor)).to.deep.equal(objects.slice(0, -1).map((_, i) => i + 1));
    expect(objects.at(-1).task).to.include({ task_id: taskId, status: 'completed', done: true });
  });

  it('tasks follow says what is wrong with an unknown task or a missing key', async () => {
    const unknown = await deskhand({ DESKHAND_API_KEY: key, DESKHAND_BASE_URL: service.baseUrl }, 'tasks', 'follow', 'task_nope');
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.match(/refused \(404\)/);
    const noKey = await deskhand({ DESKHAND_API_KEY: '', DESKHAND_BASE_URL: service.baseUrl }, 'tasks', 'follow', 'task_nope');
    expect(noKey.stderr).to.include('DESKHAND_API_KEY is not set');
  });

  it('tasks follow against a port nobody listens on says so on stderr at once and keeps retrying', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const child = new Child(['tasks', 'follow', 'task_anything'], { DESKHAND_API_KEY: key, DESKHAND_BASE_URL: nowhere });
    children.push(child);
    // The bound on the command itself is test/integration/cli-unreachable.test.ts's; this one also takes in Node's start-up.
    await waitFor(() => child.stderr.includes('cannot reach'), 10_000, 'the warning');
    expect(child.stderr).to.match(new RegExp(`^deskhand: cannot reach ${nowhere} \\(DESKHAND_BASE_URL\\): connection refused; retrying for about \\d+ s \\(Ctrl\\+C stops\\)\\.\\n$`));
    expect(child.process.exitCode).to.equal(null);
  });

  it('evals run and evals import against a port nobody listens on exit 1 with one line naming it', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const env = { DESKHAND_API_KEY: key, DESKHAND_BASE_URL: nowhere };
    const cases = path.join(mkdtempSync(path.join(tmpdir(), 'friction-cli-')), 'cases.json');
    writeFileSync(cases, JSON.stringify([{ key: 'one', start_state: 'macos-15', prompt: 'done "ok"' }]));
    try {
      for (const args of [['evals', 'run', '--set', 'ts_anything'], ['evals', 'import', cases]]) {
        const result = await deskhand(env, ...args);
        expect(result.code, args.join(' ')).to.equal(1);
        expect(result.stderr, args.join(' ')).to.equal(`deskhand: cannot reach ${nowhere} (DESKHAND_BASE_URL): connection refused\n`);
      }
    } finally {
      rmSync(path.dirname(cases), { recursive: true, force: true });
    }
  });

  it('desktop with a code the service refuses prints the error alone, not the usage after it', async () => {
    const refused = await deskhand({}, 'desktop', '--code', 'NOPE-NOPE', '--base-url', service.baseUrl);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/^error: the service refused the pairing code \(\w+\): .+\n$/);
    expect(refused.stderr).not.to.include('Usage:');
  });

  it('desktop --help shows the base URL it really uses by default', async () => {
    // Commander wraps help at the terminal's width: read it as one line.
    const help = async (env: Record<string, string>) => (await deskhand(env, 'desktop', '--help')).stdout.replace(/\s+/g, ' ');
    expect(await help({ PORT: '8123', DESKHAND_BASE_URL: '' })).to.include('(default: "http://localhost:8123")');
    expect(await help({ DESKHAND_BASE_URL: 'http://deskhand.test:9000' })).to.include('(default: "http://deskhand.test:9000")');
  });

  for (const command of [
    ['desktop', '--code', 'ABCD-EFGH'],
    ['runner', '--token', `dhr_${'a'.repeat(38)}`],
  ]) {
    it(`${command[0]} with a wrong --base-url says on stderr that it cannot reach the service`, async () => {
      const child = new Child([...command, '--base-url', NOWHERE], {});
      children.push(child);
      await waitFor(() => child.stderr.includes('cannot reach the service'), 20_000);
      expect(child.stderr).to.include(`cannot reach the service at ${NOWHERE}`);
      expect(child.stderr).to.include('--base-url');
      // Once, not on every retry: the JSON lines carry each attempt.
      await waitFor(() => (child.stdout.match(/connect_error/g) ?? []).length >= 2, 20_000);
      expect(child.stderr.match(/cannot reach/g)).to.have.length(1);
    });
  }

  it('start prints one line with its address and warns when no model can run', async () => {
    const child = new Child(['start', '--only', 'web', '--no-migrate'], { ...NO_MODELS, PORT: '0' });
    children.push(child);
    await waitFor(() => /Warning: no model can run/.test(child.stdout), 30_000);
    expect(child.stdout).to.match(/^Deskhand listening on http:\/\/localhost:\d+(, reached as \S+)? \(web\)$/m);
    expect(child.stdout).to.include('DESKHAND_SCRIPTED_MODELS=1');
  });

  it('start gives no model warning when the scripted model serves', async () => {
    const child = new Child(['start', '--only', 'web', '--no-migrate'], { ...NO_MODELS, DESKHAND_SCRIPTED_MODELS: '1', PORT: '0' });
    children.push(child);
    await waitFor(() => /Deskhand listening on/.test(child.stdout), 30_000);
    expect(child.stdout).not.to.include('no model can run');
  });
});
