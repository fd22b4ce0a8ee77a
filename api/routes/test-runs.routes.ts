import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { conflict, ERRORS, invalidInput, notFound } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf, PageQuery } from '../schemas/common.schemas';
import { ComparisonSchema, CreateTestRunBody, TestRunParams, TestRunSchema, TrySchema } from '../schemas/test-runs.schemas';

const TAG = 'Test runs';

/** Test runs (docs/evals.md, "Test runs"): queue one, read it with its summary and tries, cancel it, compare two. */
export function testRunRoutes(container: Container): RouteSpec[] {
  const { testRuns } = container;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/test_runs',
      operationId: 'createTestRun',
      summary: 'Queue a run of a test set (or a list of cases) against one agent version',
      description:
        'Exactly one of `test_set_id` and `test_case_ids`. Every case is fixed as it is now, its start state at its current version. ' +
        'Each case is tried `repeat` times (the run\'s, else the case\'s in the set, else the set\'s), each try on a fresh machine. ' +
        'At most 10,000 tries a run. Any member of the org may start one (docs/console.md, Roles).',
      tag: TAG,
      auth: 'api_key',
      body: CreateTestRunBody,
      response: TestRunSchema,
      errors: [invalidInput('Give exactly one of test_set_id and test_case_ids'), invalidInput('test_set_id: no test set ts_4tz1vn5c9q'), ERRORS.noAgent, notFound('Agent support-bot has no version 7; its published version is 3')],
      idempotent: true,
      handler: async ({ auth, body, requestId }) => testRuns.create({ orgId: auth.orgId, actor: auth.actor }, body, requestId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/test_runs',
      operationId: 'listTestRuns',
      summary: 'The org\'s test runs, newest first',
      description:
        'The org\'s test runs, newest first, a page at a time (`cursor`), each with its summary. Any API key of the org may call it. 400 invalid_request for a malformed cursor.',
      tag: TAG,
      auth: 'api_key',
      query: Type.Object({ ...PageQuery, agent_id: Type.Optional(Type.String({ maxLength: 40 })), test_set_id: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }),
      response: ListOf(TestRunSchema),
      errors: [],
      handler: async ({ auth, query }) => testRuns.list(auth.orgId, { agentId: query.agent_id, testSetId: query.test_set_id }, { limit: query.limit ?? 20, cursor: query.cursor ?? null }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/test_runs/{test_run_id}',
      operationId: 'getTestRun',
      summary: 'A test run with its summary: tries by status, pass rate, and per case pass@k, pass^k and flakiness',
      description:
        'One test run with its summary: its tries by status, the pass rate, and per case pass@k, pass^k and flakiness. Poll it until its status has ended, or follow the tries. Any API key of the org may call it. 404 not_found when the org has no such test run.',
      tag: TAG,
      auth: 'api_key',
      params: TestRunParams,
      response: TestRunSchema,
      errors: [ERRORS.noTestRun],
      handler: async ({ auth, params }) => testRuns.get(auth.orgId, params.test_run_id),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/test_runs/{test_run_id}/tries',
      operationId: 'listTries',
      summary: 'A run\'s tries, newest first: each with its task (to replay), check, rubric verdicts, steps and time',
      description:
        'The run\'s tries, newest first, a page at a time: each with its task (follow or replay it like any task), its check script\'s result, its rubric verdicts, its steps and time. Any API key of the org may call it. 404 not_found when the org has no such test run.',
      tag: TAG,
      auth: 'api_key',
      params: TestRunParams,
      query: Type.Object({ ...PageQuery }, { additionalProperties: false }),
      response: ListOf(TrySchema),
      errors: [ERRORS.noTestRun],
      handler: async ({ auth, params, query }) => testRuns.tries(auth.orgId, params.test_run_id, { limit: query.limit ?? 20, cursor: query.cursor ?? null }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/test_runs/{test_run_id}/cancel',
      operationId: 'cancelTestRun',
      summary: 'Cancel a run: its running tries stop, the queued ones are skipped',
      description: '409 `not_running` when it already ended. Any member of the org may cancel a run.',
      tag: TAG,
      auth: 'api_key',
      params: TestRunParams,
      response: TestRunSchema,
      errors: [ERRORS.noTestRun, conflict('not_running', 'Test run tr_9q1x8f2k4m is completed')],
      handler: async ({ auth, params, requestId }) => testRuns.cancel({ orgId: auth.orgId, actor: auth.actor }, params.test_run_id, requestId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/test_runs/{test_run_id}/compare',
      operationId: 'compareTestRuns',
      summary: 'This run (the new one) against `with` (the baseline), case by case',
      description: 'Per case both pass rates and a label: `regressed` (passes less often than in the baseline), `improved`, `flaky` (its tries disagree, rate unchanged), `unchanged`; and the totals.',
      tag: TAG,
      auth: 'api_key',
      params: TestRunParams,
      query: Type.Object({ with: Type.String({ minLength: 1, maxLength: 100, description: 'The baseline run.' }) }, { additionalProperties: false }),
      response: ComparisonSchema,
      errors: [ERRORS.noTestRun, invalidInput('with: no test run tr_4m9q1x8f2k')],
      handler: async ({ auth, params, query }) => testRuns.compare(auth.orgId, params.test_run_id, query.with) as never,
    }),
  ];
}
