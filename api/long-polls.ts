import type http from 'node:http';
import type { TObject } from '@sinclair/typebox';
import type { AuthContext } from '../shared/auth/roles';
import type { Credentials } from './authenticate';
import type { Logger } from '../shared/logger';
import { RequestState, requestIdFrom } from './middleware/request-state';
import { errorResponse } from './middleware/errors';
import { clientAddress, type AddressLimiter, type RateLimitHeaders } from './middleware/rate-limit';
import { HUNG_UP, hangUpSignal, hungUp } from './hang-ups';
import { compileRoute, type CompiledRoute, type LongPollInput, type LongPollRouteSpec, type RouteSpec } from './routing';

/** What the long-poll routes share with Koa's chain. */
export interface LongPollDeps {
  logger: Logger;
  limiter: AddressLimiter;
  authenticate(credentials: Credentials): AuthContext | Promise<AuthContext>;
  /** Koa's `proxy`: the client's address is the first `X-Forwarded-For` entry. */
  trustProxy: boolean;
  validateResponses: boolean;
}

interface Target {
  pattern: RegExp;
  names: string[];
  route: LongPollRouteSpec;
  compiled: CompiledRoute;
}

/**
 * Long-poll routes (`longPoll: true`; today GET /v1/tasks/{task_id}/events) served on node:http
 * beside Koa, through the same steps as Koa's chain for /v1: the request id, the rate limit, the
 * API key, the route's validation, its handler, the spec's error shape and one access-log line,
 * each done by the same function Koa's middleware calls.
 *
 * Why: a long poll waits up to 55 s, thousands wait at once, and everything a waiting request
 * keeps is copied by V8's scavenger, whose pauses set the wake-up latency of every follower.
 * Through Koa a waiting poll kept 9.2 KB: Koa's context and its `on-finished` listener (which
 * live until the response ends) and a suspended frame per awaiting middleware. Here it keeps
 * 4.6 KB, against 2.4 KB for Node's own request and response (docs/benchmarks.md, follow).
 * A poll whose client hangs up stops waiting at once (its input's `signal` aborts when the
 * connection closes: api/hang-ups.ts) and is logged with status 499. The handler's input
 * (`LongPollInput`) is plain data with no Koa context: the same handler serves the path when it
 * comes through Koa.
 *
 * Only a GET of a long-poll route's exact path is taken here; anything else (HEAD, a trailing
 * slash, other letter case) goes on to Koa, where the same route is mounted and answers alike.
 */
export function longPollListener(routes: RouteSpec[], deps: LongPollDeps, koa: http.RequestListener): http.RequestListener {
  const targets: Target[] = routes
    .filter((route): route is LongPollRouteSpec => route.longPoll === true)
    .map((route) => {
      if (route.method !== 'get' || route.auth !== 'api_key' || 'contentType' in route.response) {
        throw new Error(`long-poll route ${route.operationId} must be a GET with an API key that returns JSON`);
      }
      const names: string[] = [];
      const source = route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^}]+)\}/g, (_match, name: string) => {
        names.push(name);
        return '([^/]+)';
      });
      return { pattern: new RegExp(`^${source}$`), names, route, compiled: compileRoute(route, deps.validateResponses) };
    });

  return (req, res) => {
    if (req.method !== 'GET' || targets.length === 0) return koa(req, res);
    const url = req.url ?? '';
    const mark = url.indexOf('?');
    const path = mark < 0 ? url : url.slice(0, mark);
    for (const target of targets) {
      const found = target.pattern.exec(path);
      if (found) return serve(target, found, path, mark < 0 ? '' : url.slice(mark + 1), req, res);
    }
    return koa(req, res);
  };

  /**
   * One request, chained rather than awaited: a waiting poll keeps no suspended frame of ours,
   * and its response headers wait in one small object rather than in Node's header lists.
   */
  function serve(target: Target, found: RegExpExecArray, path: string, search: string, req: http.IncomingMessage, res: http.ServerResponse): void {
    const started = performance.now();
    const state = new RequestState(deps.logger, requestIdFrom(req.headers['x-request-id'] as string | undefined));
    const headers: Record<string, string> = { 'X-Request-Id': state.requestId };
    /** Writes the answer and the access-log line; status 499 (the client hung up) only logs. */
    const answer = (status: number, body?: unknown) => {
      if (status !== HUNG_UP) {
        const text = toJson(body);
        headers['Content-Type'] = 'application/json; charset=utf-8';
        headers['Content-Length'] = String(Buffer.byteLength(text));
        res.writeHead(status, headers);
        res.end(text);
      }
      if (deps.logger.isLevelEnabled('info')) state.logger.info({ method: 'GET', path, status, ms: Math.round((performance.now() - started) * 10) / 10 }, 'request');
    };
    const fail = (caught: unknown) => {
      if (hungUp(res)) return answer(HUNG_UP);
      try {
        const error = errorResponse(caught, path, state);
        Object.assign(headers, error.headers);
        answer(error.status, error.body);
      } catch (unwritable) {
        // Nothing above this catches (Koa would have): a throw here must not take the process down.
        state.logger.error({ err: unwritable }, 'could not write the error');
        res.destroy();
      }
    };
    const succeed = (result: unknown) => {
      if (hungUp(res)) return answer(HUNG_UP);
      try {
        target.compiled.checkResponse(result);
        answer(200, result);
      } catch (caught) {
        if (!res.headersSent) fail(caught);
      }
    };
    const call = (auth: AuthContext) => {
      const params: Record<string, string> = {};
      for (let n = 0; n < target.names.length; n++) params[target.names[n]!] = decode(found[n + 1]!);
      const input = target.compiled.input(params, queryObject(search));
      return target.route.handler({ params: input.params, query: input.query, auth, requestId: state.requestId, signal: hangUpSignal(res) } as LongPollInput<TObject, TObject>);
    };
    const authenticateThenCall = (limitHeaders: RateLimitHeaders) => {
      Object.assign(headers, limitHeaders);
      const auth = deps.authenticate({
        authorization: req.headers.authorization || undefined,
        cookie: req.headers.cookie,
        csrfToken: undefined,
        method: 'GET',
      });
      return auth instanceof Promise ? auth.then(call) : call(auth);
    };
    try {
      const taken = deps.limiter.take(clientAddress(req, deps.trustProxy), state);
      (taken instanceof Promise ? taken.then(authenticateThenCall) : authenticateThenCall(taken)).then(succeed, fail);
    } catch (caught) {
      fail(caught);
    }
  }
}

/**
 * JSON of a response body, made once per body object: the followers one note wakes on a task
 * share one answer object (FollowedTasks), and so its JSON.
 */
const made = new WeakMap<object, string>();
function toJson(body: unknown): string {
  if (typeof body !== 'object' || body === null) return JSON.stringify(body);
  let text = made.get(body);
  if (text === undefined) made.set(body, (text = JSON.stringify(body)));
  return text;
}

/** A path segment as @koa/router gives it: decoded, or as sent when it is not valid percent-encoding. */
function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The query as Koa's `ctx.query` gives it: a repeated key's values as an array. */
function queryObject(search: string): Record<string, unknown> {
  const parsed = new URLSearchParams(search);
  const query: Record<string, unknown> = Object.create(null);
  for (const key of parsed.keys()) {
    const values = parsed.getAll(key);
    query[key] = values.length <= 1 ? values[0] : values;
  }
  return query;
}
