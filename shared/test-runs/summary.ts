import type { TryStatus } from './test-run-rows';

/**
 * A run's figures (docs/evals.md, "Test runs"): counts by status, the pass rate over scored
 * tries, and per case pass@k and pass^k with k its repeat. Scored tries are the passed and failed
 * ones: an `error` (infrastructure gave up) or a cancelled try says nothing about the agent.
 */

export interface CaseTally {
  test_case_id: string;
  key: string | null;
  repeat: number;
  statuses: TryStatus[];
}

export interface CaseSummary {
  test_case_id: string;
  key: string | null;
  tries: number;
  scored: number;
  passed: number;
  pass_rate: number | null;
  pass_at_k: number | null;
  pass_hat_k: number | null;
  flaky: boolean;
}

export interface RunSummary {
  tries: Record<TryStatus, number> & { total: number };
  pass_rate: number | null;
  cases: CaseSummary[];
}

/** n choose k, exactly for the small numbers here (repeat ≤ 20, tries ≤ 60). */
function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let result = 1;
  for (let i = 1; i <= k; i += 1) result = (result * (n - k + i)) / i;
  return result;
}

/**
 * pass@k: the chance that at least one of k tries drawn from the n scored passes
 * (1 − C(n−c, k) / C(n, k), the unbiased estimator of Chen et al. 2021); null before k tries are scored.
 */
export function passAtK(scored: number, passed: number, k: number): number | null {
  if (scored < k || k < 1) return null;
  return round(1 - choose(scored - passed, k) / choose(scored, k));
}

/** pass^k: the chance that k tries drawn from the n scored all pass (C(c, k) / C(n, k), as tau-bench); null before k are scored. */
export function passHatK(scored: number, passed: number, k: number): number | null {
  if (scored < k || k < 1) return null;
  return round(choose(passed, k) / choose(scored, k));
}

const round = (value: number) => Math.round(value * 10_000) / 10_000;

export function summarise(cases: CaseTally[]): RunSummary {
  const tries = { queued: 0, running: 0, passed: 0, failed: 0, error: 0, cancelled: 0, total: 0 };
  const perCase = cases.map((tally): CaseSummary => {
    for (const status of tally.statuses) {
      tries[status] += 1;
      tries.total += 1;
    }
    const passed = tally.statuses.filter((status) => status === 'passed').length;
    const scored = passed + tally.statuses.filter((status) => status === 'failed').length;
    return {
      test_case_id: tally.test_case_id,
      key: tally.key,
      tries: tally.statuses.length,
      scored,
      passed,
      pass_rate: scored ? round(passed / scored) : null,
      pass_at_k: passAtK(scored, passed, tally.repeat),
      pass_hat_k: passHatK(scored, passed, tally.repeat),
      flaky: passed > 0 && passed < scored,
    };
  });
  const scored = tries.passed + tries.failed;
  return { tries, pass_rate: scored ? round(tries.passed / scored) : null, cases: perCase };
}

export type CompareLabel = 'regressed' | 'improved' | 'unchanged' | 'flaky';

/**
 * One case in two runs: `regressed` when it passes less often than in the baseline, `improved`
 * when more often, `flaky` when the new run's tries disagree among themselves and its rate did
 * not move, `unchanged` otherwise. A case missing or unscored on either side has no label.
 */
export function compareCase(current: CaseSummary | undefined, baseline: CaseSummary | undefined): CompareLabel | null {
  if (current?.pass_rate == null || baseline?.pass_rate == null) return null;
  if (current.pass_rate < baseline.pass_rate) return 'regressed';
  if (current.pass_rate > baseline.pass_rate) return 'improved';
  return current.flaky ? 'flaky' : 'unchanged';
}
