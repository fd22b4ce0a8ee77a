import type { Context } from 'koa';
import Router from '@koa/router';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { ApiError, invalidRequest } from '../shared/errors';
import { PG_INTEGER_MAX } from '../shared/pagination';
import { unstorableValueAt } from '../shared/validation/storable';
import { requireRole, type AuthContext } from '../shared/auth/roles';
import type { Credentials } from './authenticate';
import type { Logger } from '../shared/logger';
import type { RequestState } from './middleware/request-state';
import type { RouteError } from './route-errors';
import { HUNG_UP, hangUpSignal } from './hang-ups';
import { closestName, formatHint } from './schema-error-hints';
import { idempotencyKeyHeader, type IdempotencyService } from '../shared/idempotency/idempotency.service';

/**
 * Every HTTP route is declared once as a `RouteSpec`: its schemas validate requests, feed the
 * OpenAPI document, and (in tests) check responses. A handler receives validated input and
 * returns the response body.
 */

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

type StaticOr<S, Fallback> = S extends TSchema ? Static<S> : Fallback;

export interface HandlerInput<P, Q, B> {
  params: StaticOr<P, Record<string, never>>;
  query: StaticOr<Q, Record<string, never>>;
  body: StaticOr<B, undefined>;
  /** The org the request acts for (routes with `auth: 'api_key'`). */
  auth: AuthContext;
  requestId: string;
  logger: Logger;
  ctx: Context;
}

/**
 * What a long-poll route's handler receives, whichever way its request came: on node:http beside
 * Koa (api/long-polls.ts) or through Koa's router (a HEAD, a trailing slash). Plain data, with
 * no Koa context, so that one handler serves both.
 */
export interface LongPollInput<P, Q> {
  params: StaticOr<P, Record<string, never>>;
  query: StaticOr<Q, Record<string, never>>;
  /** The org the request acts for. */
  auth: AuthContext;
  requestId: string;
  /** Aborts when the client hangs up (closes its connection) before it is answered: a long poll then stops waiting (api/hang-ups.ts). */
  signal: AbortSignal;
}

/** What every route declares besides its handler. */
interface RouteDeclaration<P extends TObject | undefined, Q extends TObject | undefined, B extends TSchema | undefined, R extends TSchema> {
  method: Method;
  /** OpenAPI-style path: `/v1/agents/{agent_id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  auth: 'api_key' | 'none';
  /**
   * The least role this call needs (shared/auth/roles.ts): `admin` (API keys and admin or owner
   * sign-ins) or `owner`. Without it any member of the org may call it. Checked here, once.
   */
  role?: 'admin' | 'owner';
  params?: P;
  query?: Q;
  body?: B;
  /** Body size limit for this route, when larger than the default. */
  bodyLimitBytes?: number;
  /** 200 response schema, or a non-JSON content type the handler writes itself. */
  response: R | { contentType: string; description: string };
  /**
   * The errors the route's own work answers (its not-founds, conflicts, refusals), each with its
   * code and a message it really gives (api/route-errors.ts). Those every route of its kind
   * answers are added in the document from the route's shape (api/openapi.ts): 400 for malformed
   * input, 401 and 429 with an API key, 403 with a `role`, 409 `idempotency_conflict` when
   * `idempotent: true`, 413 when it reads a body, 500, and 503 `unavailable`. A bare status is
   * the older form, documented without a message of its own, until the route lists its errors.
   */
  errors: ReadonlyArray<RouteError | number>;
  /**
   * A create that takes an `Idempotency-Key` header (shown in the document, with its 409).
   * `true`: the first answer is kept per org, operation and key (shared/idempotency) and given
   * again to a retry; `'handler'`: the handler reads the header itself (a task's `request_id`).
   */
  idempotent?: true | 'handler';
}

/** A route served through Koa: its handler returns the body, or writes the response itself through `ctx`. */
export interface KoaRouteSpec<
  P extends TObject | undefined = TObject | undefined,
  Q extends TObject | undefined = TObject | undefined,
  B extends TSchema | undefined = TSchema | undefined,
  R extends TSchema = TSchema,
> extends RouteDeclaration<P, Q, B, R> {
  longPoll?: false;
  handler: (input: HandlerInput<P, Q, B>) => Promise<R extends TSchema ? Static<R> | void : void>;
}

/**
 * A long poll, held open by the thousands: its GETs are served on node:http beside Koa, which
 * keeps a third of the memory per waiting request (api/long-polls.ts). A GET with an API key,
 * without a body, that answers JSON; its handler returns the body.
 */
