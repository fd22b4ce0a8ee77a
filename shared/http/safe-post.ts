import diagnosticsChannel from 'node:diagnostics_channel';
import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { StringDecoder } from 'node:string_decoder';
import { Agent, type Dispatcher } from 'undici';
import { checkUrlShape, isPublicAddress, systemResolver, type HostResolver } from './address-policy';

/**
 * Outbound POSTs to URLs that customers choose (webhooks, HTTP tools), safe against SSRF:
 * the address policy runs on the addresses actually connected to, redirects are never
 * followed, one deadline covers the whole attempt and the reply is read only up to a cap.
 */

export interface SafeHttpClientOptions {
  /**
   * Development only: skip the address policy and allow plain http. The caller decides
   * (`DESKHAND_ALLOW_PRIVATE_URLS=1` outside production); nothing here reads the environment.
   */
  allowPrivate: boolean;
  /** Name resolution used at connection time; defaults to the system resolver. */
  lookup?: HostResolver;
  /** TCP + TLS connect timeout of the underlying agent; each call's own deadline still applies. Default 10000. */
  connectTimeoutMs?: number;
  /** Sent unless the call's headers set `user-agent`. */
  userAgent?: string;
}

export interface SafePostOptions {
  /** Extra request headers (e.g. `Service-Signature`); names are case-insensitive. */
  headers?: Record<string, string>;
  /** One deadline for the whole attempt: resolve, connect, send, headers and body. */
  timeoutMs: number;
  /** Reply bytes kept; the rest is not read and the connection is closed. */
  maxResponseBytes: number;
  /** Ends the attempt early (shutdown); reported as `errorCode: 'aborted'`. */
  signal?: AbortSignal;
}

/**
 * Why an attempt did not succeed:
 * - `refused`: the URL or an address it resolves to is not allowed (nothing was sent);
 * - `timeout`: the deadline passed before the reply was complete;
 * - `network`: DNS failure, connection refused or reset, TLS error, ...;
 * - `http_status`: a reply came with a status other than 2xx (3xx included: never followed);
 * - `aborted`: the caller's signal fired.
 */
export type SafePostErrorCode = 'refused' | 'timeout' | 'network' | 'http_status' | 'aborted';

export interface SafePostResult {
  /** True only for a 2xx reply read to the end or up to the cap. */
  ok: boolean;
  /** Reply status, or null when no reply arrived. */
  status: number | null;
  /** Reply body as UTF-8 text, at most `maxResponseBytes` bytes of it (partial on timeout). */
  bodyText: string;
  /** True when the reply was longer than `maxResponseBytes` and was cut. */
  truncated: boolean;
  /** Human-readable cause when `ok` is false; null otherwise. Never contains the request body. */
  error: string | null;
  errorCode: SafePostErrorCode | null;
  durationMs: number;
  /** The peer's IP address, when a connection was used. */
  remoteAddress?: string;
}

export interface SafeHttpClient {
  /** POSTs `body` to `url`. Never throws for network or policy outcomes; see {@link SafePostResult}. */
  post(url: string | URL, body: string, options: SafePostOptions): Promise<SafePostResult>;
  /** Waits for calls in flight (each bounded by its deadline), then closes every connection. Idempotent. */
  close(): Promise<void>;
}

/** Raised inside the connect-time lookup when a host resolves to a refused address. */
export class AddressRefusedError extends Error {
  readonly code = 'EADDRESS_REFUSED';
  constructor(readonly hostname: string) {
    super(`${hostname} resolves to a private, local or reserved address`);
    this.name = 'AddressRefusedError';
  }
}

function notFound(hostname: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
  err.code = 'ENOTFOUND';
  return err;
}

function wantedFamily(family: LookupOptions['family']): 4 | 6 | null {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return null;
}

/**
 * The `lookup` handed to net/tls.connect. It is called for every new connection to a name
 * (never for IP literals, which `post` checks itself), so the addresses checked here are the
 * ones the socket connects to: a DNS answer that changed since registration is judged afresh,
 * and a name with ANY refused address is refused as a whole.
 */
