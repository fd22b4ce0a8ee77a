import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, copyFile, cp, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from './host-commands';

/**
 * The app disk: the checkout's Linux desktop app (`desktop/`, `@deskhand/desktop`) as a small
 * read-only ext4 disk that a machine mounts at /opt/deskhand (the image's fstab), so that a new
 * build of the app is a new snapshot (one cold boot), never a new image. It holds:
 *
 * - `dist/` (desktop/dist: `tsc -p desktop/tsconfig.json`, run here when a source is newer than
 *   what it built) and the package's `package.json`;
 * - `node_modules/`: the package's dependencies and theirs (`@jellybrick/dbus-next`,
 *   `@napi-rs/canvas` with the platform binary installed beside it, `socket.io-client`, `x11`),
 *   copied from the checkout's own node_modules at the same relative places, so Node resolves
 *   them as it does in the checkout; nothing is downloaded or compiled;
 * - `session.sh` (runner/qemu/app-disk/session.sh): the image's session runs it; it starts the
 *   launcher and the app waiting for its pairing code (desktop/src/guest-main.ts).
 *
 * The disk is named by a hash of its files (paths, modes, contents), kept in the image folder
 * and reused: the same checkout gives the same disk, so snapshots and saved machine states
 * made with it stay valid across runs of the runner.
 */

export interface AppDisk {
  /** The raw ext4 file. */
  file: string;
  key: string;
  bytes: number;
  /** Built now rather than found. */
  built: boolean;
}

export interface AppDiskOptions {
  /** Where app disks are kept (`IMAGE_DIR/apps`). */
  dir: string;
  /** The checkout; found from this file by default. */
  checkout?: string;
  out?: (line: object) => void;
}

/** Files of the desktop package that are not the app (type declarations, source maps). */
const LEFT_OUT = /\.(d\.ts|map|md)$/;

