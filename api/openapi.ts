import type { RouteSpec } from './routing';
import { ErrorSchema } from './schemas/common.schemas';
import { LegacyErrorSchema } from './schemas/legacy.schemas';
import { isLegacyPath, legacySecurity } from './legacy-paths';
import { ComponentRegistry, type JsonSchema } from './openapi-components';
import { exampleOf } from './openapi-examples';
import { errorBody, operationErrors, UNAVAILABLE_ERROR, type DocumentedError, type ErrorDocumentOptions } from './openapi-error-examples';
import { ERROR_TYPE_OF_STATUS } from './route-errors';

/** What each status means; each response adds the codes the operation answers with it. */
const STATUS_TEXT: Record<number, string> = {
  400: 'Malformed request or invalid field (invalid_request).',
  401: 'Credentials missing, malformed, wrong or revoked (authentication).',
  402: 'The plan or the balance does not cover this (payment_required).',
  403: 'The caller may not do this (permission).',
  404: 'No such object in this org (not_found).',
  409: 'Conflicts with the current state (conflict).',
  413: 'Request body too large (invalid_request).',
  429: 'Too many requests (rate_limit).',
  500: 'Service-side failure; retry with backoff (server_error).',
  503: 'Not available now or on this server (server_error).',
};

const UNAVAILABLE_TEXT =
  'PostgreSQL or Redis does not answer (down, restarting or stalled): server_error with code `unavailable`; nothing was lost, retry after `Retry-After` seconds (docs/operations.md).';

const RETRY_AFTER_HEADER = { 'Retry-After': { description: 'Seconds to wait before retrying (5).', schema: { type: 'integer', minimum: 1 } } };

/** The 503 `unavailable` every operation that uses PostgreSQL or Redis may answer (api/middleware/errors.ts), declared once in components.responses. */
function unavailableResponse(legacy: boolean): Record<string, unknown> {
  const schema = legacy ? '#/components/schemas/LegacyError' : '#/components/schemas/Error';
  return {
    description: UNAVAILABLE_TEXT,
    headers: RETRY_AFTER_HEADER,
    content: { 'application/json': { schema: { $ref: schema }, example: errorBody(UNAVAILABLE_ERROR as DocumentedError & { example: string }, legacy) } },
  };
}

/**
 * The responses of one status: its meaning and codes, and one example per error the operation
 * answers with it (`examples`, named by code), JSON or, for a page, HTML.
 */
function errorResponse(status: number, errors: DocumentedError[], legacy: boolean): Record<string, unknown> {
  const schema = legacy ? '#/components/schemas/LegacyError' : '#/components/schemas/Error';
  const codes = [...new Set(errors.flatMap((error) => (error.code ? [error.code] : [])))];
  const html = errors.filter((error) => error.html);
  const json = errors.filter((error) => !error.html);
  const unavailableToo = json.some((error) => error === UNAVAILABLE_ERROR);
  const description = [
    STATUS_TEXT[status] ?? 'Error.',
    codes.length > 0 ? `Codes: ${codes.map((code) => `\`${code}\``).join(', ')}.` : '',
    html.length > 0 ? 'An HTML page, as the operation\'s own answer is.' : '',
    unavailableToo ? `Or: ${UNAVAILABLE_TEXT}` : '',
  ].filter(Boolean).join(' ');
  const content: Record<string, unknown> = {};
  if (json.length > 0) {
    const examples: Record<string, unknown> = {};
    for (const error of json) {
      if (error.example === undefined) continue;
      const base = error.code ?? ERROR_TYPE_OF_STATUS[status] ?? 'error';
      let name = base;
      for (let n = 2; name in examples; n++) name = `${base}_${n}`;
      examples[name] = { summary: error.example, value: errorBody(error as DocumentedError & { example: string }, legacy) };
    }
    content['application/json'] = { schema: { $ref: schema }, ...(Object.keys(examples).length > 0 ? { examples } : {}) };
  }
  if (html.length > 0) content['text/html'] = { schema: { type: 'string' }, example: html[0]!.example };
  return { description, ...(unavailableToo ? { headers: RETRY_AFTER_HEADER } : {}), content };
}

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

/** What a route's role means, said in its description when the description does not say it. */
const ROLE_TEXT = {
  admin: 'Needs the admin role or an API key (a member gets 403 `permission`).',
  owner: 'Needs the owner role: API keys and admins get 403 `permission`.',
};

/** The route's description, with the role it needs when the description does not say it. */
function describeOperation(route: RouteSpec): string {
  const own = route.description ?? '';
  return route.role && !/\brole\b/.test(own) ? `${own} ${ROLE_TEXT[route.role]}`.trim() : own;
}

/**
 * The OpenAPI 3.1 document of every route, built from the same schemas that validate requests
 * (every schema titled in api/schemas/ is a named component, referenced where it is used), with
 * each operation's own errors (api/openapi-error-examples.ts). `options` says what this
 * server answers that its config decides (the rate limit).
 */
export function buildOpenApiDocument(routes: RouteSpec[], serverUrl: string, options: ErrorDocumentOptions): Record<string, unknown> {
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
    const errors = operationErrors(route, options);
    const statuses = [...new Set(errors.map((error) => error.status))].sort((a, b) => a - b);
    for (const status of statuses) {
      const ofStatus = errors.filter((error) => error.status === status);
      // 503 `unavailable` alone: one declaration in components.responses.
      const onlyUnavailable = ofStatus.length === 1 && ofStatus[0] === UNAVAILABLE_ERROR;
      responses[String(status)] = onlyUnavailable
        ? { $ref: legacy ? '#/components/responses/LegacyUnavailable' : '#/components/responses/Unavailable' }
        : errorResponse(status, ofStatus, legacy);
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
        Unavailable: unavailableResponse(false),
        LegacyUnavailable: unavailableResponse(true),
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
