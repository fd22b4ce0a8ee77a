import { randomUUID } from 'node:crypto';
import { HttpClient, type HttpOptions, type HttpRequest } from './http.js';
import { TaskFollow, type FollowOptions } from './follow.js';
import { everyItem } from './pages.js';
import type {
  AuditLogEntry,
  CallOptions,
  Method,
  OperationAt,
  PathsWith,
  RequestOptions,
  ResponseOf,
  paths,
  Session,
  Task,
} from './types.js';

export type DeskhandOptions = HttpOptions;

/** The JSON body an operation takes. */
type BodyOf<P extends keyof paths, M extends Method> = OperationAt<P, M> extends { requestBody?: { content: { 'application/json': infer T } } } ? T : never;
/** The query an operation takes. */
type QueryOf<P extends keyof paths, M extends Method> = OperationAt<P, M> extends { parameters: { query?: infer T } } ? Exclude<T, undefined> : never;
/** What an operation answers. */
type Answer<P extends keyof paths, M extends Method> = Promise<ResponseOf<OperationAt<P, M>>>;

/**
 * The Deskhand API client.
 *
 * ```ts
 * const deskhand = new Deskhand({ apiKey: process.env.DESKHAND_API_KEY!, baseUrl: 'https://deskhand.example.com' });
 * const session = await deskhand.sessions.create();
 * ```
 *
 * Every method resolves with the service's object (typed from its OpenAPI document) or throws a
 * {@link DeskhandError} subclass (an HTTP error) or a {@link DeskhandConnectionError}. 429, 500
 * and 503 are retried with backoff (honouring `Retry-After`), connection failures too when the
 * request is safe to repeat. POSTs send an `Idempotency-Key`, the same on each retry, so a
 * retry never creates twice.
 */
export class Deskhand {
  private readonly http: HttpClient;

  constructor(options: DeskhandOptions) {
    this.http = new HttpClient(options);
  }

