import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { ERRORS, invalidInput } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf, PageQuery } from '../schemas/common.schemas';
import { CreateTestSetBody, TestSetParams, TestSetSchema, UpdateTestSetBody } from '../schemas/test-sets.schemas';

const TAG = 'Test sets';

/** Test sets (spec: Test set; docs/evals.md "Test cases and test sets"): ordered lists of cases to run together. */
export function testSetRoutes(container: Container): RouteSpec[] {
  const { testSets } = container;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/test_sets',
      operationId: 'createTestSet',
      summary: 'Make a test set: live cases of the org, in order',
      description:
        'Each case at most once (give it a `repeat` to try it more); each must be a live case of the org: 400 naming `cases[i].test_case_id`. ' +
        '`repeat` (default 1) is the tries per case unless the case says otherwise. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      body: CreateTestSetBody,
      response: TestSetSchema,
      errors: [invalidInput('cases[0].test_case_id: no test case tc_7m2pd8w4tz')],
      idempotent: true,
      handler: async ({ auth, body, requestId }) => testSets.create({ orgId: auth.orgId, actor: auth.actor }, body, requestId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/test_sets',
      operationId: 'listTestSets',
      summary: 'The org\'s test sets, newest first',
      description:
        'The org\'s test sets, newest first, a page at a time (`cursor`). Any API key of the org may call it. 400 invalid_request for a malformed cursor.',
      tag: TAG,
      auth: 'api_key',
      query: Type.Object({ ...PageQuery }, { additionalProperties: false }),
      response: ListOf(TestSetSchema),
      errors: [],
      handler: async ({ auth, query }) => testSets.list(auth.orgId, { limit: query.limit ?? 20, cursor: query.cursor ?? null }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/test_sets/{test_set_id}',
      operationId: 'getTestSet',
      summary: 'One test set, with its cases in order',
      description:
        'One test set with its cases in order, each with its repeat. Any API key of the org may call it. 404 not_found when the org has no such test set.',
      tag: TAG,
      auth: 'api_key',
      params: TestSetParams,
      response: TestSetSchema,
      errors: [ERRORS.noTestSet],
      handler: async ({ auth, params }) => testSets.get(auth.orgId, params.test_set_id),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/test_sets/{test_set_id}',
      operationId: 'updateTestSet',
      summary: 'Change a test set',
      description: 'Send only the fields to change; `cases` replaces the list. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: TestSetParams,
      body: UpdateTestSetBody,
      response: TestSetSchema,
      errors: [ERRORS.noTestSet, invalidInput('cases[0].test_case_id: no test case tc_7m2pd8w4tz')],
      handler: async ({ auth, params, body, requestId }) => testSets.update({ orgId: auth.orgId, actor: auth.actor }, params.test_set_id, body, requestId),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/test_sets/{test_set_id}',
      operationId: 'deleteTestSet',
      summary: 'Delete a test set (its cases stay)',
      description: 'Returns it as it was; afterwards it is 404. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: TestSetParams,
      response: TestSetSchema,
      errors: [ERRORS.noTestSet],
      handler: async ({ auth, params, requestId }) => testSets.delete({ orgId: auth.orgId, actor: auth.actor }, params.test_set_id, requestId),
    }),
  ];
}
