import { Type } from '@sinclair/typebox';
import { DateTime, Metadata } from './common.schemas';

/** Schemas of test runs and their tries (docs/evals.md, "Test runs"). */

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Rate = Nullable(Type.Number({ minimum: 0, maximum: 1 }));

const TryStatus = Type.Union(['queued', 'running', 'passed', 'failed', 'error', 'cancelled'].map((s) => Type.Literal(s)));

const CaseSummary = Type.Object({
  test_case_id: Type.String(),
  key: Nullable(Type.String()),
  tries: Type.Integer(),
  scored: Type.Integer({ description: 'Passed and failed tries (an error or a cancelled try is not scored).' }),
  passed: Type.Integer(),
  pass_rate: Rate,
  pass_at_k: { ...Rate, description: 'The chance that at least one of k tries passes, k = the case\'s repeat; null until k tries are scored.' },
  pass_hat_k: { ...Rate, description: 'The chance that all of k tries pass (pass^k), k = the case\'s repeat; null until k tries are scored.' },
  flaky: Type.Boolean({ description: 'Some scored tries passed and some failed.' }),
});

export const TestRunSchema = Type.Object({
  object: Type.Literal('test_run'),
  test_run_id: Type.String({ description: '`tr_<id>`' }),
  test_set_id: Nullable(Type.String()),
  agent_id: Type.String(),
  agent_version: Type.Integer({ description: 'The published version it runs, or the one its draft is based on.' }),
  draft: Type.Boolean({ description: 'The draft runs (agent_version "draft" at creation).' }),
  status: Type.Union(['queued', 'running', 'completed', 'cancelled'].map((s) => Type.Literal(s))),
  repeat: Nullable(Type.Integer()),
  case_count: Type.Integer(),
  summary: Type.Object({
    tries: Type.Object({ total: Type.Integer(), queued: Type.Integer(), running: Type.Integer(), passed: Type.Integer(), failed: Type.Integer(), error: Type.Integer(), cancelled: Type.Integer() }),
    pass_rate: Rate,
    cases: Type.Array(CaseSummary),
  }),
  metadata: Metadata,
  created_at: DateTime,
  started_at: Nullable(DateTime),
  ended_at: Nullable(DateTime),
}, { title: 'TestRun' });

export const TrySchema = Type.Object({
  object: Type.Literal('try'),
  try_id: Type.String(),
  test_run_id: Type.String(),
  test_case_id: Type.String(),
  key: Nullable(Type.String()),
  attempt: Type.Integer({ description: '1 to the case\'s repeat.' }),
  status: TryStatus,
  phase: Nullable(Type.Union(['machine', 'setup', 'task', 'check', 'judge', 'done'].map((s) => Type.Literal(s)))),
  task_id: Nullable(Type.String({ description: 'The task on its machine: follow it, read its recording.' })),
  runner_id: Nullable(Type.String()),
  start_state: Type.Object({ start_state_id: Type.String(), version: Type.Integer() }),
  infra_retries: Type.Integer({ description: 'Times it moved to a new machine after an infrastructure failure (at most 2).' }),
  check: Nullable(
    Type.Object({
      exit_code: Nullable(Type.Integer()),
      output: Type.String({ description: 'What the check printed, stdout then stderr (its last 4,000 characters), or "(the check script printed nothing on stdout or stderr)".' }),
      stdout: Type.Optional(Type.String({ description: 'Its stdout alone (the last 4,000 characters), when the runner reports the two apart.' })),
      stderr: Type.Optional(Type.String({ description: 'Its stderr alone (the last 4,000 characters), when the runner reports the two apart.' })),
      error: Type.Optional(Type.String()),
    }),
  ),
  rubric: Nullable(
    Type.Object({
      passed: Type.Boolean(),
      criteria: Type.Array(Type.Object({ criterion: Type.String(), passed: Type.Boolean(), reason: Type.String() })),
      judge_model: Type.String(),
    }),
  ),
  steps: Nullable(Type.Integer()),
  duration_ms: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  created_at: DateTime,
  started_at: Nullable(DateTime),
  ended_at: Nullable(DateTime),
}, { title: 'Try' });

export const CreateTestRunBody = Type.Object(
  {
    test_set_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    test_case_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 500 })),
    agent_id: Type.Optional(Type.String({ pattern: '^[a-z0-9-]{2,40}$', description: 'The default agent when left out.' })),
    agent_version: Type.Optional(
      Type.Union([Type.Literal('draft'), Type.Literal('published'), Type.Integer({ minimum: 1 })], {
        description: 'published (the default) tries the published version; draft the unpublished draft; a number that published version (404 not_found naming it when the agent has no such version). As for tasks.',
      }),
    ),
    repeat: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, description: 'Tries per case, over the set\'s and the cases\' own.' })),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false, examples: [{ test_set_id: 'ts_6v3k9w2r8m1x5q7c4n2b', agent_id: 'support', agent_version: 'draft', repeat: 3 }] },
);

export const TestRunParams = Type.Object({ test_run_id: Type.String({ minLength: 1, maxLength: 100 }) });

export const ComparisonSchema = Type.Object({
  object: Type.Literal('test_run_comparison'),
  test_run_id: Type.String(),
  with: Type.String(),
  pass_rate: Rate,
  baseline_pass_rate: Rate,
  cases: Type.Array(
    Type.Object({
      test_case_id: Type.String(),
      key: Nullable(Type.String()),
      pass_rate: Rate,
      baseline_pass_rate: Rate,
      label: Nullable(Type.Union(['regressed', 'improved', 'unchanged', 'flaky'].map((s) => Type.Literal(s)))),
    }),
  ),
  totals: Type.Object({ regressed: Type.Integer(), improved: Type.Integer(), unchanged: Type.Integer(), flaky: Type.Integer() }),
}, { title: 'TestRunComparison' });
