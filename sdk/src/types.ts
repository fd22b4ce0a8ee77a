/**
 * Names for the generated types (./generated/openapi.ts, from the service's /openapi.json), and
 * the helpers that read an operation's path parameters, query, body and response from them.
 */
import type { components, operations, paths } from './generated/openapi.js';

export type { components, operations, paths };

type Schemas = components['schemas'];
export type Agent = Schemas['Agent'];
export type AgentDraft = Schemas['AgentDraft'];
export type AgentList = Schemas['AgentList'];
export type AuditLogEntry = Schemas['AuditLogEntry'];
export type AuditLogEntryList = Schemas['AuditLogEntryList'];
export type CreatedSession = Schemas['CreatedSession'];
export type Session = Schemas['Session'];
export type SessionList = Schemas['SessionList'];
export type Task = Schemas['Task'];
export type TaskEvent = Schemas['TaskEvent'];
export type TaskEventPage = Schemas['TaskEventPage'];
export type TaskList = Schemas['TaskList'];
export type TaskPending = Schemas['TaskPending'];
export type Webhook = Schemas['Webhook'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WebhookDeliveryList = Schemas['WebhookDeliveryList'];
export type ApiKeyIdentity = Schemas['ApiKeyIdentity'];

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** The paths that have an operation for `M`. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: [NonNullable<paths[P][M]>] extends [never] ? never : P;
}[keyof paths];

/** The operation at `P` for `M`. */
export type OperationAt<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** An operation's path parameters (never when it has none). */
export type PathParams<O> = O extends { parameters: { path: infer T } } ? T : never;

/** An operation's query parameters (never when it has none). */
export type QueryParams<O> = O extends { parameters: { query?: infer T } } ? Exclude<T, undefined> : never;

/** An operation's JSON body: `required` when it must be sent, never when it takes none. */
export type JsonBody<O> = O extends { requestBody?: undefined }
  ? never
  : O extends { requestBody: { content: { 'application/json': infer T } } }
    ? { required: T }
    : O extends { requestBody?: { content: { 'application/json': infer T } } }
      ? { optional: T }
      : never;

/** What a 200 answers: the JSON body, a string for text (HTML pages), bytes for anything else (PNG frames). */
export type ResponseOf<O> = O extends { responses: { 200: { content: infer C } } }
  ? 'application/json' extends keyof C
    ? C['application/json']
    : { [K in keyof C]: K extends `text/${string}` ? string : Uint8Array }[keyof C]
  : unknown;

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the request (and any retry wait). */
  signal?: AbortSignal;
  /** Per-attempt timeout in milliseconds, in place of the client's. */
  timeoutMs?: number;
  /**
   * For a POST: the `Idempotency-Key` to send. Default: a new random one per call, reused by its
   * retries, so a retry after a lost connection cannot create twice. `null` sends none, and a
   * lost connection is then not retried.
   */
  idempotencyKey?: string | null;
}

type PathPart<O> = [PathParams<O>] extends [never] ? { path?: undefined } : { path: PathParams<O> };
type QueryPart<O> = [QueryParams<O>] extends [never] ? { query?: undefined } : { query?: QueryParams<O> };
type BodyPart<O> = [JsonBody<O>] extends [never]
  ? { body?: undefined }
  : JsonBody<O> extends { required: infer T }
    ? { body: T }
    : JsonBody<O> extends { optional: infer T }
      ? { body?: T }
      : { body?: undefined };

/** The options of {@link Deskhand.request} for operation `O`: its path parameters, query and body, typed. */
export type RequestOptions<O> = PathPart<O> & QueryPart<O> & BodyPart<O> & CallOptions;
