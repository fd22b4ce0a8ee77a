import { execFile } from 'node:child_process';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { connectDesktop, follow, script } from '../support/tasks';

/**
 * The CLI as an operator installs it on a machine of their own (README.md, "Installing the CLI on
 * another machine"): `npm pack` in the checkout, then `npm install -g` of the tarball, then
 * `deskhand` from anywhere. The registry npm installs the dependencies from is one this test
 * serves on 127.0.0.1: the versions of package-lock.json, their tarballs from the npm cache that
 * `scripts/setup.sh` filled, so that the test needs no network and installs what the checkout runs.
 */

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..');

interface LockEntry {
  version?: string;
  integrity?: string;
  link?: boolean;
  [field: string]: unknown;
}

/** A registry of the lock's packages: packuments by name, tarballs from the npm cache by integrity. */
async function startLockRegistry(cacheDir: string): Promise<{ url: string; server: Server }> {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const packuments = new Map<string, Record<string, Record<string, unknown>>>();
  const tarballs = new Map<string, string>();
  for (const [where, entry] of Object.entries(lock.packages)) {
    if (!where.includes('node_modules/') || entry.link || !entry.version || !entry.integrity) continue;
    const name = where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const { version, integrity, dev: _dev, optional: _optional, peer: _peer, devOptional: _devOptional, license: _license, funding: _funding, ...manifest } = entry;
    // Optional peers are never installed; left out, npm does not look for versions this registry lacks.
    const meta = (manifest.peerDependenciesMeta ?? {}) as Record<string, { optional?: boolean }>;
    const peers = Object.entries((manifest.peerDependencies ?? {}) as Record<string, string>).filter(([peer]) => !meta[peer]?.optional);
    const versions = packuments.get(name) ?? {};
    versions[version] = { ...manifest, peerDependencies: Object.fromEntries(peers), peerDependenciesMeta: {}, name, version, dist: { integrity, tarball: `TARBALLS/${name}/-/${version}.tgz` } };
    packuments.set(name, versions);
    const [algorithm, digest] = integrity.split(' ')[0]!.split('-', 2) as [string, string];
    const hex = Buffer.from(digest, 'base64').toString('hex');
    tarballs.set(`/${name}/-/${version}.tgz`, path.join(cacheDir, '_cacache', 'content-v2', algorithm, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4)));
  }
  const server = createServer((request, response) => {
    const pathname = decodeURIComponent(new URL(request.url!, 'http://registry').pathname);
    const file = tarballs.get(pathname);
    if (file) {
      if (!existsSync(file)) return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      return void createReadStream(file).pipe(response);
    }
    const versions = packuments.get(pathname.slice(1));
    if (!versions) return void response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not found"}');
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const latest = Object.keys(versions).at(-1)!;
    const body = JSON.stringify({ name: pathname.slice(1), 'dist-tags': { latest }, versions }).replaceAll('TARBALLS/', `${base}/`);
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/`, server };
}

describe('the CLI as an operator installs it (npm pack, npm install -g, deskhand from anywhere)', function () {
  this.timeout(300_000);
  let scratch: string;
  let registry: { url: string; server: Server } | undefined;
  let service: TestService | undefined;
  /** Runs the installed `deskhand` from a folder outside the checkout. */
  let deskhand: (args: string[], env?: Record<string, string>) => Promise<{ stdout: string; stderr: string; code: number }>;

  before(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'deskhand-cli-'));
    const userCache = (await run('npm', ['config', 'get', 'cache'], { cwd: root })).stdout.trim() || path.join(homedir(), '.npm');
    registry = await startLockRegistry(userCache);
    const npmEnv = { ...process.env, npm_config_update_notifier: 'false', npm_config_registry: registry.url, npm_config_cache: path.join(scratch, 'npm-cache') };
    const packed = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: root, env: npmEnv });
    const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
    await run('npm', ['install', '--global', '--prefix', path.join(scratch, 'prefix'), '--no-audit', '--no-fund', path.join(scratch, filename)], { cwd: scratch, env: npmEnv, maxBuffer: 16 * 1024 * 1024 });
    const away = path.join(scratch, 'elsewhere');
    // A folder of someone else's, with a TypeScript configuration of its own that must not apply to the CLI.
    await run('mkdir', ['-p', away]);
    await writeFile(path.join(away, 'tsconfig.json'), JSON.stringify({ compilerOptions: { verbatimModuleSyntax: true, module: 'preserve' } }));
    deskhand = async (args, env = {}) => {
      try {
        const { stdout, stderr } = await run(path.join(scratch, 'prefix', 'bin', 'deskhand'), args, { cwd: away, env: { ...process.env, PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, ...env } });
        return { stdout, stderr, code: 0 };
      } catch (error) {
        const failed = error as { stdout: string; stderr: string; code: number };
        return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
      }
    };
  });
  after(async () => {
    await service?.stop();
    registry?.server.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('packs only what the CLI runs: no tests, benchmarks or SDK', async () => {
    const installed = path.join(scratch, 'prefix', 'lib', 'node_modules', 'deskhand');
    const { stdout } = await run('find', ['.', '-maxdepth', '1', '-not', '-name', '.'], { cwd: installed });
    const top = stdout.trim().split('\n').map((entry) => entry.slice(2)).sort();
    expect(top).to.deep.equal(['Procfile', 'README.md', 'api', 'bin', 'docs', 'migrations', 'node_modules', 'package.json', 'runner', 'shared', 'tsconfig.json', 'workers']);
  });

  it('runs deskhand --version and --help from a folder outside the checkout', async () => {
    const version = await deskhand(['--version']);
    expect(version.code, version.stderr).to.equal(0);
    expect(version.stdout.trim()).to.equal((JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version);
    const help = await deskhand(['--help']);
    expect(help.code, help.stderr).to.equal(0);
    expect(help.stdout).to.include('tasks').and.to.include('desktop').and.to.include('runner').and.to.include('evals');
  });

  it("follows a task of a running service with the installed deskhand tasks follow", async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' }, ['web', 'worker-agent']);
    const { key } = await service.newOrg('Installed CLI');
    const desktop = await connectDesktop(service, key);
    try {
      const started = await service.api(key, 'POST', `/v1/sessions/${desktop.code}/tasks`, { prompt: script('open Notes', 'done "Opened Notes"') });
      const taskId = started.body.task_id as string;
      await follow(service, key, taskId);
      const followed = await deskhand(['tasks', 'follow', taskId], { DESKHAND_API_KEY: key, DESKHAND_BASE_URL: service.baseUrl });
      expect(followed.code, followed.stderr).to.equal(0);
      expect(followed.stdout.trim().split('\n').at(-1)).to.equal(`Task ${taskId} completed: Opened Notes`);
    } finally {
      await desktop.client.close();
    }
  });
});
