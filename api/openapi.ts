import type { RouteSpec } from './routing';
import { ErrorSchema } from './schemas/common.schemas';
import { LegacyErrorSchema } from './schemas/legacy.schemas';
import { isLegacyPath, legacySecurity } from './legacy-paths';
import { ComponentRegistry, type JsonSchema } from './openapi-components';
import { exampleOf } from './openapi-examples';
import { errorExample, idempotencyConflictExample } from './openapi-error-examples';

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

/** An operation's own 503, where it is not the model's (see `STATUS_TEXT`). */
const OWN_503_TEXT: Record<string, string> = {
  readyz: 'Not ready: PostgreSQL or Redis is unreachable (server_error, not_ready; `checks` says which).',
};

/**
 * Operations that touch neither PostgreSQL nor Redis, so never answer 503 `unavailable`
 * (`/readyz` reports their state as its own 503 `not_ready`). Every other operation reads
 * PostgreSQL (an API key, a session token, a row) or Redis, and may.
 */
const WITHOUT_BACKING_SERVICES = new Set(['healthz', 'readyz', 'openapi', 'index', 'docsPage', 'docsAsset']);

const UNAVAILABLE_TEXT =
  'PostgreSQL or Redis does not answer (down, restarting or stalled): server_error with code `unavailable`; nothing was lost, retry after `Retry-After` seconds (docs/operations.md).';

/** The 503 `unavailable` every operation that uses PostgreSQL or Redis may answer (api/middleware/errors.ts), declared once. */
function unavailableResponse(errorSchema: string, ownText?: string): Record<string, unknown> {
  return {
    description: ownText ? `${ownText} Or: ${UNAVAILABLE_TEXT}` : UNAVAILABLE_TEXT,
    headers: { 'Retry-After': { description: 'Seconds to wait before retrying (5).', schema: { type: 'integer', minimum: 1 } } },
    content: { 'application/json': { schema: { $ref: errorSchema }, example: errorExample(503, errorSchema.endsWith('LegacyError')) } },
  };
}

const IDEMPOTENCY_CONFLICT_TEXT = 'The Idempotency-Key was already used with another request (conflict, idempotency_conflict).';

/** The `Idempotency-Key` header of the creates (`idempotent` routes), declared once in components.parameters. */
const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the same key with the same request returns the first answer (header `Idempotent-Replayed: true`), also when both arrive at once; ' +
    'the same key with another request answers 409 `idempotency_conflict`. Keys are per org and operation, kept 24 hours (docs/api.md, "Retrying safely").',
  schema: { type: 'string', minLength: 1, maxLength: 200 },
  example: '5f0c2a4e-8d1b-4c3e-9a7f-2b6d1e0c9a11',
};

const IDEMPOTENT_REPLAYED_HEADER = {
  description: '`true` when this is the answer first given to a request with the same Idempotency-Key (nothing new was made); absent otherwise.',
  schema: { type: 'string', enum: ['true'] },
};

function stripForOpenApi(schema: unknown): unknown {
  // TypeBox schemas are plain JSON Schema once serialised; `$id` would clash when reused inline.
  return JSON.parse(JSON.stringify(schema), (key, value) => (key === '$id' ? undefined : value));
}

function sortedByName(schemas: Record<string, JsonSchema>): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
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

/** A JSON media type: the schema with its resources as `$ref`s, and an example composed from theirs. */
function jsonContent(registry: ComponentRegistry, schema: unknown): Record<string, unknown> {
  const referenced = registry.reference(schema);
  const example = exampleOf(referenced, registry.schemas);
  return { 'application/json': { schema: referenced, ...(example !== undefined ? { example } : {}) } };
}

/**
 * The OpenAPI 3.1 document of every route, built from the same schemas that validate requests.
 * Every schema titled in api/schemas/ is a named component, referenced where it is used.
 */
