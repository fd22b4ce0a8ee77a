import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { conflict, ERRORS, invalidInput } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf, PageQuery } from '../schemas/common.schemas';
import { CreateStartStateBody, StartStateParams, StartStateSchema, UpdateStartStateBody } from '../schemas/start-states.schemas';

const TAG = 'Start states';

/** Start states (spec: Start state; docs/evals.md): images, and the org's states made, opened, saved, changed and deleted. */
export function startStateRoutes(container: Container): RouteSpec[] {
  const { startStates } = container;
  const caller = (auth: { orgId: string; actor: Parameters<typeof startStates.create>[0]['actor'] }) => ({ orgId: auth.orgId, actor: auth.actor });
  return [
    defineRoute({
      method: 'get',
      path: '/v1/start_states',
      operationId: 'listStartStates',
      summary: 'The images of the org\'s runners (and cloud runners), then the org\'s start states, newest first',
      description: 'Images (`kind: image`) come on the first page only, before the states; the states are paginated.',
      tag: TAG,
      auth: 'api_key',
      query: Type.Object({ ...PageQuery }, { additionalProperties: false }),
      response: ListOf(StartStateSchema),
      errors: [],
      handler: async ({ auth, query }) => startStates.list(auth.orgId, { limit: query.limit ?? 20, cursor: query.cursor ?? null }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/start_states',
      operationId: 'createStartState',
      summary: 'Make a start state from an image or a ready state: by hand, by a script or by an agent\'s instruction',
      description:
        '`hand`: `open` at once with a live view (`view`); save it when done. `script`: `building` while the script runs in the machine\'s shell, ' +
        'then `ready` at version 1, or `failed` with its exit status and output. `instruction`: `building` while an agent task (`task_id`) carries it ' +
        'out, then `ready`, or `failed` with the task\'s error. 400 naming `from` when it is neither an image of the org\'s runners nor a saved state; ' +
        '409 `no_runner` when no runner that can make the machine is online. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      body: CreateStartStateBody,
      response: StartStateSchema,
      errors: [
        invalidInput('from: no runner of this org (or cloud runner) has an image macos-99; GET /v1/start_states lists the images'),
        ERRORS.noAgent,
        conflict('no_runner', 'No online runner has the image macos-15; start a runner that has it'),
      ],
      idempotent: true,
      handler: async ({ auth, body, requestId }) => startStates.create(caller(auth), body, requestId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/start_states/{start_state_id}',
      operationId: 'getStartState',
      summary: 'One start state, or an image by its name',
      description:
        'One start state of the org, or an image by its name (such as `macos-15`), with its status and, while open, its live view. Any API key of the org may call it. 404 not_found when there is no such start state or image.',
      tag: TAG,
      auth: 'api_key',
      params: StartStateParams,
      response: StartStateSchema,
      errors: [ERRORS.noStartState],
      handler: async ({ auth, params }) => startStates.get(auth.orgId, params.start_state_id),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/start_states/{start_state_id}',
      operationId: 'updateStartState',
      summary: 'Change a start state\'s name, description or metadata',
      description: 'Send only the fields to change. An image cannot be changed: 403 `image`. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: StartStateParams,
      body: UpdateStartStateBody,
      response: StartStateSchema,
      errors: [ERRORS.image, ERRORS.noStartState],
      handler: async ({ auth, params, body, requestId }) => startStates.update(caller(auth), params.start_state_id, body, requestId),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/start_states/{start_state_id}',
      operationId: 'deleteStartState',
      summary: 'Delete a start state and its saved disks',
      description:
        'Its open machine (if any) is shut down and its saved disks are deleted on the runner that keeps them. Returns it as it was; ' +
        'afterwards it is 404. An image cannot be deleted: 403 `image`. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: StartStateParams,
      response: StartStateSchema,
      errors: [ERRORS.image, ERRORS.noStartState, conflict('in_use', 'Start state ss_8f2k4m9q1x is used by 2 test case(s); change or delete them first', { test_case_ids: ['tc_7m2pd8w4tz', 'tc_9q1x8f2k4m'] })],
      handler: async ({ auth, params, requestId }) => startStates.delete(caller(auth), params.start_state_id, requestId),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/start_states/{start_state_id}/open',
      operationId: 'openStartState',
      summary: 'Open a ready start state: a machine from its latest version, with a live view',
      description:
        '`open` with `view` until `view.expires_at` (60 minutes by default); save it to keep changes as the next version, or let it close ' +
        'unsaved. 409 `not_ready` unless it is ready; 409 `no_runner` when the runner that keeps its disks is offline. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: StartStateParams,
      response: StartStateSchema,
      errors: [ERRORS.image, ERRORS.noStartState, conflict('not_ready', 'Start state ss_8f2k4m9q1x is building; only a ready one can be opened'), conflict('no_runner', "Runner rn_2pd8w4tz1v, which keeps this start state's disks, is offline")],
      handler: async ({ auth, params, requestId }) => startStates.open(caller(auth), params.start_state_id, {}, requestId),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/start_states/{start_state_id}/save',
      operationId: 'saveStartState',
      summary: 'Shut the open machine down and keep its disk as the next version',
      description: '`saving`, then `ready` with `version` one higher. 409 `not_open` unless it is open; 403 `image` for an image. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: StartStateParams,
      response: StartStateSchema,
      errors: [ERRORS.image, ERRORS.noStartState, conflict('not_open', 'Start state ss_8f2k4m9q1x is ready; only an open one can be saved')],
      handler: async ({ auth, params, requestId }) => startStates.save(caller(auth), params.start_state_id, requestId),
    }),
  ];
}
