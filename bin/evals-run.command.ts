import { InvalidArgumentError, Option, type Command, type CommanderError } from 'commander';
import { apiFromEnv, errorMessage, requestJson, warnOnStderr, type EvalsApi } from './evals-api';
import { followRun, type TestRun } from './evals-run-follow';
import { runOutput } from './evals-run-output';

/**
 * `deskhand evals run (--set ts_… | --cases tc_a,tc_b) [--wait] [--min-pass-rate R] …`: queues a
 * test run and, with `--wait`, follows it to its end, so a pipeline can gate a deploy on it.
 * Exit codes, for scripts: 0 done, 1 the service refused or cannot be reached, 2 bad options,
 * 3 the pass rate is below `--min-pass-rate` (or there is none), 4 the run was cancelled,
 * 130 Ctrl+C stopped the waiting (the run goes on).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, belowThreshold: 3, cancelled: 4, interrupted: 130 } as const;

interface RunOptions {
  set?: string;
  cases?: string[];
  agent?: string;
  version?: number | 'draft';
  repeat?: number;
  wait?: boolean;
  minPassRate?: number;
  metadata?: Record<string, string>;
}

export function registerRunCommand(evals: Command): Command {
  return evals
    .command('run')
    .description('queue a test run of a set or of cases; prints the run, or with --wait follows it to its end and prints the summary')
    .addOption(new Option('--set <test_set_id>', 'run this test set (ts_…)').conflicts('cases'))
    .addOption(new Option('--cases <ids>', 'run these cases, comma-separated (tc_a,tc_b)').argParser(parseCaseIds))
    .option('--agent <agent_id>', 'the agent (default: the default agent)')
    .option('--version <n|draft>', 'the agent version: a published version number or "draft" (default: the published version)', parseVersion)
    .option('--repeat <n>', 'tries per case, 1 to 20 (default: the set\'s or the case\'s)', parseRepeat)
    .option('--wait', 'follow the run until it ends, then print its summary')
    .option('--min-pass-rate <r>', 'with --wait: exit 3 when the run\'s pass rate is below r (0 to 1)', parseRate)
    .option('--metadata <k=v...>', 'metadata of the run (repeatable)', parseMetadata)
    // Usage errors exit 2, like the other commands' option checks, so a script can tell them from a refusal (1).
    .exitOverride((error: CommanderError) => process.exit(error.exitCode === 1 && error.code.startsWith('commander.') ? EXIT.usage : error.exitCode))
    .action(async (options: RunOptions, command: Command) => {
      if (!options.set && !options.cases) command.error('error: one of --set <test_set_id> or --cases <ids> is required', { exitCode: EXIT.usage, code: 'deskhand.noCases' });
      if (options.minPassRate !== undefined && !options.wait) command.error('error: --min-pass-rate needs --wait', { exitCode: EXIT.usage, code: 'deskhand.minPassRateWithoutWait' });
      const api = apiFromEnv();
      const run = await createRun(api, options);
      if (!options.wait) {
        process.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
        return;
      }
      process.exitCode = await waitForRun(api, run, options.minPassRate);
    });
}

/** `POST /v1/test_runs`; a refusal is the service's message. */
async function createRun(api: EvalsApi, options: RunOptions): Promise<TestRun> {
  const body = {
    ...(options.set ? { test_set_id: options.set } : { test_case_ids: options.cases }),
    ...(options.agent ? { agent_id: options.agent } : {}),
    ...(options.version !== undefined ? { agent_version: options.version } : {}),
    ...(options.repeat !== undefined ? { repeat: options.repeat } : {}),
    ...(options.metadata ? { metadata: options.metadata } : {}),
  };
  const answer = await requestJson<TestRun>(api, 'POST', '/v1/test_runs', body);
  if (!answer.ok || !answer.body) throw new Error(`test run refused (${answer.status}): ${errorMessage(answer)}`);
  return answer.body;
}

/**
 * Follows the run to its end and answers the exit code. Ctrl+C stops the waiting only: the run
 * is the team's (other people may be watching it), so it is never cancelled from here.
 */
async function waitForRun(api: EvalsApi, run: TestRun, minPassRate: number | undefined): Promise<number> {
  const output = runOutput();
  const stop = new AbortController();
  const onSigint = () => stop.abort();
  process.once('SIGINT', onSigint);
  let ended: TestRun | null;
  try {
    output.progress(run);
    ended = await followRun(api, run.test_run_id, { signal: stop.signal, onRead: (reading) => output.progress(reading), warn: warnOnStderr });
  } finally {
    process.off('SIGINT', onSigint);
  }
  if (!ended) {
    output.interrupted();
    const url = `${api.baseUrl}/v1/test_runs/${run.test_run_id}`;
    process.stderr.write(`deskhand: stopped waiting; ${run.test_run_id} goes on (not cancelled). Follow it: curl -H "Authorization: Bearer $DESKHAND_API_KEY" ${url} (cancel: POST ${url}/cancel)\n`);
    return EXIT.interrupted;
  }
  output.summary(ended);
  if (ended.status === 'cancelled') {
    process.stderr.write(`deskhand: ${ended.test_run_id} was cancelled\n`);
    return EXIT.cancelled;
  }
  const passRate = ended.summary.pass_rate;
  if (minPassRate !== undefined && (passRate === null || passRate < minPassRate)) {
    process.stderr.write(`deskhand: pass rate ${passRate ?? 'none (no scored tries)'} is below --min-pass-rate ${minPassRate}\n`);
    return EXIT.belowThreshold;
  }
  return EXIT.ok;
}

function parseCaseIds(value: string): string[] {
  const ids = value.split(',').map((id) => id.trim()).filter(Boolean);
  if (ids.length === 0) throw new InvalidArgumentError('--cases takes case ids, comma-separated (tc_a,tc_b).');
  if (ids.length > 500) throw new InvalidArgumentError('--cases takes at most 500 cases (a run of more: make a test set).');
  return ids;
}

function parseVersion(value: string): number | 'draft' {
  if (value === 'draft') return 'draft';
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < 1 || !Number.isSafeInteger(number)) throw new InvalidArgumentError('--version takes a version number (1, 2, …) or "draft".');
  return number;
}

function parseRepeat(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < 1 || number > 20) throw new InvalidArgumentError('--repeat takes a whole number from 1 to 20.');
  return number;
}

function parseRate(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number < 0 || number > 1) throw new InvalidArgumentError('--min-pass-rate takes a number from 0 to 1, such as 0.9.');
  return number;
}

function parseMetadata(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const at = value.indexOf('=');
  if (at < 1) throw new InvalidArgumentError('--metadata takes key=value.');
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) };
}