function createConnectLookup(resolve: HostResolver, allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const answer = (answers: readonly LookupAddress[]): void => {
      if (!allowPrivate && !answers.every((a) => isPublicAddress(a.address))) {
        process.nextTick(callback, new AddressRefusedError(hostname), '');
        return;
      }
      const family = wantedFamily(options.family);
      const usable = answers
        .filter((a) => family === null || a.family === family)
        .map((a) => ({ address: a.address, family: a.family }));
      if (usable.length === 0) {
        process.nextTick(callback, notFound(hostname), '');
      } else if (options.all) {
        // Node 20 asks for every address when it connects with autoSelectFamily (happy eyeballs).
        process.nextTick(callback, null, usable);
      } else {
        process.nextTick(callback, null, usable[0].address, usable[0].family);
      }
    };
    // nextTick keeps net's callback (and anything it throws) out of the promise chain.
    resolve(hostname).then(answer, (err: unknown) => process.nextTick(callback, err as NodeJS.ErrnoException, ''));
  };
}

function findInCauses(err: unknown, test: (e: Error & { code?: unknown }) => boolean): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth += 1) {
    if (test(e as Error & { code?: unknown })) return true;
  }
  return false;
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

function describeFailure(err: unknown, deadline: AbortSignal, callerSignal: AbortSignal | undefined, timeoutMs: number)
  : { error: string; errorCode: SafePostErrorCode } {
  if (findInCauses(err, (e) => e instanceof AddressRefusedError)) {
    return { error: 'the host resolves to a private, local or reserved address', errorCode: 'refused' };
  }
  if (callerSignal?.aborted && !deadline.aborted) return { error: 'the request was aborted', errorCode: 'aborted' };
  if (deadline.aborted || findInCauses(err, (e) => typeof e.code === 'string' && TIMEOUT_CODES.has(e.code))) {
    return { error: `no complete reply within ${timeoutMs} ms`, errorCode: 'timeout' };
  }
  const e: Error & { code?: unknown } = err instanceof Error ? err : new Error(String(err));
  const code = typeof e.code === 'string' ? e.code : e.name;
  return { error: `${code}: ${e.message}`, errorCode: 'network' };
}

/**
 * Waits for undici's response promise, but no longer than the signal allows: undici honours
 * an abort only once a connection exists, so a hanging resolve or connect would otherwise
 * outlive the deadline. A response that arrives after giving up is discarded.
 */
function untilAborted(pending: Promise<Dispatcher.ResponseData>, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason);
      pending.then((late) => late.body.destroy(), () => undefined);
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    pending.then(
      (response) => { signal.removeEventListener('abort', onAbort); resolve(response); },
      (err: unknown) => { signal.removeEventListener('abort', onAbort); reject(err); },
    );
  });
}

interface ReadBody { text: string; truncated: boolean }

/** Reads at most `maxBytes` of the reply; past that the stream is destroyed, closing the socket. */
async function readCapped(body: Dispatcher.ResponseData['body'], maxBytes: number, sink: ReadBody): Promise<void> {
  // StringDecoder keeps a multi-byte character split across chunks (or cut by the cap) whole.
  const decoder = new StringDecoder('utf8');
  let received = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      const room = maxBytes - received;
      if (chunk.length > room) {
        sink.text += decoder.write(chunk.subarray(0, room));
        sink.truncated = true;
        return; // the partial character at the cut, if any, is dropped
      }
      sink.text += decoder.write(chunk);
      received += chunk.length;
    }
    sink.text += decoder.end();
  } finally {
    if (!body.destroyed) body.destroy();
  }
}

