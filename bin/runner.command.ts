import { existsSync, readFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { projectVersion } from './project-version';
import { BASE_URL_HELP, defaultBaseUrl, jsonLinesIo, parseBaseUrl, type JsonLinesIo } from './cli-options';
import type { ReferenceRunnerOptions, RunnerEnd } from '../shared/simulator/runner/reference-runner';

/**
 * `deskhand runner --token TOKEN [options]`: a runner (docs/runners.md) with one of two
 * providers behind the same protocol client: `--provider simulated` (the default, the reference
 * runner of docs/reference-runner.md, simulated computers with a disk) or `--provider qemu` (real
 * virtual machines of the image debian-12, runner/qemu/). It serves the service until it is
 * stopped (SIGINT/SIGTERM: it destroys its machines and disconnects, exit 0) or its token is
 * refused (stderr, exit 1), printing one JSON line per event.
 */

/** Where the command writes and which signals stop it; the process's own by default. */
export type RunnerCommandIo = JsonLinesIo;

type RunnerCommandOptions = Omit<ReferenceRunnerOptions, 'out' | 'path' | 'reconnectDelayMs' | 'version' | 'desktopBaseUrl'> & {
  provider: 'simulated' | 'qemu';
  imageDir?: string;
  accel: 'auto' | 'kvm' | 'tcg';
  memory: number;
};

/** Options that only one provider reads: given with the other, they are refused rather than ignored. */
const PROVIDER_OPTIONS = { simulated: ['images', 'bootMs', 'destroyMs'], qemu: ['imageDir', 'accel', 'memory'] } as const;
const FLAG: Record<string, string> = { images: '--images', bootMs: '--boot-ms', destroyMs: '--destroy-ms', imageDir: '--image-dir', accel: '--accel', memory: '--memory' };

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** The data folder when none is given: one per user under the OS temp folder, so saved disks outlive a restart. */
export function defaultDataDir(): string {
  return path.join(tmpdir(), 'deskhand-runner');
}

export function registerRunnerCommand(program: Command, io: RunnerCommandIo = jsonLinesIo()): Command {
  return program
    .command('runner')
    .description('Serve machines to the service with a runner token: simulated computers (the reference runner) or, with --provider qemu, real virtual machines.')
    .requiredOption('--token <token>', 'the runner token (dhr_…)', parseToken)
    .addOption(new Option('--provider <provider>', 'what makes the machines: simulated computers, or QEMU virtual machines (image debian-12, os linux)').choices(['simulated', 'qemu']).default('simulated'))
    .option('--base-url <url>', BASE_URL_HELP, parseBaseUrl, defaultBaseUrl())
    .option('--name <name>', 'reported name', parseName, hostname())
    .option('--slots <n>', 'machines at once', parseCount('--slots', 0, 10_000), 2)
    .option('--labels <a,b>', 'reported labels', parseList('--labels', 50, 100), [])
    .option('--images <a,b>', 'images it has; macos… is a Mac, windows… a Windows PC', parseList('--images', 200, 200), ['macos-15', 'windows-11'])
    .option('--data-dir <dir>', 'where saved disks are kept (they survive a restart)', parseDataDir, defaultDataDir())
    .option('--boot-ms <n>', 'how long a machine takes to start', parseCount('--boot-ms', 0, 600_000), 0)
    .option('--destroy-ms <n>', 'how long destroying a machine takes', parseCount('--destroy-ms', 0, 600_000), 0)
    .option('--image-dir <dir>', 'qemu: where images, app disks and snapshots are kept (default ~/.cache/deskhand/images)', parseFolder('--image-dir'))
    .addOption(new Option('--accel <accel>', 'qemu: the accelerator; auto takes KVM only where a guest really boots under it').choices(['auto', 'kvm', 'tcg']).default('auto'))
    .option('--memory <mb>', 'qemu: memory of each machine in MiB', parseCount('--memory', 256, 65_536), 1024)
    .action(async (options: RunnerCommandOptions, command: Command) => {
      try {
        parseBaseUrl(options.baseUrl);
      } catch (error) {
        command.error(`error: ${(error as Error).message}`, { exitCode: 2, code: 'deskhand.invalidBaseUrl' });
      }
      const other = options.provider === 'qemu' ? 'simulated' : 'qemu';
      const misplaced = PROVIDER_OPTIONS[other].find((name) => command.getOptionValueSource(name) === 'cli');
      if (misplaced) command.error(`error: ${FLAG[misplaced]} is an option of --provider ${other}, not ${options.provider}.`, { exitCode: 2, code: 'deskhand.providerOption' });
      if (options.images.length === 0) command.error('error: --images needs at least one image.', { exitCode: 2, code: 'deskhand.invalidImages' });
      const end = options.provider === 'qemu' ? await runQemuRunner(options, io, command) : await runRunner(options, io);
      if (end.reason === 'refused') {
        command.error(`error: the service refused the runner token (${end.code}): ${end.message}`, { exitCode: 1, code: 'deskhand.refused' });
      }
    });
}

async function runRunner(options: RunnerCommandOptions, io: RunnerCommandIo): Promise<RunnerEnd> {
  // Loaded when the command runs, not for every `npx deskhand` (the simulator is most of the CLI's load time).
  const { ReferenceRunner } = require('../shared/simulator/runner/reference-runner') as typeof import('../shared/simulator/runner/reference-runner');
  const runner = new ReferenceRunner({ ...options, version: projectVersion(), out: (line) => io.out(line), onUnreachable: (message) => io.warn?.(message) });
  const stop = (): void => void runner.stop();
  for (const signal of STOP_SIGNALS) io.signals.once(signal, stop);
  try {
    runner.start();
    return await runner.finished;
  } finally {
    for (const signal of STOP_SIGNALS) io.signals.off(signal, stop);
  }
}

/**
 * The runner with the QEMU provider: the image, the accelerator, the app disk and the snapshot
 * are made ready first (JSON progress lines; minutes the first time), then it connects.
 */
async function runQemuRunner(options: RunnerCommandOptions, io: RunnerCommandIo, command: Command): Promise<RunnerEnd> {
  const { ReferenceRunner } = require('../shared/simulator/runner/reference-runner') as typeof import('../shared/simulator/runner/reference-runner');
  const { prepareQemuProvider } = require('../runner/qemu/qemu-provider') as typeof import('../runner/qemu/qemu-provider');
  // A signal while it prepares ends the process as usual: its QEMUs die with it (their
  // parent-death signal), and the next start sweeps what it left in its machine folder.
  let provide;
  try {
    provide = await prepareQemuProvider({ baseUrl: options.baseUrl, slots: options.slots, dataDir: options.dataDir, imageDir: options.imageDir, accel: options.accel, memoryMb: options.memory, out: (line) => io.out(line) });
  } catch (error) {
    command.showHelpAfterError(false);
    return command.error(`error: the QEMU provider cannot start: ${(error as Error).message}`, { exitCode: 1, code: 'deskhand.qemuUnavailable' });
  }
  const runner = new ReferenceRunner(
    { token: options.token, baseUrl: options.baseUrl, name: options.name, slots: options.slots, labels: options.labels, version: projectVersion(), out: (line) => io.out(line), onUnreachable: (message) => io.warn?.(message) },
    provide,
  );
  const stop = (): void => void runner.stop();
  for (const signal of STOP_SIGNALS) io.signals.once(signal, stop);
  try {
    runner.start();
    return await runner.finished;
  } finally {
    for (const signal of STOP_SIGNALS) io.signals.off(signal, stop);
  }
}

function parseToken(value: string): string {
  const token = value.trim();
  if (!token || token.length > 200 || /\s/.test(token)) throw new InvalidArgumentError('A runner token is one word, such as dhr_….');
  return token;
}

function parseName(value: string): string {
  const name = value.trim();
  if (!name || name.length > 100) throw new InvalidArgumentError('A runner name has 1 to 100 characters.');
  return name;
}

function parseCount(option: string, min: number, max: number): (value: string) => number {
  return (value) => {
    const number = Number(value);
    if (!/^\d+$/.test(value) || number < min || number > max) throw new InvalidArgumentError(`${option} takes a whole number from ${min} to ${max}.`);
    return number;
  };
}

function parseList(option: string, maxItems: number, maxLength: number): (value: string) => string[] {
  return (value) => {
    const items = value.split(',').map((item) => item.trim()).filter(Boolean);
    if (items.length > maxItems) throw new InvalidArgumentError(`${option} takes at most ${maxItems} names.`);
    const long = items.find((item) => item.length > maxLength);
    if (long) throw new InvalidArgumentError(`${option}: "${long.slice(0, 40)}…" is longer than ${maxLength} characters.`);
    return [...new Set(items)];
  };
}

function parseDataDir(value: string): string {
  return parseFolder('--data-dir')(value);
}

function parseFolder(option: string): (value: string) => string {
  return (value) => {
    if (!value.trim()) throw new InvalidArgumentError(`${option} needs a folder.`);
    return path.resolve(value);
  };
}