const ROLE_TEXT = {
  admin: 'Needs the admin role or an API key (a member gets 403 `permission`).',
  owner: 'Needs the owner role: API keys and admins get 403 `permission`.',
};

/** The route's description, with the role it needs when the description does not say it. */
function describeOperation(route: RouteSpec): string {
  const own = route.description ?? '';
  return route.role && !/\brole\b/.test(own) ? `${own} ${ROLE_TEXT[route.role]}`.trim() : own;
}

export function buildOpenApiDocument(routes: RouteSpec[], serverUrl: string): Record<string, unknown> {
  const registry = new ComponentRegistry();
  registry.register(ErrorSchema);
  registry.register(LegacyErrorSchema);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const responses: Record<string, unknown> = {
      '200':
        'contentType' in route.response
          ? { description: route.response.description, content: { [route.response.contentType]: { schema: { type: 'string', format: 'binary' } } } }
          : { description: 'OK', content: jsonContent(registry, route.response) },
    };
    if (route.idempotent === true) (responses['200'] as Record<string, unknown>).headers = { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER };
    // The older session-token API authenticates in its handlers and answers errors in its own shape.
    const legacy = isLegacyPath(route.path);
    const errorSchema = legacy ? '#/components/schemas/LegacyError' : '#/components/schemas/Error';
    const statuses = new Set<number>([...route.errors, 500]);
    if (route.auth === 'api_key' || legacy) {
      statuses.add(401);
      statuses.add(429);
    }
    if (route.body || route.query || route.params) statuses.add(400);
    if (route.role) statuses.add(403);
    if (route.idempotent) statuses.add(409);
    const unavailable = !WITHOUT_BACKING_SERVICES.has(route.operationId);
    if (unavailable) statuses.add(503);
    const own503 = OWN_503_TEXT[route.operationId] ?? STATUS_TEXT[503]!;
    for (const status of [...statuses].sort()) {
      if (status === 503 && unavailable) {
        // One declaration in components.responses, unless the operation has a 503 of its own too.
        responses['503'] = route.errors.includes(503)
          ? unavailableResponse(errorSchema, own503)
          : { $ref: legacy ? '#/components/responses/LegacyUnavailable' : '#/components/responses/Unavailable' };
        continue;
      }
      // A create's 409 when its own errors have none: an Idempotency-Key reused with another request.
      const keyConflict = status === 409 && route.idempotent && !route.errors.includes(409);
      responses[String(status)] = {
        description: keyConflict ? IDEMPOTENCY_CONFLICT_TEXT : status === 503 ? own503 : STATUS_TEXT[status] ?? 'Error',
        content: { 'application/json': { schema: { $ref: errorSchema }, example: keyConflict ? idempotencyConflictExample() : errorExample(status, legacy) } },
      };
    }
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description || route.role ? { description: describeOperation(route) } : {}),
      ...(route.role ? { 'x-deskhand-role': route.role } : {}),
      tags: [route.tag],
      parameters: route.idempotent ? [...parameters(route), { $ref: '#/components/parameters/IdempotencyKey' }] : parameters(route),
      responses,
      security: legacy ? legacySecurity(route.path) : route.auth === 'api_key' ? [{ apiKey: [] }] : [],
    };
    if (route.body) {
      operation.requestBody = { required: true, content: jsonContent(registry, route.body) };
    }
    (paths[route.path] ??= {})[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Deskhand API',
      version: '1.0.0',
      description: 'Run AI agents on people\'s computers: agents, sessions, tasks, events, guardrails, webhooks and HTTP tools, runners and evals (start states, test cases, test sets, test runs and their tries). The reference page is at /docs.',
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      schemas: sortedByName(registry.schemas),
      parameters: { IdempotencyKey: IDEMPOTENCY_KEY_PARAMETER },
      responses: {
        Unavailable: unavailableResponse('#/components/schemas/Error'),
        LegacyUnavailable: unavailableResponse('#/components/schemas/LegacyError'),
      },
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