export interface LongPollRouteSpec<P extends TObject | undefined = TObject | undefined, Q extends TObject | undefined = TObject | undefined, R extends TSchema = TSchema>
  extends RouteDeclaration<P, Q, undefined, R> {
  longPoll: true;
  handler: (input: LongPollInput<P, Q>) => Promise<Static<R>>;
}

export type RouteSpec<
  P extends TObject | undefined = TObject | undefined,
  Q extends TObject | undefined = TObject | undefined,
  B extends TSchema | undefined = TSchema | undefined,
  R extends TSchema = TSchema,
> = KoaRouteSpec<P, Q, B, R> | LongPollRouteSpec<P, Q, R>;

/** Identity with inference: `defineRoute({...})` checks the handler against the schemas. */
export function defineRoute<
  P extends TObject | undefined = undefined,
  Q extends TObject | undefined = undefined,
  B extends TSchema | undefined = undefined,
  R extends TSchema = TSchema,
>(spec: RouteSpec<P, Q, B, R>): RouteSpec {
  for (const schema of [spec.params, spec.query, spec.body]) if (schema) boundIntegers(schema);
  return spec as unknown as RouteSpec;
}

/** PostgreSQL's `integer`: every integer a request carries ends up in one, or compared with one. */
const PG_INTEGER_MIN = -2_147_483_648;

/**
 * Gives every integer of a request schema that has no bound of its own PostgreSQL's `integer`
 * range, in place (so the OpenAPI document shows it): an `after=2147483648` must be a 400
 * naming the field, not a 500 from the database ("value out of range for type integer").
 */
function boundIntegers(schema: unknown): void {
  const pending: unknown[] = [schema];
  const seen = new Set<unknown>();
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null || seen.has(node)) continue;
    seen.add(node);
    const record = node as Record<string, unknown>;
    if (record.type === 'integer') {
      if (typeof record.maximum !== 'number' || record.maximum > PG_INTEGER_MAX) record.maximum = PG_INTEGER_MAX;
      if (typeof record.minimum !== 'number' || record.minimum < PG_INTEGER_MIN) record.minimum = PG_INTEGER_MIN;
    }
    for (const value of Object.values(record)) if (typeof value === 'object') pending.push(value);
  }
}

// strictNumbers: NaN and Infinity (a query's `after=Infinity`, a body's 1e400) are not numbers here.
const bodyAjv = addFormats(new Ajv({ allErrors: false, strict: false, coerceTypes: false, verbose: true, strictNumbers: true }));
const queryAjv = addFormats(new Ajv({ allErrors: false, strict: false, coerceTypes: true, useDefaults: true, verbose: true, strictNumbers: true }));
const responseAjv = addFormats(new Ajv({ allErrors: true, strict: false }));

function fieldName(where: string, error: ErrorObject): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  const joined = path.reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '');
  if (where === 'body') return joined || 'body';
  return joined ? `${where} parameter ${joined}` : `${where} parameters`;
}

/**
 * One clear sentence from the first schema error, naming the field and what it expects. `all`
 * (the validator's whole list) lets a union of literals name every allowed value, not only the
 * first branch's.
 */