  /**
   * Any operation of the API, typed from its path and method:
   * `deskhand.request('get', '/v1/tasks/{task_id}', { path: { task_id } })`. POSTs get an
   * `Idempotency-Key` (yours, or a new one; `idempotencyKey: null` for none), so their retries are safe.
   */
  request<M extends Method, P extends PathsWith<M>>(
    method: M,
    path: P,
    // Optional when the operation needs no path parameters and no body.
    ...options: {} extends RequestOptions<OperationAt<P, M>> ? [options?: RequestOptions<OperationAt<P, M>>] : [options: RequestOptions<OperationAt<P, M>>]
  ): Answer<P, M>;
  async request(method: Method, path: string, given: object = {}): Promise<unknown> {
    const options = given as CallOptions & { path?: Record<string, string | number>; query?: HttpRequest['query']; body?: unknown };
    const filled = path.replace(/\{([^}]+)\}/g, (_match, name: string) => {
      const value = options.path?.[name];
      if (value === undefined || value === '') throw new TypeError(`path parameter ${name} is missing`);
      return encodeURIComponent(String(value));
    });
    const post = method === 'post';
    return (
      await this.http.send({
        method: method.toUpperCase() as HttpRequest['method'],
        path: filled,
        query: options.query,
        body: options.body,
        idempotencyKey: post && options.idempotencyKey !== null ? (options.idempotencyKey ?? randomUUID()) : undefined,
        signal: options.signal,
        timeoutMs: options.timeoutMs,
      })
    ).data;
  }

  /** The org and API key this client acts as: the cheapest check that the key works. */
  me(options: CallOptions = {}): Answer<'/v1/me', 'get'> {
    return this.request('get', '/v1/me', options);
  }

  readonly agents = {
    /** Every agent of the org, in one page. */
    list: (options: CallOptions = {}): Answer<'/v1/agents', 'get'> => this.request('get', '/v1/agents', options),
    get: (agentId: string, options: CallOptions = {}): Answer<'/v1/agents/{agent_id}', 'get'> =>
      this.request('get', '/v1/agents/{agent_id}', { ...options, path: { agent_id: agentId } }),
    create: (body: BodyOf<'/v1/agents', 'post'>, options: CallOptions = {}): Answer<'/v1/agents', 'post'> =>
      this.request('post', '/v1/agents', { ...options, body }),
    update: (agentId: string, body: BodyOf<'/v1/agents/{agent_id}', 'patch'>, options: CallOptions = {}): Answer<'/v1/agents/{agent_id}', 'patch'> =>
      this.request('patch', '/v1/agents/{agent_id}', { ...options, path: { agent_id: agentId }, body }),
    /** The agent's draft (the published version with `has_draft: false` when none). */
    getDraft: (agentId: string, options: CallOptions = {}): Answer<'/v1/agents/{agent_id}/draft', 'get'> =>
      this.request('get', '/v1/agents/{agent_id}/draft', { ...options, path: { agent_id: agentId } }),
    saveDraft: (agentId: string, body: BodyOf<'/v1/agents/{agent_id}/draft', 'patch'>, options: CallOptions = {}): Answer<'/v1/agents/{agent_id}/draft', 'patch'> =>
      this.request('patch', '/v1/agents/{agent_id}/draft', { ...options, path: { agent_id: agentId }, body }),
    publishDraft: (agentId: string, options: CallOptions = {}): Answer<'/v1/agents/{agent_id}/draft/publish', 'post'> =>
      this.request('post', '/v1/agents/{agent_id}/draft/publish', { ...options, path: { agent_id: agentId } }),
  };

  readonly sessions = {
    /** A new session: its pairing code, invite link and one-time session token. */
    create: (body: BodyOf<'/v1/sessions', 'post'> = {}, options: CallOptions = {}): Answer<'/v1/sessions', 'post'> =>
      this.request('post', '/v1/sessions', { ...options, body }),
    get: (sessionId: string, options: CallOptions = {}): Answer<'/v1/sessions/{session_id}', 'get'> =>
      this.request('get', '/v1/sessions/{session_id}', { ...options, path: { session_id: sessionId } }),
    /** One page, newest first; pass `next_cursor` as `cursor` for the next. */
    list: (query: QueryOf<'/v1/sessions', 'get'> = {}, options: CallOptions = {}): Answer<'/v1/sessions', 'get'> =>
      this.request('get', '/v1/sessions', { ...options, query }),
    /** Every session matching `query`, newest first, reading page after page as you iterate. */
    listAll: (query: QueryOf<'/v1/sessions', 'get'> = {}, options: CallOptions = {}): AsyncGenerator<Session, void, undefined> =>
      everyItem((page) => this.sessions.list(page, options), query),
    /** Ends the session: its code and token stop working. */
    expire: (sessionId: string, options: CallOptions = {}): Answer<'/v1/sessions/{session_id}/expire', 'post'> =>
      this.request('post', '/v1/sessions/{session_id}/expire', { ...options, path: { session_id: sessionId } }),
    /** Lets go of the computer; the session stays valid. */
    disconnect: (sessionId: string, options: CallOptions = {}): Answer<'/v1/sessions/{session_id}/disconnect', 'post'> =>
      this.request('post', '/v1/sessions/{session_id}/disconnect', { ...options, path: { session_id: sessionId } }),
    /**
     * Starts a task on the session's computer. Its `Idempotency-Key` is `body.request_id` when
     * given (the service treats both as one), else `options.idempotencyKey`, else a new one.
     */
    startTask: (sessionId: string, body: BodyOf<'/v1/sessions/{session_id}/tasks', 'post'>, options: CallOptions = {}): Answer<'/v1/sessions/{session_id}/tasks', 'post'> =>
      this.request('post', '/v1/sessions/{session_id}/tasks', {
        ...options,
        idempotencyKey: body.request_id ?? options.idempotencyKey ?? randomUUID(),
        path: { session_id: sessionId },
        body,
      }),
  };

  readonly tasks = {
    /** `query.include: 'trace'` adds diagnostics safe to share with support. */
    get: (taskId: string, query: QueryOf<'/v1/tasks/{task_id}', 'get'> = {}, options: CallOptions = {}): Answer<'/v1/tasks/{task_id}', 'get'> =>
      this.request('get', '/v1/tasks/{task_id}', { ...options, path: { task_id: taskId }, query }),
    /** One page, newest first; filter by `session_id`, `agent_id`, `status`. */
    list: (query: QueryOf<'/v1/tasks', 'get'> = {}, options: CallOptions = {}): Answer<'/v1/tasks', 'get'> =>
      this.request('get', '/v1/tasks', { ...options, query }),
    /** Every task matching `query`, newest first, reading page after page as you iterate. */
    listAll: (query: QueryOf<'/v1/tasks', 'get'> = {}, options: CallOptions = {}): AsyncGenerator<Task, void, undefined> =>
      everyItem((page) => this.tasks.list(page, options), query),
    /**
     * Answers `task.pending`: `{ question_id, answer }` or `{ approval_id, decision, note? }`.
     * The first answer wins: a later one is a ConflictError with `code: 'already_answered'` and
     * `answered_by`. Not retried after a lost connection: it may have been taken, and a second
     * try would only meet `already_answered`.
     */
    respond: (taskId: string, body: BodyOf<'/v1/tasks/{task_id}/respond', 'post'>, options: Omit<CallOptions, 'idempotencyKey'> = {}): Answer<'/v1/tasks/{task_id}/respond', 'post'> =>
      this.request('post', '/v1/tasks/{task_id}/respond', { ...options, idempotencyKey: null, path: { task_id: taskId }, body }),
    /** Stops the task; an ended task is returned as it is (stopping twice is harmless). */
    stop: (taskId: string, options: CallOptions = {}): Answer<'/v1/tasks/{task_id}/stop', 'post'> =>
      this.request('post', '/v1/tasks/{task_id}/stop', { ...options, path: { task_id: taskId } }),
    /** One long poll: the events after `after`, waiting up to `wait_ms` (<= 55000) for new ones. */
    events: (taskId: string, query: QueryOf<'/v1/tasks/{task_id}/events', 'get'> = {}, options: CallOptions = {}): Answer<'/v1/tasks/{task_id}/events', 'get'> =>
      this.request('get', '/v1/tasks/{task_id}/events', {
        // The long poll holds the request open for wait_ms on top of the usual time to answer.
        timeoutMs: (query.wait_ms ?? 0) + 30_000,
        ...options,
        path: { task_id: taskId },
        query,
      }),
    /**
     * Follows the task: `for await (const event of deskhand.tasks.follow(id)) { ... }` yields
     * each event once, in order, and ends after its final event. It answers nothing itself; the
     * returned object's `task` is the latest task read (the ended task after the loop).
     */
    follow: (taskId: string, options: FollowOptions = {}): TaskFollow =>
      new TaskFollow(taskId, (after, waitMs, signal) => this.tasks.events(taskId, { after, wait_ms: waitMs }, { signal }), options),
    /** A recorded screen as PNG bytes; `seq` from 1 to `task.recording.frames`. */
    recordingFrame: (taskId: string, seq: number, options: CallOptions = {}): Promise<Uint8Array> =>
      this.request('get', '/v1/tasks/{task_id}/recording/{seq}', { ...options, path: { task_id: taskId, seq } }),
  };

  /** The org's webhook endpoint (to verify what it receives, see `webhooks.verify`). */
  readonly webhook = {
    /** The endpoint's URL, event filter and whether it has a secret (never the secret). */
    get: (options: CallOptions = {}): Answer<'/v1/webhook', 'get'> => this.request('get', '/v1/webhook', options),
    /** Changes only the fields sent; `secret` comes back when first made or with `rotate_secret: true`. */
    update: (body: BodyOf<'/v1/webhook', 'put'>, options: CallOptions = {}): Answer<'/v1/webhook', 'put'> =>
      this.request('put', '/v1/webhook', { ...options, body }),
    /** Sends a test event to the endpoint. */
    sendTest: (options: CallOptions = {}): Answer<'/v1/webhook/test', 'post'> =>
      this.request('post', '/v1/webhook/test', options),
    listDeliveries: (query: QueryOf<'/v1/webhook/deliveries', 'get'> = {}, options: CallOptions = {}): Answer<'/v1/webhook/deliveries', 'get'> =>
      this.request('get', '/v1/webhook/deliveries', { ...options, query }),
  };

  readonly auditLog = {
    /** One page of the org's audit log, newest first; filter by `object_type`, `object_id`, `action`. */
    list: (query: QueryOf<'/v1/audit_log', 'get'> = {}, options: CallOptions = {}): Answer<'/v1/audit_log', 'get'> =>
      this.request('get', '/v1/audit_log', { ...options, query }),
    /** Every entry matching `query`, newest first, reading page after page as you iterate. */
    listAll: (query: QueryOf<'/v1/audit_log', 'get'> = {}, options: CallOptions = {}): AsyncGenerator<AuditLogEntry, void, undefined> =>
      everyItem((page) => this.auditLog.list(page, options), query),
  };
}
