import type { RunSummary } from './summary';
import type { RunCaseRow, TestRunRow, TryRow } from './test-run-rows';

/** The Test run object (docs/evals.md, "Test runs"). */
export interface TestRun {
  object: 'test_run';
  test_run_id: string;
  test_set_id: string | null;
  agent_id: string;
  /** The published version it runs, or the version its draft is based on (`draft: true`). */
  agent_version: number;
  draft: boolean;
  status: TestRunRow['status'];
  repeat: number | null;
  case_count: number;
  summary: RunSummary;
  metadata: Record<string, string>;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
}

/** A try of a run: its case, its attempt, how it went, and the task to replay. */
export interface Try {
  object: 'try';
  try_id: string;
  test_run_id: string;
  test_case_id: string;
  key: string | null;
  attempt: number;
  status: TryRow['status'];
  phase: TryRow['phase'];
  task_id: string | null;
  runner_id: string | null;
  start_state: { start_state_id: string; version: number };
  infra_retries: number;
  check: TryRow['check'];
  rubric: TryRow['rubric'];
  steps: number | null;
  duration_ms: number | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

export function toTestRun(row: TestRunRow, cases: number, summary: RunSummary): TestRun {
  return {
    object: 'test_run',
    test_run_id: row.id,
    test_set_id: row.test_set_id,
    agent_id: row.agent_id,
    agent_version: row.agent_version,
    draft: row.draft,
    status: row.status,
    repeat: row.repeat,
    case_count: cases,
    summary,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    ended_at: iso(row.ended_at),
  };
}

export function toTry(row: TryRow, runCase: Pick<RunCaseRow, 'key' | 'snapshot'> | undefined): Try {
  return {
    object: 'try',
    try_id: row.id,
    test_run_id: row.run_id,
    test_case_id: row.test_case_id,
    key: runCase?.key ?? null,
    attempt: row.attempt,
    status: row.status,
    phase: row.phase,
    task_id: row.task_id,
    runner_id: row.runner_id,
    start_state: { start_state_id: runCase?.snapshot.start_state ?? '', version: row.start_state_version ?? 0 },
    infra_retries: row.infra_retries,
    check: row.check,
    rubric: row.rubric,
    steps: row.steps,
    duration_ms: row.duration_ms,
    error: row.error,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    ended_at: iso(row.ended_at),
  };
}
