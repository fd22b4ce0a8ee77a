import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { startDesktop, until, type RealDesktop } from '../support/linux-desktop';

/**
 * The Linux desktop app as a person installs it (docs/linux-desktop.md, "Install and run"):
 * `cd desktop && npm run build && npm pack`, then `npm install -g` of the tarball on a computer
 * without the checkout, then `deskhand-desktop --code CODE --base-url URL` in their X session.
 * Here the prefix is a temporary folder, npm takes the dependencies from its cache
 * (`--prefer-offline`; scripts/setup.sh filled it), and the X session is a real Xvfb desktop with
 * AT-SPI (test/support/linux-desktop.ts).
 */

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..');
const packageDir = path.join(root, 'desktop');
const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { name: string; version: string; main: string; bin: Record<string, string>; dependencies: Record<string, string> };
const npmEnv = { ...process.env, npm_config_update_notifier: 'false' };
const npm = (args: string[], cwd: string) => run('npm', [...args, '--no-audit', '--no-fund'], { cwd, env: npmEnv, maxBuffer: 16 * 1024 * 1024 });

/**
 * The modules a compiled script imports by relative path, as paths relative to the package
 * (`dist/…/x.js`): its `require`s, and the imports of its declarations (a module imported for its
 * types only is compiled, and packed, though nothing loads it).
 */
function relativeImports(packageRoot: string, file: string): string[] {
  const found: string[] = [];
  for (const [source, pattern] of [
    [file, /require\("(\.[^"]+)"\)/g],
    [file.replace(/\.js$/, '.d.ts'), /(?:from |import\()["'](\.[^"']+)["']/g],
  ] as const) {
    if (!existsSync(path.join(packageRoot, source))) continue;
    const text = readFileSync(path.join(packageRoot, source), 'utf8');
    for (const [, specifier] of text.matchAll(pattern)) found.push(path.posix.join(path.posix.dirname(file), `${specifier}.js`));
  }
  return found;
}

/** The package's scripts reached from `entries` through relative imports. */
function reachable(packageRoot: string, entries: string[]): Set<string> {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file) || !existsSync(path.join(packageRoot, file))) continue;
    seen.add(file);
    queue.push(...relativeImports(packageRoot, file));
  }
  return seen;
}

/** Every file under `dir`, relative to it. */
async function filesUnder(dir: string, prefix = ''): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(path.join(dir, prefix), { withFileTypes: true })) {
    const relative = path.posix.join(prefix, entry.name);
    if (entry.isDirectory()) found.push(...(await filesUnder(dir, relative)));
    else found.push(relative);
  }
  return found;
}

