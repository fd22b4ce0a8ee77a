import type { RouteSpec } from './routing';
import { ErrorSchema } from './schemas/common.schemas';
import { LegacyErrorSchema } from './schemas/legacy.schemas';
import { isLegacyPath, legacySecurity } from './legacy-paths';

const STATUS_TEXT: Record<number, string> = {
  400: 'Malformed request or invalid field (invalid_request).',
  401: 'API key missing, malformed, wrong or revoked (authentication).',
  402: 'The plan does not allow this (payment_required).',
  403: 'The role cannot do this (permission).',
  404: 'No such object in this org, or no such route (not_found).',
  409: 'Conflicts with the current state (conflict).',
  413: 'Request body too large (invalid_request).',
  429: 'Too many requests (rate_limit).',
  500: 'Service-side failure; retry with backoff (server_error).',
  503: 'The model cannot run on this server (model_unavailable).',
};

function stripForOpenApi(schema: unknown): unknown {
  // TypeBox schemas are plain JSON Schema once serialised; `$id` would clash when reused inline.
  return JSON.parse(JSON.stringify(schema), (key, value) => (key === '$id' ? undefined : value));
}

function parameters(route: RouteSpec): object[] {
  const out: object[] = [];
  for (const [where, schema] of [['path', route.params], ['query', route.query]] as const) {
    if (!schema) continue;
    const required = new Set((schema as { required?: string[] }).required ?? []);
    for (const [name, property] of Object.entries((schema as { properties: Record<string, unknown> }).properties)) {
      const clean = stripForOpenApi(property) as { description?: string };
      out.push({
        name,
        in: where,
        required: where === 'path' || required.has(name),
        ...(clean.description ? { description: clean.description } : {}),
        schema: clean,
      });
    }
  }
  return out;
}

/** The OpenAPI 3.1 document of every route, built from the same schemas that validate requests. */
export function buildOpenApiDocument(routes: RouteSpec[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const responses: Record<string, unknown> = {
      '200':
        'contentType' in route.response
          ? { description: route.response.description, content: { [route.response.contentType]: { schema: { type: 'string', format: 'binary' } } } }
          : { description: 'OK', content: { 'application/json': { schema: stripForOpenApi(route.response) } } },
    };
    // The older session-token API authenticates in its handlers and answers errors in its own shape.
    const legacy = isLegacyPath(route.path);
    const errorSchema = legacy ? '#/components/schemas/LegacyError' : '#/components/schemas/Error';
    const statuses = new Set<number>([...route.errors, 500]);
    if (route.auth === 'api_key' || legacy) {
      statuses.add(401);
      statuses.add(429);
    }
    if (route.body || route.query || route.params) statuses.add(400);
    for (const status of [...statuses].sort()) {
      responses[String(status)] = {
        description: STATUS_TEXT[status] ?? 'Error',
        content: { 'application/json': { schema: { $ref: errorSchema } } },
      };
    }
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      parameters: parameters(route),
      responses,
      security: legacy ? legacySecurity(route.path) : route.auth === 'api_key' ? [{ apiKey: [] }] : [],
    };
    if (route.body) {
      operation.requestBody = { required: true, content: { 'application/json': { schema: stripForOpenApi(route.body) } } };
    }
    (paths[route.path] ??= {})[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Deskhand API',
      version: '1.0.0',
      description: 'Run AI agents on people\'s computers: agents, sessions, tasks, events, guardrails, webhooks and HTTP tools (evals are not built yet).',
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      schemas: { Error: stripForOpenApi(ErrorSchema), LegacyError: stripForOpenApi(LegacyErrorSchema) },
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An org API key: Authorization: Bearer dh_live_… (dh_test_… in development).' },
        sessionToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'A session token (older session-token API only; refused by /v1): Authorization: Bearer dh_sess_…, returned once when the session is created.',
        },
      },
    },
  };
}
