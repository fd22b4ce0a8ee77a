import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Command } from 'commander';
import { startDeskhand, type RunningDeskhand } from '../../bin/start';
import { registerDesktopCommand } from '../../bin/desktop.command';
import { registerEvalsCommand } from '../../bin/evals.command';
import { UnreachableError } from '../../bin/evals-api';
import { followRun } from '../../bin/evals-run-follow';
import { registerRunnerCommand } from '../../bin/runner.command';
import { registerTasksCommand } from '../../bin/tasks.command';
import { testConfig } from '../support/environment';
import { startTestService, waitFor } from '../support/service';
import { connectDesktop, follow, script } from '../support/tasks';
import { freePort } from '../support/ports';

/**
 * Every command that talks to the service says within 2 s when nobody answers at its base URL
 * (issue 37): the long-running ones (`tasks follow`, `evals run --wait`'s waiting, `desktop`,
 * `runner`) say so on stderr and keep trying, the one-shot ones (`evals import`, `evals run`)
 * fail with that message. The commands run in this process, so the 2 s are the command's own,
 * not Node's start-up (test/integration/friction-cli.test.ts runs them as processes).
 */

/** The bound the issue sets: a person is told within this long. */
const TOLD_WITHIN_MS = 2_000;

/** A program with the commands registered as `main.ts` does, whose usage errors throw instead of exiting. */
function program(): Command {
  return new Command('deskhand').exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
}

/** What a command told the person, and when (ms after the command started). */
class Told {
  readonly started = Date.now();
  readonly lines: Array<{ at: number; message: string }> = [];
  readonly out: string[] = [];
  warn = (message: string): void => void this.lines.push({ at: Date.now() - this.started, message });
}

describe('the CLI against a base URL nobody listens on', function () {
  this.timeout(60_000);
  const saved = { key: process.env.DESKHAND_API_KEY, base: process.env.DESKHAND_BASE_URL };
  let nowhere: string;
  let work: string;

  before(async () => {
    nowhere = `http://127.0.0.1:${await freePort()}`;
    work = mkdtempSync(path.join(tmpdir(), 'cli-unreachable-'));
  });
  beforeEach(() => {
    process.env.DESKHAND_API_KEY = 'dh_test_nobody';
    process.env.DESKHAND_BASE_URL = nowhere;
  });
  afterEach(() => {
    for (const [name, value] of [['DESKHAND_API_KEY', saved.key], ['DESKHAND_BASE_URL', saved.base]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  /** Runs a one-shot command; answers its failure and how long it took. */
  async function fails(args: string[]): Promise<{ error: unknown; ms: number }> {
    const cli = program();
    registerEvalsCommand(cli);
    const started = Date.now();
    const error = await cli.parseAsync(args, { from: 'user' }).then(() => null, (failure: unknown) => failure);
    return { error, ms: Date.now() - started };
  }

  it('evals import fails within 2 s, naming the URL, DESKHAND_BASE_URL and "connection refused"', async () => {
    const file = path.join(work, 'cases.json');
    writeFileSync(file, JSON.stringify({ cases: [{ key: 'one', start_state: 'macos-15', prompt: 'done "ok"' }] }));
    const { error, ms } = await fails(['evals', 'import', file]);
    expect(error).to.be.instanceOf(UnreachableError);
    expect((error as Error).message).to.equal(`cannot reach ${nowhere} (DESKHAND_BASE_URL): connection refused`);
    expect(ms).to.be.below(TOLD_WITHIN_MS);
  });

  it('evals run fails within 2 s with the same message', async () => {
    const { error, ms } = await fails(['evals', 'run', '--set', 'ts_anything', '--wait']);
    expect(error).to.be.instanceOf(UnreachableError);
    expect((error as Error).message).to.equal(`cannot reach ${nowhere} (DESKHAND_BASE_URL): connection refused`);
    expect(ms).to.be.below(TOLD_WITHIN_MS);
  });

  it("evals run --wait's waiting says within 2 s that the service went away, and keeps reading", async () => {
    const told = new Told();
    const stop = new AbortController();
    const waiting = followRun({ baseUrl: nowhere, apiKey: 'dh_test_nobody' }, 'tr_gone', { intervalMs: 50, signal: stop.signal, onRead: () => undefined, warn: told.warn });
    try {
      await waitFor(() => told.lines.length > 0, TOLD_WITHIN_MS, 'the warning');
      expect(told.lines[0]!.message).to.match(new RegExp(`^cannot reach ${nowhere} \\(DESKHAND_BASE_URL\\): connection refused; retrying for about \\d+(\\.\\d+)? s`));
    } finally {
      stop.abort();
    }
    // Still waiting when stopped: the waiting goes on after the warning, it did not give up.
    expect(await waiting).to.equal(null);
    expect(told.lines).to.have.length(1);
  });

  it('tasks follow says within 2 s that it cannot reach the service, retries, and follows the task once the service is there', async () => {
    // A task that ran to its end while the service was up.
    const first = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' }, ['web', 'worker-agent']);
    let later: RunningDeskhand | undefined;
    try {
      const { key } = await first.newOrg('Unreachable follow');
      const desktop = await connectDesktop(first, key);
      const started = await first.api(key, 'POST', `/v1/sessions/${desktop.code}/tasks`, { prompt: script('open Notes', 'done "Opened Notes"') });
      const taskId = started.body.task_id as string;
      await follow(first, key, taskId);
      await desktop.client.close();
      process.env.DESKHAND_API_KEY = key;

      const told = new Told();
      const cli = program();
      registerTasksCommand(cli, { out: (text) => void told.out.push(text), warn: told.warn });
      const following = cli.parseAsync(['tasks', 'follow', taskId], { from: 'user' });
      await waitFor(() => told.lines.length > 0, TOLD_WITHIN_MS, 'the warning');
      expect(told.lines[0]!.at).to.be.below(TOLD_WITHIN_MS);
      expect(told.lines[0]!.message).to.match(new RegExp(`^cannot reach ${nowhere} \\(DESKHAND_BASE_URL\\): connection refused; retrying for about \\d+ s`));

      // The service comes up at that address: the command goes on by itself.
      later = await startDeskhand(testConfig({}), ['web'], { port: Number(new URL(nowhere).port) });
      await following;
      expect(told.lines.map((line) => line.message)).to.have.length(2);
      expect(told.lines[1]!.message).to.equal(`reached ${nowhere} again; following ${taskId}.`);
      expect(told.out.at(-1)).to.equal(`Task ${taskId} completed: Opened Notes\n`);
    } finally {
      await later?.stop();
      await first.stop();
    }
  });

  for (const [name, register, args] of [
    ['desktop', registerDesktopCommand, ['desktop', '--code', 'ABCD-EFGH']],
    ['runner', registerRunnerCommand, ['runner', '--token', `dhr_${'a'.repeat(38)}`, '--data-dir', 'DATA']],
  ] as const) {
    it(`${name} says within 2 s that it cannot reach the service, and keeps trying`, async () => {
      const told = new Told();
      const signals = new EventEmitter();
      const cli = program();
      register(cli, { out: () => undefined, warn: told.warn, signals });
      const running = cli.parseAsync([...args.map((arg) => (arg === 'DATA' ? work : arg)), '--base-url', nowhere], { from: 'user' });
      try {
        await waitFor(() => told.lines.length > 0, TOLD_WITHIN_MS, 'the warning');
        expect(told.lines[0]!.message).to.include(`cannot reach the service at ${nowhere}`).and.to.include('Still trying');
      } finally {
        signals.emit('SIGTERM');
        await running;
      }
    });
  }
});
