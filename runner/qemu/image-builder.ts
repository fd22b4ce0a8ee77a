import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, copyFile, cp, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { hostDebianMirror } from './host-apt-sources';
import { openLog, runCommand } from './host-commands';

/**
 * The image `debian-12` (os `linux`): a Debian 12 system with a light X session, built by the
 * project's recipe (runner/qemu/image/) from Debian's packages into a qcow2 disk, with the
 * kernel and initrd beside it so that QEMU boots it directly (no boot loader).
 *
 * The build: debootstrap (minbase) into a folder → the recipe's packages with apt in a chroot
 * (no recommends, no documentation) → setup-guest.sh in the chroot → the host's own node binary
 * → `mkfs.ext4 -d FOLDER` (a file system from the folder, nothing mounted) → `qemu-img convert`
 * to qcow2. The image's folder is named by a hash of everything that made it, so a changed
 * recipe is a new image and an unchanged one is taken from the cache.
 */

export const IMAGE_NAME = 'debian-12';
export const IMAGE_OS = 'linux';
const SUITE = 'bookworm';
/** Changes to the build steps in this file that change the image: bump it. */
const BUILDER_VERSION = 1;
/** Room left on the guest's disk beyond what the system uses. */
const FREE_SPACE_BYTES = 3 * 1024 ** 3;

export interface BuiltImage {
  name: string;
  os: string;
  key: string;
  /** The image's folder: disk, kernel, initrd, image.json. */
  dir: string;
  disk: string;
  kernel: string;
  initrd: string;
  /** The disk file's size on the host. */
  bytes: number;
  /** How long its build took, when it was built (not when it came from the cache). */
  built_seconds?: number;
}

export interface ImageOptions {
  /** Where images are kept; `~/.cache/deskhand/images` by default (outside any checkout). */
  imageDir?: string;
  /** Progress lines (`{ event: 'image_build', step, … }`). */
  out?: (line: object) => void;
  /** The node binary put into the image; this process's own by default. */
  nodeBinary?: string;
  /** The Debian mirror; the host's own (its apt sources) by default. */
  mirror?: string;
}

/** The default image folder: a cache folder in the user's home, reused across runs and checkouts. */
export function defaultImageDir(): string {
  const cache = process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache');
  return path.join(cache, 'deskhand', 'images');
}

/** The recipe's folder, beside this file in a checkout (also found from a compiled `dist/`). */
export function recipeDir(): string {
  const candidates = [path.join(__dirname, 'image'), path.resolve(__dirname, '../../../runner/qemu/image')];
  const found = candidates.find((dir) => existsSync(path.join(dir, 'packages.txt')));
  if (!found) throw new Error(`The image recipe (runner/qemu/image) is not found beside ${__dirname}.`);
  return found;
}

/** The recipe's packages: one a line, `#` comments. */
export function recipePackages(dir = recipeDir()): string[] {
  return readFileSync(path.join(dir, 'packages.txt'), 'utf8')
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean);
}

/**
 * The image's key: a hash of the recipe's files (names and contents, the package list among
 * them), the node binary's version, the suite and the builder's version. The mirror is not in
 * it: two hosts with different mirrors build the same image.
 */
export function imageKey(dir = recipeDir(), nodeVersion = process.version): string {
  const hash = createHash('sha256');
  hash.update(`builder ${BUILDER_VERSION}\nsuite ${SUITE}\nnode ${nodeVersion}\n`);
  for (const name of readdirSync(dir).sort()) {
    hash.update(`file ${name}\n`);
    hash.update(readFileSync(path.join(dir, name)));
    hash.update('\n');
  }
  return hash.digest('hex').slice(0, 16);
}

