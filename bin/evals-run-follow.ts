import { setTimeout as sleep } from 'node:timers/promises';
import type { Static } from '@sinclair/typebox';
import type { TestRunSchema } from '../api/schemas/test-runs.schemas';
import { UnreachableError, errorMessage, requestJson, type EvalsApi } from './evals-api';

export type TestRun = Static<typeof TestRunSchema>;

/** How often the run is read while waiting: a run's tries take seconds to minutes, so once a second is plenty. */
export const POLL_MS = 1_000;

/**
 * Consecutive failed reads (service unreachable or a 5xx) tolerated while waiting: a deploy
 * gate should ride out a web process restarting, not fail the pipeline on one dropped request.
 */
const MAX_FAILED_READS = 30;

export const runEnded = (run: TestRun): boolean => run.status === 'completed' || run.status === 'cancelled';

/**
 * Reads `GET /v1/test_runs/{id}` every `intervalMs` until the run ends, calling `onRead` with
 * each reading. Answers the ended run, or null when `signal` aborts the wait (the run goes on).
 * A 4xx (the run deleted, the key revoked) ends the wait with the service's message. A read that
 * fails for want of the service is told through `warn` at once (once per outage) and retried.
 */
export async function followRun(
  api: EvalsApi,
  runId: string,
  options: { intervalMs?: number; signal: AbortSignal; onRead(run: TestRun): void; warn?(message: string): void },
): Promise<TestRun | null> {
  let failedReads = 0;
  for (;;) {
    if (options.signal.aborted) return null;
    const answer = await readRun(api, runId);
    if (answer.run) {
      if (failedReads > 0) options.warn?.(`reached ${api.baseUrl} again; waiting for ${runId}.`);
      failedReads = 0;
      options.onRead(answer.run);
      if (runEnded(answer.run)) return answer.run;
    } else if (++failedReads >= MAX_FAILED_READS) {
      throw new Error(`gave up waiting for ${runId} after ${MAX_FAILED_READS} failed reads: ${answer.problem}`);
    } else if (failedReads === 1) {
      const seconds = (MAX_FAILED_READS - 1) * (options.intervalMs ?? POLL_MS) / 1000;
      options.warn?.(`${answer.problem}; retrying for about ${seconds} s (Ctrl+C stops waiting; the run goes on).`);
    }
    try {
      await sleep(options.intervalMs ?? POLL_MS, undefined, { signal: options.signal });
    } catch {
      return null;
    }
  }
}

/** One reading: the run, or (for a passing trouble) what went wrong. A 4xx throws. */
async function readRun(api: EvalsApi, runId: string): Promise<{ run: TestRun; problem?: never } | { run?: never; problem: string }> {
  try {
    const answer = await requestJson<TestRun>(api, 'GET', `/v1/test_runs/${encodeURIComponent(runId)}`);
    if (answer.ok && answer.body) return { run: answer.body };
    if (answer.status < 500) throw new Error(`reading ${runId} refused (${answer.status}): ${errorMessage(answer)}`);
    return { problem: `${api.baseUrl} (DESKHAND_BASE_URL) answered ${answer.status}: ${errorMessage(answer)}` };
  } catch (error) {
    if (error instanceof UnreachableError) return { problem: error.message };
    throw error;
  }
}
