import type { Container } from '../../shared/container';
import { conflict, ERRORS, permission } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf } from '../schemas/common.schemas';
import { CreateRunnerBody, CreatedRunnerSchema, RunnerParams, RunnerSchema } from '../schemas/runners.schemas';

const TAG = 'Runners';

/** Runners (spec: Runner; docs/runners.md): register one of the org's own, read, revoke. */
export function runnerRoutes(container: Container): RouteSpec[] {
  const { runners } = container;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/runners',
      operationId: 'createRunner',
      summary: 'Register a runner of the org\'s own; its token is shown once',
      description:
        'The token (`dhr_…`) is in this response only; the service keeps its hash. Start the runner with it: it connects out to the ' +
        'socket.io namespace `/runners` and serves only this org. An org has at most 100 runners (409 `runner_limit`). Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      body: CreateRunnerBody,
      response: CreatedRunnerSchema,
      errors: [conflict('runner_limit', 'This org has 100 runners, the most it may have; delete one it no longer uses first')],
      idempotent: true,
      handler: async ({ auth, body, requestId }) => {
        const { runner, token } = await runners.create({ orgId: auth.orgId, actor: auth.actor }, body.name, requestId);
        return { ...runner, token };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/runners',
      operationId: 'listRunners',
      summary: 'The org\'s runners and the cloud runners, newest first, in one page',
      description:
        'The runners that can run the org\'s machines: its own (scope org) and the service\'s (scope cloud), newest first, in one page, with their status, slots and images. Any API key of the org may call it.',
      tag: TAG,
      auth: 'api_key',
      response: ListOf(RunnerSchema),
      errors: [],
      handler: async ({ auth }) => runners.list(auth.orgId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/runners/{runner_id}',
      operationId: 'getRunner',
      summary: 'One of the org\'s runners, or a cloud runner',
      description: '404 for another org\'s runner and for a deleted one.',
      tag: TAG,
      auth: 'api_key',
      params: RunnerParams,
      response: RunnerSchema,
      errors: [ERRORS.noRunner],
      handler: async ({ auth, params }) => runners.get(auth.orgId, params.runner_id),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/runners/{runner_id}',
      operationId: 'deleteRunner',
      summary: 'Delete (revoke) one of the org\'s runners',
      description:
        'Its token stops working at once and a connected runner is disconnected, whichever web process holds it. Returns the runner ' +
        'as it was, offline; afterwards it is 404. 403 `cloud_runner` for a cloud runner (the service\'s own), 404 for another org\'s. ' +
        'Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: RunnerParams,
      response: RunnerSchema,
      errors: [permission('cloud_runner', "rn_cloud1 is a cloud runner: the service's own, which an org cannot delete"), ERRORS.noRunner],
      handler: async ({ auth, params, requestId }) => runners.revoke({ orgId: auth.orgId, actor: auth.actor }, params.runner_id, requestId),
    }),
  ];
}