/** The image, from the cache or built now (which takes minutes and needs root). */
export async function ensureImage(options: ImageOptions = {}): Promise<BuiltImage> {
  const imageDir = options.imageDir ?? defaultImageDir();
  const out = options.out ?? (() => undefined);
  const recipe = recipeDir();
  const nodeBinary = options.nodeBinary ?? process.execPath;
  const nodeVersion = nodeBinary === process.execPath ? process.version : (await runCommand(nodeBinary, ['--version'])).trim();
  const key = imageKey(recipe, nodeVersion);
  const dir = path.join(imageDir, `${IMAGE_NAME}-${key}`);
  const cached = await readImage(dir, key);
  if (cached) {
    out({ event: 'image_build', image: IMAGE_NAME, step: 'cached', key, dir, bytes: cached.bytes });
    return cached;
  }
  return buildImage({ imageDir, dir, key, recipe, nodeBinary, nodeVersion, mirror: options.mirror, out });
}

/** The image kept in `dir`, when it is there whole and has `key`. */
async function readImage(dir: string, key: string): Promise<BuiltImage | null> {
  try {
    const manifest = JSON.parse(await readFile(path.join(dir, 'image.json'), 'utf8')) as BuiltImage;
    if (manifest.key !== key) return null;
    const image: BuiltImage = { ...manifest, dir, disk: path.join(dir, 'disk.qcow2'), kernel: path.join(dir, 'vmlinuz'), initrd: path.join(dir, 'initrd.img') };
    await Promise.all([stat(image.disk), stat(image.kernel), stat(image.initrd)]);
    return image;
  } catch {
    return null;
  }
}

interface BuildPlan {
  imageDir: string;
  dir: string;
  key: string;
  recipe: string;
  nodeBinary: string;
  nodeVersion: string;
  mirror?: string;
  out: (line: object) => void;
}

