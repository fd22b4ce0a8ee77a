import { randomBytes } from 'node:crypto';
import type { Container } from '../../shared/container';
import { ERRORS } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { renderMachineViewPage } from '../pages/machine-view.page';
import { ConsoleInputAnswer, ConsoleInputBody, ViewParams } from '../schemas/start-states.schemas';

const TAG = 'Live view';

/**
 * The live view of an open start state's machine (docs/evals.md): a page, its screen and its
 * input. The token in the path is the only key: these routes take no API key, and a token
 * works until the state is saved, closed or deleted, or its `view.expires_at` passes.
 */
export function viewRoutes(container: Container): RouteSpec[] {
  const { startStates } = container;
  return [
    defineRoute({
      method: 'get',
      path: '/view/{token}',
      operationId: 'machineViewPage',
      summary: 'The live view: the open machine\'s screen as it changes; click, type and press keys on it',
      description:
        'The HTML page of an open start state\'s machine: its screen as it changes, and clicks, typing and keys sent to it. No authentication: the token in the path (from the start state\'s `view`) is the capability. 404 once the view has ended.',
      tag: TAG,
      auth: 'none',
      params: ViewParams,
      response: { contentType: 'text/html', description: 'An HTML page; 404 once the view has ended' },
      errors: [ERRORS.liveViewEnded],
      handler: async ({ params, ctx }) => {
        const state = await startStates.viewed(params.token);
        const nonce = randomBytes(16).toString('base64');
        ctx.status = 200;
        ctx.type = 'text/html; charset=utf-8';
        ctx.set('Cache-Control', 'no-store');
        ctx.set('Referrer-Policy', 'no-referrer');
        ctx.set('Content-Security-Policy', `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; img-src blob:; connect-src 'self'`);
        ctx.body = renderMachineViewPage({ name: state.name, expiresAt: state.view_expires_at!.toISOString(), nonce });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/view/{token}/screen.png',
      operationId: 'machineViewScreen',
      summary: 'The open machine\'s screen now, as a PNG',
      description:
        '`X-Frame` (also the `ETag`) counts the screen\'s changes: send `If-None-Match` with the last one to get 304 while it has not changed. ' +
        '409 `starting` while the machine starts; 503 `runner_unavailable` when its runner does not answer.',
      tag: TAG,
      auth: 'none',
      params: ViewParams,
      response: { contentType: 'image/png', description: 'The PNG of the screen' },
      errors: [ERRORS.liveViewEnded, ERRORS.machineStarting, ERRORS.runnerRefused, ERRORS.runnerUnavailable],
      handler: async ({ params, ctx }) => {
        const screen = await startStates.screen(params.token);
        const etag = `"${screen.frame}"`;
        ctx.set('Cache-Control', 'no-store');
        ctx.set('ETag', etag);
        ctx.set('X-Frame', String(screen.frame));
        if (ctx.get('If-None-Match') === etag) {
          ctx.status = 304;
          return;
        }
        ctx.status = 200;
        ctx.type = 'image/png';
        ctx.body = screen.png;
      },
    }),
    defineRoute({
      method: 'post',
      path: '/view/{token}/input',
      operationId: 'machineViewInput',
      summary: 'A click, typed text or keys on the open machine',
      description: '`{type: "click", x, y}` (screen pixels), `{type: "type", text}` or `{type: "key", keys}` (e.g. `enter`, `cmd+s`). Answers with the screen\'s frame after it.',
      tag: TAG,
      auth: 'none',
      params: ViewParams,
      body: ConsoleInputBody,
      response: ConsoleInputAnswer,
      errors: [ERRORS.liveViewEnded, ERRORS.machineStarting, ERRORS.runnerRefused, ERRORS.runnerUnavailable],
      handler: async ({ params, body }) => ({ ok: true as const, ...(await startStates.input(params.token, body)) }),
    }),
  ];
}