function assertPositiveInteger(name: string, value: number, allowZero = false): void {
  if (!Number.isSafeInteger(value) || value < (allowZero ? 0 : 1)) {
    throw new TypeError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer`);
  }
}

/**
 * Builds the outbound HTTP client for one policy. Each process's composition root makes one
 * (or one per policy) and closes it on shutdown; connections are pooled per origin inside it.
 */
export function createSafeHttpClient(clientOptions: SafeHttpClientOptions): SafeHttpClient {
  const { allowPrivate } = clientOptions;
  const userAgent = clientOptions.userAgent ?? 'Deskhand-Outbound/1';
  const agent = new Agent({
    connect: {
      lookup: createConnectLookup(clientOptions.lookup ?? systemResolver, allowPrivate),
      timeout: clientOptions.connectTimeoutMs ?? 10_000,
    },
  });

  // The peer address is read off the socket a request is written to. undici publishes that
  // pairing on its public diagnostics channels; the request object is captured while our own
  // synchronous dispatch creates it, so requests made elsewhere in the process are ignored.
  const addressSinks = new WeakMap<object, (address: string) => void>();
  let capture: ((request: object) => void) | null = null;
  const onCreate = (message: unknown): void => {
    if (capture) capture((message as { request: object }).request);
  };
  const onSendHeaders = (message: unknown): void => {
    const { request, socket } = message as { request: object; socket: Socket };
    const sink = addressSinks.get(request);
    if (sink && socket.remoteAddress) sink(socket.remoteAddress);
  };
  diagnosticsChannel.subscribe('undici:request:create', onCreate);
  diagnosticsChannel.subscribe('undici:client:sendHeaders', onSendHeaders);

  const inFlight = new Set<Promise<SafePostResult>>();
  let closed = false;

  async function attempt(rawUrl: string | URL, body: string, options: SafePostOptions): Promise<SafePostResult> {
    assertPositiveInteger('timeoutMs', options.timeoutMs);
    assertPositiveInteger('maxResponseBytes', options.maxResponseBytes, true);
    const started = performance.now();
    let remoteAddress: string | undefined;
    const result = (fields: Omit<SafePostResult, 'durationMs' | 'remoteAddress'>): SafePostResult => ({
      ...fields,
      durationMs: Math.round(performance.now() - started),
      ...(remoteAddress === undefined ? {} : { remoteAddress }),
    });

    // Names and literal addresses are checked before anything is sent: net never calls
    // `lookup` for an IP literal, so the connect-time check alone would miss them.
    const shape = checkUrlShape(rawUrl, { allowPrivate });
    if (!shape.ok) {
      return result({ ok: false, status: null, bodyText: '', truncated: false, error: shape.reason, errorCode: 'refused' });
    }
    const url = shape.url;

    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': userAgent };
    for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;

    const deadline = AbortSignal.timeout(options.timeoutMs);
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    const read: ReadBody = { text: '', truncated: false };
    let status: number | null = null;
    try {
      let created: object | null = null;
      capture = (request) => { created = request; };
      let pending: Promise<Dispatcher.ResponseData>;
      try {
        pending = agent.request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers,
          body,
          signal,
          // Backstops only: the deadline above is the rule.
          headersTimeout: options.timeoutMs,
          bodyTimeout: options.timeoutMs,
        });
      } finally {
        capture = null;
      }
      if (created) addressSinks.set(created, (address) => { remoteAddress = address; });

      const response = await untilAborted(pending, signal);
      status = response.statusCode;
      await readCapped(response.body, options.maxResponseBytes, read);
      const bodyText = read.text;
      const truncated = read.truncated;
      if (status >= 200 && status < 300) {
        return result({ ok: true, status, bodyText, truncated, error: null, errorCode: null });
      }
      const error = status >= 300 && status < 400 ? `HTTP ${status}: redirects are not followed` : `HTTP ${status}`;
      return result({ ok: false, status, bodyText, truncated, error, errorCode: 'http_status' });
    } catch (err) {
      const failure = describeFailure(err, deadline, options.signal, options.timeoutMs);
      return result({ ok: false, status, bodyText: read.text, truncated: read.truncated, ...failure });
    }
  }

  async function post(url: string | URL, body: string, options: SafePostOptions): Promise<SafePostResult> {
    if (closed) throw new Error('this SafeHttpClient is closed');
    const call = attempt(url, body, options);
    inFlight.add(call);
    try {
      return await call;
    } finally {
      inFlight.delete(call);
    }
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    await Promise.allSettled([...inFlight]);
    diagnosticsChannel.unsubscribe('undici:request:create', onCreate);
    diagnosticsChannel.unsubscribe('undici:client:sendHeaders', onSendHeaders);
    // destroy, not close: a connection attempt abandoned at its deadline may still be pending
    // and would otherwise hold shutdown until the connect timeout.
    await agent.destroy();
  }

  return { post, close };
}

export interface SafePostOnceOptions extends SafePostOptions {
  allowPrivate: boolean;
  lookup?: HostResolver;
}

/**
 * One POST through a client made for it and closed afterwards. For scripts and one-off use;
 * long-running processes hold a {@link createSafeHttpClient} client to reuse connections.
 */
export async function safePost(url: string | URL, body: string, options: SafePostOnceOptions): Promise<SafePostResult> {
  const { allowPrivate, lookup, ...postOptions } = options;
  const client = createSafeHttpClient({ allowPrivate, lookup });
  try {
    return await client.post(url, body, postOptions);
  } finally {
    await client.close();
  }
}