async function buildImage(plan: BuildPlan): Promise<BuiltImage> {
  if (process.getuid?.() !== 0) {
    throw new Error(`The image ${IMAGE_NAME} is not in ${plan.imageDir} and building it needs root (debootstrap, chroot). Run the runner once as root, or copy a built image folder there.`);
  }
  const started = Date.now();
  const { out, key } = plan;
  const step = (name: string, extra: object = {}): void => out({ event: 'image_build', image: IMAGE_NAME, step: name, key, elapsed_s: Math.round((Date.now() - started) / 1000), ...extra });
  const mirror = plan.mirror ?? hostDebianMirror(SUITE);
  const work = path.join(plan.imageDir, `.build-${IMAGE_NAME}-${key}-${process.pid}`);
  const root = path.join(work, 'root');
  const debs = path.join(plan.imageDir, '.debs');
  await rm(work, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  await mkdir(debs, { recursive: true });
  const logFile = path.join(work, 'build.log');
  const log = openLog(logFile);
  step('start', { log: logFile, packages: recipePackages(plan.recipe).length });
  const mounts: string[] = [];
  try {
    step('debootstrap');
    await runCommand('debootstrap', ['--variant=minbase', `--cache-dir=${debs}`, '--components=main', SUITE, root, mirror], { log });

    // Before any package of the recipe: no documentation, no services started inside the chroot.
    await copyFile(path.join(plan.recipe, 'dpkg-excludes.cfg'), path.join(root, 'etc/dpkg/dpkg.cfg.d/deskhand-excludes'));
    await writeFile(path.join(root, 'usr/sbin/policy-rc.d'), '#!/bin/sh\nexit 101\n', { mode: 0o755 });
    for (const [what, where, args] of [
      ['proc', 'proc', ['-t', 'proc']],
      ['sysfs', 'sys', ['-t', 'sysfs']],
      ['/dev', 'dev', ['--bind']],
      ['devpts', 'dev/pts', ['-t', 'devpts']],
      [debs, 'var/cache/apt/archives', ['--bind']],
    ] as const) {
      const target = path.join(root, where);
      await mkdir(target, { recursive: true });
      await runCommand('mount', [...args, what, target], { log });
      mounts.push(target);
    }
    const chrootEnv = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DEBIAN_FRONTEND: 'noninteractive', LANG: 'C.UTF-8', HOME: '/root' };
    step('packages');
    await runCommand('chroot', [root, 'apt-get', 'update', '-qq'], { log, env: chrootEnv });
    await runCommand('chroot', [root, 'apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...recipePackages(plan.recipe)], { log, env: chrootEnv });

    // The package cache is the image folder's, kept for the next build: unbound before the recipe's apt-get clean.
    await runCommand('umount', [mounts.pop()!], { log });

    step('configure');
    await cp(plan.recipe, path.join(root, 'tmp/recipe'), { recursive: true });
    await runCommand('chroot', [root, '/bin/sh', '/tmp/recipe/setup-guest.sh'], { log, env: chrootEnv });
    await copyFile(plan.nodeBinary, path.join(root, 'usr/local/bin/node'));
    await chmod(path.join(root, 'usr/local/bin/node'), 0o755);
    await unmountAll(mounts, log);
    await rm(path.join(root, 'usr/sbin/policy-rc.d'), { force: true });

    step('kernel');
    const boot = readdirSync(path.join(root, 'boot'));
    const kernel = boot.find((name) => name.startsWith('vmlinuz-'));
    const initrd = boot.find((name) => name.startsWith('initrd.img-'));
    if (!kernel || !initrd) throw new Error(`The built tree has no kernel and initrd in /boot (found: ${boot.join(', ')}).`);
    await copyFile(path.join(root, 'boot', kernel), path.join(work, 'vmlinuz'));
    await copyFile(path.join(root, 'boot', initrd), path.join(work, 'initrd.img'));

    step('filesystem');
    const used = Number((await runCommand('du', ['-sxb', root])).split(/\s/)[0]);
    const size = Math.ceil((used * 1.1 + FREE_SPACE_BYTES) / 1024 ** 3);
    const raw = path.join(work, 'disk.raw');
    await runCommand('mkfs.ext4', ['-q', '-F', '-L', 'deskhand-root', '-m', '0', '-d', root, raw, `${size}G`], { log });
    await runCommand('qemu-img', ['convert', '-O', 'qcow2', raw, path.join(work, 'disk.qcow2')], { log });
    await rm(raw);
    await removeTree(root);

    const bytes = (await stat(path.join(work, 'disk.qcow2'))).size;
    const built_seconds = Math.round((Date.now() - started) / 1000);
    const manifest = { name: IMAGE_NAME, os: IMAGE_OS, key, node: plan.nodeVersion, suite: SUITE, packages: recipePackages(plan.recipe), built_at: new Date().toISOString(), built_seconds, bytes, used_bytes: used, virtual_gib: size };
    await writeFile(path.join(work, 'image.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    log.end();
    // Another process may have built the same image meanwhile: then its copy stays and ours goes.
    if (!(await readImage(plan.dir, key))) {
      await rm(plan.dir, { recursive: true, force: true });
      await rename(work, plan.dir);
    } else {
      await rm(work, { recursive: true, force: true });
    }
    step('done', { dir: plan.dir, bytes, built_seconds });
    const image = await readImage(plan.dir, key);
    if (!image) throw new Error(`The image built in ${plan.dir} cannot be read back.`);
    return { ...image, built_seconds };
  } catch (error) {
    await unmountAll(mounts, log).catch(() => undefined);
    log.end();
    step('failed', { message: (error as Error).message.slice(0, 2000), log: logFile });
    throw error;
  }
}

/** Unmounts what the build mounted, innermost first. */
async function unmountAll(mounts: string[], log: ReturnType<typeof openLog>): Promise<void> {
  while (mounts.length) {
    const target = mounts.pop()!;
    await runCommand('umount', ['--lazy', target], { log });
  }
}

/** Removes the built tree, refusing while anything is still mounted inside it (a bound /dev above all). */
async function removeTree(root: string): Promise<void> {
  const mounted = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1])
    .filter((point) => point && (point === root || point.startsWith(`${root}/`)));
  if (mounted.length) throw new Error(`Not removing ${root}: still mounted there: ${mounted.join(', ')}.`);
  await runCommand('rm', ['-rf', '--one-file-system', root]);
}