/** The app disk of this checkout, from `dir` or built now (a few seconds; the first `tsc` of the package takes longer). */
export async function ensureAppDisk(options: AppDiskOptions): Promise<AppDisk> {
  const out = options.out ?? (() => undefined);
  const checkout = options.checkout ?? checkoutDir();
  const desktop = path.join(checkout, 'desktop');
  const started = Date.now();
  if (distIsStale(checkout)) {
    out({ event: 'app_disk', step: 'compile', package: desktop });
    await runCommand(process.execPath, [path.join(checkout, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(desktop, 'tsconfig.json')], { cwd: checkout });
  }
  await mkdir(options.dir, { recursive: true });
  const stage = path.join(options.dir, `.stage-${process.pid}-${Date.now()}`);
  try {
    await stageApp(checkout, stage);
    const key = treeHash(stage);
    const file = path.join(options.dir, `deskhand-app-${key}.img`);
    if (existsSync(file)) {
      out({ event: 'app_disk', step: 'cached', key, file });
      return { file, key, bytes: (await stat(file)).size, built: false };
    }
    const used = treeBytes(stage);
    const sizeMb = Math.ceil((used * 1.3) / 1024 ** 2) + 16;
    const temporary = `${file}.${process.pid}.tmp`;
    // No journal: the disk is only ever mounted read-only.
    await runCommand('mkfs.ext4', ['-q', '-F', '-L', 'deskhand-app', '-m', '0', '-O', '^has_journal', '-d', stage, temporary, `${sizeMb}M`]);
    await chmod(temporary, 0o444);
    await rename(temporary, file);
    const bytes = (await stat(file)).size;
    out({ event: 'app_disk', step: 'built', key, file, bytes, files_bytes: used, ms: Date.now() - started });
    return { file, key, bytes, built: true };
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

/** The checkout this file is in (run from the sources or from a compiled `dist/`). */
export function checkoutDir(): string {
  const candidates = [path.resolve(__dirname, '..', '..'), path.resolve(__dirname, '..', '..', '..')];
  const found = candidates.find((dir) => existsSync(path.join(dir, 'desktop', 'package.json')) && existsSync(path.join(dir, 'runner', 'qemu', 'app-disk', 'session.sh')));
  if (!found) throw new Error(`The Deskhand checkout (with desktop/ and runner/qemu/app-disk/) is not found above ${__dirname}.`);
  return found;
}

/**
 * Whether desktop/dist must be built again: a source of the package has no compiled file, or
 * is newer than it (the package's sources and the shared files it compiles in, dist/shared).
 */
function distIsStale(checkout: string): boolean {
  const dist = path.join(checkout, 'desktop', 'dist');
  const compiled = (source: string): string => path.join(dist, path.relative(checkout, source)).replace(/\.ts$/, '.js');
  const sources = walk(path.join(checkout, 'desktop', 'src')).filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
  for (const file of walk(path.join(dist, 'shared'))) {
    if (file.endsWith('.js')) sources.push(path.join(checkout, path.relative(dist, file)).replace(/\.js$/, '.ts'));
  }
  for (const source of sources) {
    const built = compiled(source);
    if (!existsSync(built) || !existsSync(source)) return true;
    if (statSync(source).mtimeMs > statSync(built).mtimeMs) return true;
  }
  return false;
}

/** Copies what goes on the disk into `stage`. */
async function stageApp(checkout: string, stage: string): Promise<void> {
  const desktop = path.join(checkout, 'desktop');
  await mkdir(stage, { recursive: true });
  await copyFile(path.join(desktop, 'package.json'), path.join(stage, 'package.json'));
  await cp(path.join(desktop, 'dist'), path.join(stage, 'dist'), { recursive: true, filter: (source) => !LEFT_OUT.test(source) });
  const session = path.join(stage, 'session.sh');
  await copyFile(path.join(checkout, 'runner', 'qemu', 'app-disk', 'session.sh'), session);
  await chmod(session, 0o755);
  const manifest = JSON.parse(await readFile(path.join(desktop, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  const root = path.join(checkout, 'node_modules');
  for (const dir of dependencyDirs(Object.keys(manifest.dependencies ?? {}), desktop, checkout)) {
    const target = path.join(stage, 'node_modules', path.relative(root, dir));
    // A package's own node_modules holds packages copied on their own, when they are needed.
    await cp(dir, target, { recursive: true, filter: (source) => source !== path.join(dir, 'node_modules') && !LEFT_OUT.test(source) });
  }
  await writeFile(path.join(stage, 'README'), 'The Deskhand desktop app for a runner\'s test machines (runner/qemu/app-disk.ts); mounted read-only at /opt/deskhand.\n');
}

/**
 * The folders of `names` and of everything they depend on (dependencies, and the optional
 * ones installed, such as a native binary's platform package), resolved as Node would from
 * `from` up to the checkout's node_modules.
 */
export function dependencyDirs(names: readonly string[], from: string, checkout: string): string[] {
  const found = new Set<string>();
  const visit = (name: string, fromDir: string, optional: boolean): void => {
    const dir = resolvePackage(name, fromDir, checkout);
    if (!dir) {
      if (optional) return;
      throw new Error(`The desktop app needs the package ${name}, which is not installed in ${path.join(checkout, 'node_modules')} (npm install in the checkout).`);
    }
    if (found.has(dir)) return;
    found.add(dir);
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
    for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(dependency, dir, false);
    for (const dependency of Object.keys(manifest.optionalDependencies ?? {})) visit(dependency, dir, true);
  };
  for (const name of names) visit(name, from, false);
  return [...found].sort();
}

/** Node's lookup: `node_modules/NAME` in `fromDir` and each folder above it, up to the checkout. */
function resolvePackage(name: string, fromDir: string, checkout: string): string | null {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === checkout || path.dirname(dir) === dir) return null;
  }
}

/** A hash of a tree: each file's path, mode and contents, in order. */
function treeHash(root: string): string {
  const hash = createHash('sha256');
  for (const file of walk(root)) {
    const info = statSync(file);
    hash.update(`${path.relative(root, file)}\0${(info.mode & 0o777).toString(8)}\0`);
    hash.update(readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

function treeBytes(root: string): number {
  return walk(root).reduce((sum, file) => sum + statSync(file).size, 0);
}

/** Every file under `root` (not folders), sorted; nothing when it does not exist. */
function walk(root: string): string[] {
  if (!existsSync(root)) return [];
  const files: string[] = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    const full = path.join(root, entry.name);
    if (entry.isDirectory()) files.push(...walk(full));
    else if (entry.isFile() || entry.isSymbolicLink()) files.push(full);
  }
  return files.sort();
}
