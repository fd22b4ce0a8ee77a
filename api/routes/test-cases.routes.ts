import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { conflict, ERRORS, invalidInput } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf, PageQuery } from '../schemas/common.schemas';
import { BATCH_MAX_BYTES, BatchTestCasesAnswer, BatchTestCasesBody, TestCaseInput, TestCaseListQuery, TestCaseParams, TestCaseSchema } from '../schemas/test-cases.schemas';

const TAG = 'Test cases';

/** Test cases (spec: Test case; docs/evals.md "Test cases and test sets"): the batch upsert, read, change, delete. */
export function testCaseRoutes(container: Container): RouteSpec[] {
  const { testCases } = container;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/test_cases/batch',
      operationId: 'batchTestCases',
      summary: 'Create or update up to 500 test cases at once, matched by key',
      description:
        'All or nothing, in one transaction. A case whose `key` a live case of the org has updates it (only the fields sent change); any other is ' +
        'created, and then needs `name`, `prompt`, `start_state` and `success` (a check script, a rubric or both). `start_state` is an image of ' +
        'the org\'s runners or an `ss_` state of the org. Every 400 names the case and the field (`cases[3].start_state: no start state ss_x`). ' +
        'Two cases of one batch with the same key are refused. `test_set_id` also appends the batch\'s cases not already in that set, in order. ' +
        'Body up to 8 MB (413 beyond). Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      body: BatchTestCasesBody,
      bodyLimitBytes: BATCH_MAX_BYTES,
      response: BatchTestCasesAnswer,
      errors: [invalidInput('cases[3].start_state: no start state ss_x'), invalidInput('test_set_id: no test set ts_4tz1vn5c9q')],
      idempotent: true,
      handler: async ({ auth, body, requestId }) => testCases.batch({ orgId: auth.orgId, actor: auth.actor }, body, requestId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/test_cases',
      operationId: 'listTestCases',
      summary: 'The org\'s test cases, newest first',
      description: 'Filters: `category`, `tag` (cases carrying it), `test_set_id` (cases in that set). Keep the same filters on every page.',
      tag: TAG,
      auth: 'api_key',
      query: Type.Object({ ...PageQuery, ...TestCaseListQuery }, { additionalProperties: false }),
      response: ListOf(TestCaseSchema),
      errors: [],
      handler: async ({ auth, query }) =>
        testCases.list(auth.orgId, { category: query.category, tag: query.tag, testSetId: query.test_set_id }, { limit: query.limit ?? 20, cursor: query.cursor ?? null }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/test_cases/{test_case_id}',
      operationId: 'getTestCase',
      summary: 'One test case',
      description:
        'One test case of the org. Any API key of the org may call it. 404 not_found when the org has no such test case.',
      tag: TAG,
      auth: 'api_key',
      params: TestCaseParams,
      response: TestCaseSchema,
      errors: [ERRORS.noTestCase],
      handler: async ({ auth, params }) => testCases.get(auth.orgId, params.test_case_id),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/test_cases/{test_case_id}',
      operationId: 'updateTestCase',
      summary: 'Change a test case',
      description: 'Send only the fields to change; validated as a batch\'s case is. `limits` and `operator` merge into the case\'s; `success` and `customer` are replaced. 409 `key_taken` when another live case has the `key`. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: TestCaseParams,
      body: TestCaseInput,
      response: TestCaseSchema,
      errors: [ERRORS.noTestCase, conflict('key_taken', 'key: another test case has the key "login-1"')],
      handler: async ({ auth, params, body, requestId }) => testCases.update({ orgId: auth.orgId, actor: auth.actor }, params.test_case_id, body, requestId),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/test_cases/{test_case_id}',
      operationId: 'deleteTestCase',
      summary: 'Delete a test case',
      description: 'It leaves every test set that has it, and its key is free again; test runs already created keep their copy. Returns it as it was; afterwards it is 404. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: TestCaseParams,
      response: TestCaseSchema,
      errors: [ERRORS.noTestCase],
      handler: async ({ auth, params, requestId }) => testCases.delete({ orgId: auth.orgId, actor: auth.actor }, params.test_case_id, requestId),
    }),
  ];
}
