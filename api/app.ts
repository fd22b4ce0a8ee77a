import Koa from 'koa';
import { Type } from '@sinclair/typebox';
import type { Container } from '../shared/container';
import { notFound } from '../shared/errors';
import { edge } from './middleware/edge';
import type { RequestState } from './middleware/request-state';
import { jsonBody, DEFAULT_BODY_LIMIT_BYTES } from './middleware/json-body';
import { rateLimitByIp, rateLimitMiddleware } from './middleware/rate-limit';
import { longPollListener } from './long-polls';
import { bullBoard } from './admin/bull-board';
import { credentialsOf, defineRoute, routedMiddleware, type RouteSpec } from './routing';
import { requestAuthenticator } from './authenticate';
import { buildOpenApiDocument } from './openapi';
import { healthRoutes } from './routes/health.routes';
import { auditRoutes } from './routes/audit.routes';
import { agentRoutes } from './routes/agents.routes';
import { identityRoutes } from './routes/identity.routes';
import { memberRoutes } from './routes/members.routes';
import { apiKeyRoutes } from './routes/api-keys.routes';
import { consoleRouter, renderProblem } from './console/console.router';
import { webhookRoutes } from './routes/webhooks.routes';
import { toolRoutes } from './routes/tools.routes';
import { sessionRoutes } from './routes/sessions.routes';
import { pageRoutes } from './routes/pages.routes';
import { taskRoutes } from './routes/tasks.routes';
import { legacyRoutes } from './routes/legacy.routes';
import { runnerRoutes } from './routes/runners.routes';
import { startStateRoutes } from './routes/start-states.routes';
import { viewRoutes } from './routes/views.routes';
import { testCaseRoutes } from './routes/test-cases.routes';
import { testSetRoutes } from './routes/test-sets.routes';
import { testRunRoutes } from './routes/test-runs.routes';
import { docsRoutes } from './routes/docs.routes';
import { billingRoutes, PROVIDER_WEBHOOK_PATH } from './routes/billing.routes';
import { isLegacyPath } from './legacy-paths';

/** Every route of the API, in the order they are documented. */
export function allRoutes(container: Container): RouteSpec[] {
  const routes: RouteSpec[] = [...healthRoutes(container), ...identityRoutes(), ...memberRoutes(container), ...apiKeyRoutes(container), ...auditRoutes(container), ...agentRoutes(container), ...sessionRoutes(container), ...taskRoutes(container), ...pageRoutes(container), ...webhookRoutes(container), ...toolRoutes(container), ...runnerRoutes(container), ...startStateRoutes(container), ...testCaseRoutes(container), ...testSetRoutes(container), ...testRunRoutes(container), ...billingRoutes(container), ...viewRoutes(container), ...legacyRoutes(container), ...docsRoutes(container)];
  let document: Record<string, unknown> | null = null;
  routes.push(
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      operationId: 'openapi',
      summary: 'This API as an OpenAPI 3.1 document',
      description:
        'This document: every operation with its schemas, errors and examples, built from the same schemas that validate requests. Rendered for people at /docs. No authentication.',
      tag: 'Health',
      auth: 'none',
      response: Type.Object({ openapi: Type.String() }, { additionalProperties: true }),
      errors: [],
      handler: async () => (document ??= buildOpenApiDocument(routes, container.config.baseUrl, { rateLimitPerHour: container.config.rateLimitPerHour })) as { openapi: string },
    }),
  );
  return routes;
}

/**
 * The Koa application: the edge (request id, errors, access log) first, then the /v1 gates, then
 * the routes; and `listener`, the web server's request handler: long polls on node:http
 * (api/long-polls.ts, through the same steps), everything else through Koa.
 */
export function createApp(container: Container, options: { validateResponses?: boolean } = {}) {
  const app = new Koa({ proxy: container.config.trustProxy });
  const routes = allRoutes(container);
  // An API key, or a person signed in to the console (api/authenticate.ts).
  const authenticate = requestAuthenticator(container.apiKeys, container.users);
  const routed = routedMiddleware(routes, {
    authenticate,
    idempotency: container.idempotency,
    validateResponses: options.validateResponses ?? false,
  });
  const largeBodyPaths = new Set(routes.filter((route) => route.bodyLimitBytes).map((route) => route.path));
  const limiter = rateLimitByIp({ redis: container.redis, prefix: container.config.redisPrefix, pointsPerHour: container.config.rateLimitPerHour });
  const limitV1 = rateLimitMiddleware(limiter);

  app.use(edge(container.logger));
  app.use(bullBoard(container));
  // The console's pages, before the JSON body parser (its forms are URL-encoded).
  const consolePages = consoleRouter(container);
  app.use(consolePages.routes());
  app.use((ctx, next) => {
    if (ctx.path !== '/console' && !ctx.path.startsWith('/console/')) return next();
    renderProblem(ctx, null, 404, 'Not found', `Nothing at ${ctx.path}`);
  });
  const isV1 = (path: string) => path === '/v1' || path.startsWith('/v1/');
  // The older session-token API shares the /v1 budget of each client address.
  app.use((ctx, next) => (isV1(ctx.path) || isLegacyPath(ctx.path) ? limitV1(ctx, next) : next()));
  // Every /v1 request needs an org API key or a console sign-in: checked before the body is read
  // or the route is known. A key verified recently is known at once.
  app.use((ctx, next) => {
    if (!isV1(ctx.path)) return next();
    const state = ctx.state as RequestState;
    const auth = authenticate(credentialsOf(ctx));
    if (auth instanceof Promise) {
      return auth.then((found) => {
        state.auth = found;
        return next();
      });
    }
    state.auth = auth;
    return next();
  });
  app.use(
    jsonBody({
      limitBytes: DEFAULT_BODY_LIMIT_BYTES,
      largeLimitBytes: 8 * 1024 * 1024,
      isLargeBodyPath: (path) => largeBodyPaths.has(path),
      keepsRawBody: (path) => path === PROVIDER_WEBHOOK_PATH,
    }),
  );
  // The older API's POSTs may come without a body (POST /tasks has none): read as {}.
  app.use((ctx, next) => {
    const request = ctx.request as unknown as { body?: unknown };
    if (ctx.method === 'POST' && isLegacyPath(ctx.path) && request.body === undefined) request.body = {};
    return next();
  });
  app.use(routed.middleware);
  app.use((ctx) => {
    throw notFound(`No route ${ctx.method} ${ctx.path}`);
  });
  const listener = longPollListener(
    routes,
    {
      logger: container.logger,
      limiter,
      authenticate,
      trustProxy: container.config.trustProxy,
      validateResponses: options.validateResponses ?? false,
    },
    app.callback(),
  );
  return { app, routes, routers: routed.routers, listener };
}