export function describeSchemaError(where: 'body' | 'query' | 'path', error: ErrorObject, all: readonly ErrorObject[] = [error]): string {
  const field = fieldName(where, error);
  const params = error.params as Record<string, unknown>;
  if (error.propertyName !== undefined && error.keyword !== 'propertyNames') {
    // An error about a key itself (metadata keys), not about its value.
    const inner = describeSchemaError('body', { ...error, propertyName: undefined, instancePath: '' });
    return `${field} key "${error.propertyName}" ${inner.replace(/^body /, '')}`;
  }
  const literals = unionLiterals(error, all);
  if (literals) return `${field} must be ${literals}`;
  if (error.keyword === 'required') {
    // A misspelt field is why a required one is missing: name it rather than the one it stands for.
    const unknown = unknownFieldOf(error);
    if (unknown) return unknownFieldMessage(field, unknown, error.parentSchema);
  }
  switch (error.keyword) {
    case 'required': {
      const parent = field === 'body' || field.endsWith('parameters') ? '' : `${field}.`;
      const name = `${parent}${String(params.missingProperty)}`;
      return where === 'body' ? `${name} is required` : `${where} parameter ${name} is required`;
    }
    case 'additionalProperties':
      return unknownFieldMessage(field, String(params.additionalProperty), error.parentSchema);
    case 'type':
      return `${field} must be ${params.type === 'integer' ? 'an integer' : `of type ${String(params.type)}`}`;
    case 'enum':
      return `${field} must be one of: ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `${field} must be ${JSON.stringify(params.allowedValue)}`;
    case 'propertyNames':
      return `${field} has a malformed key "${String(params.propertyName)}"`;
    case 'maxProperties':
      return `${field} has more than ${String(params.limit)} keys`;
    case 'maxLength':
      return `${field} must be at most ${String(params.limit)} characters`;
    case 'minLength':
      return params.limit === 1 ? `${field} must not be empty` : `${field} must be at least ${String(params.limit)} characters`;
    case 'maxItems':
      return `${field} must have at most ${String(params.limit)} items`;
    case 'minItems':
      return `${field} must have at least ${String(params.limit)} items`;
    case 'uniqueItems':
      return `${field} must not repeat items`;
    case 'maximum':
      return `${field} must be at most ${String(params.limit)}`;
    case 'minimum':
      return `${field} must be at least ${String(params.limit)}`;
    case 'pattern':
    case 'format': {
      // Never the schema's description: it is written for the reference, not as an expected format.
      const hint = formatHint(error.parentSchema);
      return hint ? `${field} must be ${hint}` : `${field} is malformed`;
    }
    default:
      return `${field} ${error.message ?? 'is invalid'}`;
  }
}

/** `"approve" or "deny"` when the failing value sits under a union of literals (TypeBox's `Union([Literal…])`), else null. */
function unionLiterals(first: ErrorObject, all: readonly ErrorObject[]): string | null {
  const union = all.find((e) => e.keyword === 'anyOf' && e.instancePath === first.instancePath);
  if (!union || !Array.isArray(union.schema)) return null;
  const values: unknown[] = [];
  for (const branch of union.schema as Array<Record<string, unknown>>) {
    if ('const' in branch) values.push(branch.const);
    else if (Array.isArray(branch.enum)) values.push(...branch.enum);
    else if (branch.type === 'null') values.push(null);
    else return null;
  }
  const words = values.map((v) => JSON.stringify(v));
  return words.length === 1 ? words[0]! : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;
}

/** The first key of the object a `required` error is about that its schema does not allow, or null. */
function unknownFieldOf(error: ErrorObject): string | null {
  const schema = error.parentSchema as { properties?: Record<string, unknown>; additionalProperties?: unknown } | undefined;
  if (!schema?.properties || schema.additionalProperties !== false) return null;
  if (typeof error.data !== 'object' || error.data === null) return null;
  return Object.keys(error.data).find((key) => !(key in schema.properties!)) ?? null;
}

/** `body has an unknown field "promt"; did you mean "prompt"?` */
function unknownFieldMessage(field: string, unknown: string, parentSchema: unknown): string {
  const known = Object.keys((parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {});
  const suggestion = closestName(unknown, known);
  return `${field} has an unknown field "${unknown}"${suggestion ? `; did you mean "${suggestion}"?` : ''}`;
}

function compile(ajv: Ajv, schema: TSchema | undefined): ValidateFunction | null {
  return schema ? ajv.compile(schema) : null;
}

function check(validate: ValidateFunction | null, value: unknown, where: 'body' | 'query' | 'path'): void {
  if (!validate) return;
  if (!validate(value)) throw invalidRequest(describeSchemaError(where, validate.errors![0]!, validate.errors!));
  const at = unstorableValueAt(value);
  if (at === null) return;
  if (at.endsWith('#number')) throw invalidRequest(`${fieldName(where, { instancePath: at.slice(0, -'#number'.length) } as ErrorObject)} must be a finite number`);
  if (at.endsWith('#key')) {
    const field = fieldName(where, { instancePath: at.slice(0, at.lastIndexOf('/')) } as ErrorObject);
    throw invalidRequest(`${field} has a key with a NUL character (\\u0000) or an unpaired surrogate`);
  }
  throw invalidRequest(`${fieldName(where, { instancePath: at } as ErrorObject)} must not contain a NUL character (\\u0000) or an unpaired surrogate`);
}

/** `prompt` → `promt`: a name with its last-but-one letter dropped, as a hand types it. */
function misspelt(name: string): string {
  return name.length > 2 ? name.slice(0, -2) + name.slice(-1) : `${name}${name}`;
}

/**
 * The message `route` answers a malformed request with, made by its own validators (the
 * document's 400 example, api/openapi.ts): a misspelt body field, else a misspelt query
 * parameter, else an integer path parameter written `01`, else a path parameter holding a NUL;
 * else, for a route that reads a body, a body that is not JSON. Null when none applies.
 */
export function invalidInputExample(route: RouteSpec): string | null {
  const refusal = (validate: () => void): string | null => {
    try {
      validate();
      return null;
    } catch (error) {
      return error instanceof ApiError ? error.message : null;
    }
  };
  const firstName = (schema: TSchema | undefined) => Object.keys((schema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {})[0];
  const candidates: Array<() => string | null> = [
    () => {
      const name = firstName(route.body);
      return name === undefined ? null : refusal(() => check(compile(bodyAjv, route.body), { [misspelt(name)]: 'x' }, 'body'));
    },
    () => {
      const name = firstName(route.query);
      return name === undefined ? null : refusal(() => check(compile(queryAjv, route.query), { [misspelt(name)]: 'x' }, 'query'));
    },
    () => {
      const name = integerProperties(route.params)[0];
      return name === undefined ? null : refusal(() => checkIntegerSpelling([name], { [name]: '01' }, 'path'));
    },
    () => {
      const name = firstName(route.params);
      if (name === undefined) return null;
      const schema = (route.params!.properties as Record<string, TSchema>)[name]!;
      return refusal(() => check(compile(queryAjv, Type.Object({ [name]: schema })), { [name]: 'x\u0000' }, 'path'));
    },
    () => (route.method === 'post' || route.method === 'put' || route.method === 'patch' ? 'Content-Type must be application/json' : null),
  ];
  for (const candidate of candidates) {
    const message = candidate();
    if (message !== null) return message;
  }
  return null;
}

/** What a Koa request offers to prove who it is (api/authenticate.ts). */
export function credentialsOf(ctx: Context): Credentials {
  return {
    authorization: ctx.get('authorization') || undefined,
    cookie: ctx.get('cookie') || undefined,
    csrfToken: ctx.get('x-csrf-token') || undefined,
    method: ctx.method,
  };
}

export interface MountOptions {
  authenticate: (credentials: Credentials) => AuthContext | Promise<AuthContext>;
  /** Keeps the answers of `idempotent: true` routes. */
  idempotency: Pick<IdempotencyService, 'run'>;
  /** Check every JSON response against its schema (tests): a mismatch is a 500. */
  validateResponses: boolean;
}

/** Koa path from an OpenAPI path: `{agent_id}` → `:agent_id`. */
export function koaPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

/** What a route checks of every request and response, compiled once. */
export interface CompiledRoute {
  route: RouteSpec;
  /** Validated path parameters and query (defaults filled in, types coerced); throws the 400. */
  input(params: Record<string, string>, query: Record<string, unknown>): { params: Record<string, string>; query: Record<string, unknown> };
  /** Throws when checking responses (tests) and `result` does not match the route's schema: a 500. */
  checkResponse(result: unknown): void;
}

/** The one spelling of an integer in a path or query: decimal digits, no sign but `-`, no leading zero, no point (`01`, `+1`, `1.0`, `0x10` are not). */
const CANONICAL_INTEGER = /^-?(0|[1-9][0-9]*)$/;

/** The names of `schema`'s properties that are integers (or integers or null). */
function integerProperties(schema: TObject | undefined): string[] {
  const isInteger = (node: unknown): boolean => {
    const record = node as { type?: unknown; anyOf?: unknown[] };
    return record.type === 'integer' || (Array.isArray(record.anyOf) && record.anyOf.some(isInteger));
  };
  return Object.entries(schema?.properties ?? {}).filter(([, property]) => isInteger(property)).map(([name]) => name);
}

/**
 * Refuses an integer of a path or query written any other way than its one spelling: the
 * validator coerces text with `Number()`, which would read `0x10` as 16 and `1.0` as 1.
 */
function checkIntegerSpelling(names: readonly string[], values: Record<string, unknown>, where: 'path' | 'query'): void {
  for (const name of names) {
    const value = values[name];
    if (typeof value === 'string' && !CANONICAL_INTEGER.test(value)) throw invalidRequest(`${where} parameter ${name} must be an integer`);
  }
}

export function compileRoute(route: RouteSpec, validateResponses: boolean): CompiledRoute {
  const validateParams = compile(queryAjv, route.params);
  const validateQuery = compile(queryAjv, route.query);
  const integerParams = integerProperties(route.params);
  const integerQuery = integerProperties(route.query);
  const validateResponse = validateResponses && !('contentType' in route.response) ? responseAjv.compile(route.response) : null;
  return {
    route,
    input(params, query) {
      checkIntegerSpelling(integerParams, params, 'path');
      check(validateParams, params, 'path');
      checkIntegerSpelling(integerQuery, query, 'query');
      check(validateQuery, query, 'query');
      return { params, query };
    },
    checkResponse(result) {
      if (validateResponse && !validateResponse(result)) {
        throw new Error(`response of ${route.operationId} does not match its schema: ${responseAjv.errorsText(validateResponse.errors)}`);
      }
    },
  };
}

/** Registers `routes` on `router`, each wrapped with auth, validation and serialization. */
export function mountRoutes(router: Router, routes: RouteSpec[], options: MountOptions): void {
  for (const route of routes) {
    const compiled = compileRoute(route, options.validateResponses);
    const validateBody = compile(bodyAjv, route.body);

    router[route.method](route.operationId, koaPath(route.path), async (ctx: Context) => {
      const state = ctx.state as RequestState;
      if (route.auth === 'api_key' && !state.auth) {
        state.auth = await options.authenticate(credentialsOf(ctx));
      }
      if (route.role) requireRole(state.auth!, route.role);
      // A route without a query schema ignores the query: it is not even parsed.
      const { params, query } = compiled.input(route.params ? { ...(ctx.params as Record<string, string>) } : {}, route.query ? { ...ctx.query } : {});
      let body: unknown = undefined;
      if (route.body) {
        body = (ctx.request as unknown as { body?: unknown }).body;
        if (body === undefined) throw invalidRequest('Request body is required (JSON)');
        check(validateBody, body, 'body');
      }
      let result: unknown;
      if (route.longPoll) {
        // The same input as beside Koa (api/long-polls.ts): a HEAD or another spelling of the path comes this way.
        const signal = hangUpSignal(ctx.res);
        result = await route.handler({ params, query, auth: state.auth!, requestId: state.requestId, signal } as LongPollInput<TObject, TObject>).catch((caught: unknown) => {
          // Nobody is left to answer: the access log says so, and nothing is written.
          if (!signal.aborted) throw caught;
          ctx.status = HUNG_UP;
          return undefined;
        });
      } else {
        const run = () => route.handler({
          params,
          query,
          body,
          auth: state.auth!,
          requestId: state.requestId,
          get logger() {
            return state.logger;
          },
          ctx,
        } as HandlerInput<TObject, TObject, TSchema>);
        const key = route.idempotent === true ? idempotencyKeyHeader(ctx.get('idempotency-key') || undefined) : undefined;
        if (key === undefined) result = await run();
        else {
          const answer = await options.idempotency.run({ orgId: state.auth!.orgId, operation: route.operationId, key, request: { params, body } }, run);
          if (answer.replayed) ctx.set('Idempotent-Replayed', 'true');
          result = answer.body;
        }
      }
      // A handler that returns nothing wrote the response itself (a PNG, a 503 with its own body).
      if ('contentType' in route.response || result === undefined) return;
      compiled.checkResponse(result);
      ctx.status = 200;
      ctx.body = result;
    });
  }
}

type RouterMiddleware = ReturnType<Router['routes']>;

/** The first segment of a path, or its first two when it starts with /v1: `v1/tasks`, `healthz`. */
function groupOf(path: string): string {
  const second = path.indexOf('/', 1);
  const first = second < 0 ? path.slice(1) : path.slice(1, second);
  if (first !== 'v1' || second < 0) return first;
  const third = path.indexOf('/', second + 1);
  return third < 0 ? path.slice(1) : path.slice(1, third);
}

/**
 * The routes as Koa middleware: one @koa/router per group of routes sharing their first path
 * segment (`/v1/tasks/...`, `/healthz`), picked by the request's path. @koa/router tests a
 * request against every route it holds, one regular expression (and one `debug` call) each;
 * with all fifty routes in one router that was a tenth of the CPU of a `GET /v1/me`
 * (docs/benchmarks.md, http). Matching within a group is @koa/router's as before: letters in any
 * case, an optional trailing slash.
 */
export function routedMiddleware(routes: RouteSpec[], options: MountOptions): { middleware: RouterMiddleware; routers: Router[] } {
  const groups = new Map<string, RouteSpec[]>();
  for (const route of routes) {
    const group = groupOf(route.path);
    if (group.includes('{')) throw new Error(`${route.operationId}: a route's first path segment (after /v1) must be literal; routes are grouped by it`);
    let members = groups.get(group);
    if (!members) groups.set(group, (members = []));
    members.push(route);
  }
  const routers = new Map<string, Router>();
  for (const [group, members] of groups) {
    const router = new Router();
    mountRoutes(router, members, options);
    routers.set(group, router);
  }
  const dispatch = new Map<string, RouterMiddleware>([...routers].map(([group, router]) => [group, router.routes()]));
  return {
    routers: [...routers.values()],
    middleware: (ctx, next) => {
      const routed = dispatch.get(groupOf(ctx.path.toLowerCase()));
      return routed ? routed(ctx, next) : next();
    },
  };
}

export { ApiError };