describe('the Linux desktop app as a person installs it (npm pack, npm install -g, deskhand-desktop)', function () {
  this.timeout(90_000);
  let scratch: string;
  let prefix: string;
  let installed: string;
  let packedFiles: string[];
  /** A folder outside the checkout, where the installed programs run. */
  let away: string;
  let desktop: RealDesktop | undefined;
  let service: TestService | undefined;

  before(async function () {
    this.timeout(120_000);
    scratch = await mkdtemp(path.join(tmpdir(), 'deskhand-desktop-package-'));
    prefix = path.join(scratch, 'prefix');
    // Built as the page says, afresh so that the pack holds these sources and nothing left from before.
    await rm(path.join(packageDir, 'dist'), { recursive: true, force: true });
    await npm(['run', 'build'], packageDir);
    const dry = await npm(['pack', '--dry-run', '--json', '--offline'], packageDir);
    packedFiles = (JSON.parse(dry.stdout) as [{ files: Array<{ path: string }> }])[0].files.map((file) => file.path).sort();
    const packed = await npm(['pack', '--json', '--offline', '--pack-destination', scratch], packageDir);
    const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
    await npm(['install', '--global', '--prefix', prefix, '--prefer-offline', path.join(scratch, filename)], scratch);
    installed = path.join(prefix, 'lib', 'node_modules', ...manifest.name.split('/'));
    away = path.join(scratch, 'elsewhere');
    await mkdir(away);
    [desktop, service] = await Promise.all([startDesktop(), startTestService({}, ['web'])]);
  });

  after(async () => {
    await Promise.all([service?.stop(), desktop?.stop()]);
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  const installedBin = (name: string) => path.join(prefix, 'bin', name);

  it('packs the app and the shared modules it imports, none of the service, its tests or benchmarks', async () => {
    const outside = packedFiles.filter((file) => !file.startsWith('dist/') && file !== 'package.json' && file !== 'README.md');
    expect(outside, 'files outside dist/').to.deep.equal([]);
    expect(packedFiles).to.include.members(['package.json', 'dist/desktop/src/main.js', 'dist/desktop/src/index.js', 'dist/desktop/src/index.d.ts', 'dist/shared/desktop/protocol.js']);
    for (const folder of ['api', 'workers', 'test', 'bench', 'bin', 'migrations', 'sdk', 'scripts']) {
      expect(packedFiles.filter((file) => file.startsWith(`dist/${folder}/`)), `dist/${folder}/`).to.deep.equal([]);
    }
    // dist/shared/ holds only modules the app's code imports: every packed script is one of
    // desktop/src's (all compiled) or reached from them through relative imports.
    const scripts = packedFiles.filter((file) => file.endsWith('.js'));
    const reached = reachable(installed, scripts.filter((file) => file.startsWith('dist/desktop/src/')));
    expect(scripts.filter((file) => !reached.has(file)), 'packed scripts the app does not import').to.deep.equal([]);
    for (const entry of [manifest.main, ...Object.values(manifest.bin)]) expect(packedFiles, entry).to.include(path.posix.normalize(entry));
    expect(packedFiles.filter((file) => !file.startsWith('dist/desktop/src/') && !file.startsWith('dist/shared/') && !['package.json', 'README.md'].includes(file))).to.deep.equal([]);
  });

  it('installs with everything its code loads: each relative import is in the package, each other one a dependency or part of Node', async () => {
    const files = (await filesUnder(installed)).filter((file) => !file.startsWith('node_modules/'));
    expect(files.sort()).to.deep.equal(packedFiles);
    const dependencies = new Set(Object.keys(manifest.dependencies));
    const missing: string[] = [];
    for (const file of files.filter((name) => name.endsWith('.js'))) {
      const source = readFileSync(path.join(installed, file), 'utf8');
      for (const [, specifier] of source.matchAll(/require\("([^"]+)"\)/g)) {
        if (specifier.startsWith('.')) {
          const target = path.join(path.dirname(path.join(installed, file)), specifier);
          if (!existsSync(`${target}.js`) && !existsSync(path.join(target, 'index.js')) && !existsSync(target)) missing.push(`${file} → ${specifier}`);
          continue;
        }
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
        if (!dependencies.has(name) && !builtinModules.includes(specifier.replace(/^node:/, ''))) missing.push(`${file} → ${specifier} (not a dependency)`);
        else if (dependencies.has(name) && !existsSync(path.join(installed, 'node_modules', name))) missing.push(`${file} → ${specifier} (not installed)`);
      }
    }
    expect(missing).to.deep.equal([]);
    for (const bin of Object.keys(manifest.bin)) expect(existsSync(installedBin(bin)), `${bin} in the prefix's bin/`).to.equal(true);
  });

  it('answers --help with its usage, and without a code says what to give it (exit 2)', async () => {
    const help = await run(installedBin('deskhand-desktop'), ['--help'], { cwd: away, env: desktop!.env });
    expect(help.stdout).to.match(/^usage: deskhand-desktop --code CODE/);
    const bare = await run(installedBin('deskhand-desktop'), [], { cwd: away, env: desktop!.env }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(bare.code).to.equal(2);
    expect(bare.stderr).to.include('--code');
  });

  it('pairs with the code on a real X desktop: says it is linux at the display\'s size, the session shows it, and SIGTERM ends it with 0', async () => {
    const { key } = await service!.newOrg('Installed desktop app');
    const created = await service!.api(key, 'POST', '/v1/sessions', {});
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const code = created.body.code as string;
    const child = spawn(installedBin('deskhand-desktop'), ['--code', code, '--base-url', service!.baseUrl], { cwd: away, env: desktop!.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (exitCode, signal) => resolve({ code: exitCode, signal })));
    const lines = () => stdout.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as { event: string; [field: string]: unknown });
    try {
      const hello = await until(() => lines().find((line) => line.event === 'hello'), `the installed app's hello (stderr: ${stderr})`, 30_000);
      expect(hello).to.include({ ok: true });
      expect(lines().find((line) => line.event === 'computer')).to.deep.include({
        os: 'linux',
        width: desktop!.width,
        height: desktop!.height,
        capabilities: { accessibility: true, element_info: true, page_addresses: true },
      });
      const session = (await service!.api(key, 'GET', `/v1/sessions/${code}`)).body;
      expect(session.status).to.equal('connected');
      expect(session.device).to.deep.include({ os: 'linux', width: desktop!.width, height: desktop!.height, app_version: manifest.version });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).to.deep.equal({ code: 0, signal: null });
    expect(lines().map((line) => line.event)).to.include.members(['computer', 'connecting', 'hello', 'closed']);
  });
});
