import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { startTestService, type TestService } from '../support/service';
import { connectDesktop } from '../support/tasks';

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..');
const npm = (args: string[], cwd: string) => run('npm', [...args, '--offline', '--no-audit', '--no-fund'], { cwd, env: { ...process.env, npm_config_update_notifier: 'false' } });

describe('the SDK as an integrator gets it (npm pack, installed in a scratch project)', function () {
  this.timeout(180_000);
  let scratch: string;
  let service: TestService;
  let desktop: DesktopClient | undefined;

  before(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'deskhand-sdk-'));
    // Built as `npm test` and `npm start` build it (scripts/setup.sh), afresh so the pack is of these sources.
    await run('npm', ['run', 'sdk:build'], { cwd: root });
    const packed = await npm(['pack', '--json', '--pack-destination', scratch], path.join(root, 'sdk'));
    const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
    await writeFile(path.join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    await npm(['install', path.join(scratch, filename)], scratch);
    for (const file of ['drive.mjs', 'consumer.ts']) await copyFile(path.join(__dirname, 'sdk-scratch', file), path.join(scratch, file));
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_ALLOW_PRIVATE_URLS: '1' });
  });
  after(async () => {
    await desktop?.close();
    await service?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  it('installs with no dependencies, only dist and the README', async () => {
    const installed = path.join(scratch, 'node_modules', '@deskhand', 'sdk');
    const manifest = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8'));
    expect(manifest.dependencies ?? {}).to.deep.equal({});
    expect(manifest.exports['.'].types).to.equal('./dist/index.d.ts');
    const { stdout } = await run('find', ['.', '-type', 'f', '-not', '-name', '*.map'], { cwd: installed });
    const files = stdout.trim().split('\n').sort();
    expect(files).to.include.members(['./README.md', './package.json', './dist/index.js', './dist/index.d.ts', './dist/webhooks.js', './dist/generated/openapi.d.ts']);
    expect(files.filter((file) => !file.startsWith('./dist/') && !['./README.md', './package.json'].includes(file))).to.deep.equal([]);
  });

  it('type-checks an integrator\'s TypeScript against the installed declarations (and refuses wrong calls)', async () => {
    const tsconfig = {
      compilerOptions: {
        target: 'ES2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        noEmit: true,
        // The package's own declarations are checked too; only Node's are taken as given.
        skipLibCheck: false,
        types: ['node'],
        typeRoots: [path.join(root, 'node_modules', '@types')],
      },
      files: ['consumer.ts'],
    };
    await writeFile(path.join(scratch, 'tsconfig.json'), JSON.stringify(tsconfig));
    const checked = await run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: scratch }).catch((error: { stdout: string }) => error);
    expect(checked.stdout).to.equal('');
  });

  it("runs the README's snippet as written (type-checked, then with tsx) under the scripted model, printing the task's events to its end", async () => {
    const readme = await readFile(path.join(root, 'README.md'), 'utf8');
    const snippet = /^## The TypeScript SDK\n[\s\S]*?^```ts\n([\s\S]*?)^```$/m.exec(readme)?.[1];
    expect(snippet, "the README's SDK snippet").to.be.a('string');
    await writeFile(path.join(scratch, 'hello.ts'), snippet!);
    const tsconfig = {
      compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, types: ['node'], typeRoots: [path.join(root, 'node_modules', '@types')] },
      files: ['hello.ts'],
    };
    await writeFile(path.join(scratch, 'tsconfig.hello.json'), JSON.stringify(tsconfig));
    const checked = await run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.hello.json'], { cwd: scratch }).catch((error: { stdout: string }) => error);
    expect(checked.stdout).to.equal('');

    const { key } = await service.newOrg();
    const connected = await connectDesktop(service, key);
    try {
      const tsx = path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');
      const { stdout } = await run(process.execPath, [tsx, 'hello.ts'], {
        cwd: scratch,
        env: { ...process.env, DESKHAND_BASE_URL: service.baseUrl, DESKHAND_API_KEY: key, SESSION_CODE: connected.code },
        timeout: 60_000,
      });
      const lines = stdout.trim().split('\n');
      expect(lines[0]).to.match(/^started /);
      expect(lines.at(-1)).to.equal('completed Said hello');
      expect(lines.some((line) => line.startsWith('action ')), stdout).to.equal(true);
    } finally {
      await connected.client.close();
    }
  });

  it('drives a task on the reference desktop client: follows it, answers its question, sees it complete, verifies its webhooks', async () => {
    const { key } = await service.newOrg();
    const connected = await connectDesktop(service, key);
    desktop = connected.client;
    const { stdout } = await run(process.execPath, ['drive.mjs'], {
      cwd: scratch,
      env: { ...process.env, DESKHAND_BASE_URL: service.baseUrl, DESKHAND_API_KEY: key, SESSION_CODE: connected.code },
      timeout: 60_000,
    });
    const seen = JSON.parse(stdout.trim().split('\n').at(-1)!);
    // Each event once, in order, from started to the final completed.
    expect(seen.events.map((e: { cursor: number }) => e.cursor)).to.deep.equal(seen.events.map((_: unknown, i: number) => i + 1));
    expect(seen.events[0].type).to.equal('started');
    expect(seen.events.at(-1).type).to.equal('completed');
    expect(seen.events.map((e: { type: string }) => e.type)).to.include.members(['question', 'answer']);
    expect(seen.followedTask).to.deep.equal({ status: 'completed', done: true, result: 'Noted size M' });
    expect(seen.fetchedResult).to.equal('Noted size M');
    expect(seen.frameIsPng).to.equal(true);
    expect(seen.lateAnswer).to.deep.equal({ code: 'already_answered', answered_by: 'operator', status: 409 });
    expect(seen.missing).to.deep.equal({ name: 'NotFoundError', type: 'not_found', status: 404 });
    // The service's own signatures verify; a tampered body or another secret does not.
    const types = seen.deliveries.map((d: { type: string }) => d.type);
    expect(types).to.include.members(['task.started', 'task.waiting_for_user', 'task.question_answered', 'task.completed']);
    expect(seen.deliveries.every((d: { verified: boolean }) => d.verified)).to.equal(true);
    expect(seen.tampered).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
    expect(seen.wrongSecret).to.equal(false);
    // What the script saw is what the service holds.
    const stored = await service.api(key, 'GET', `/v1/tasks/${seen.taskId}`);
    expect(stored.body).to.include({ status: 'completed', cursor: seen.events.length });
    expect(stored.body.metadata).to.deep.equal({ from: 'sdk' });
  });
});
