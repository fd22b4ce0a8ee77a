import { Redis, type RedisOptions } from 'ioredis';
import { ApiError } from './errors';

export type { Redis };

/**
 * A Redis connection. `blocking` connections (BullMQ workers, subscribers) retry forever as
 * BullMQ's production guide asks (`maxRetriesPerRequest: null`); the others fail a command fast
 * so that an HTTP request never hangs on a Redis outage: with `commandTimeoutMs`, a command that
 * has no reply by then (a stalled Redis keeps its connection open) fails with "Command timed out".
 * Commands sent in one turn of the event
 * loop go out as one pipeline, except on `scripted` connections: there ioredis copies every
 * defined script (BullMQ defines dozens) into each pipeline it makes, which costs more than it saves.
 */
export function createRedis(
  redisUrl: string,
  options: { blocking?: boolean; scripted?: boolean; name?: string; commandTimeoutMs?: number } = {},
): Redis {
  const redisOptions: RedisOptions = {
    connectionName: options.name,
    maxRetriesPerRequest: options.blocking ? null : 2,
    // Blocking commands wait on purpose; a timeout there would cut a worker's fetch short.
    commandTimeout: options.blocking ? undefined : options.commandTimeoutMs,
    connectTimeout: options.commandTimeoutMs ? Math.max(options.commandTimeoutMs, 1000) : undefined,
    enableOfflineQueue: true,
    enableAutoPipelining: !options.blocking && !options.scripted,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  };
  const client = new Redis(redisUrl, redisOptions);
  // Connection errors are retried by ioredis; an unhandled 'error' event would crash the process.
  client.on('error', () => undefined);
  return client;
}

/** Deletes every key whose name starts with `prefix` (a test world's or a bench run's). */
export async function deleteKeysByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

/** The answer to a request that needs Redis (or PostgreSQL) while it does not answer: 503, retry shortly. */
export function backingServiceUnavailable(): ApiError {
  return new ApiError('server_error', 'The service is briefly unavailable (a backing service does not answer); retry in a few seconds', {
    status: 503,
    code: 'unavailable',
    headers: { 'Retry-After': '5' },
  });
}

/**
 * Whether `error` says that Redis did not answer (timed out, unreachable, connection closed),
 * as ioredis and BullMQ raise it, or that a connection was refused or reset (PostgreSQL down),
 * rather than a fault of ours: such a failure becomes a 503.
 */
export function isBackingServiceUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError' || error instanceof QueueDeadlineError) return true;
  return /^(Command timed out|Connection is closed|Stream isn't writeable|connect ECONNREFUSED|read ECONNRESET)/.test(error.message);
}

/** `work`, or a `QueueDeadlineError` once `ms` have passed without it settling (a stalled Redis never answers). */
export async function withinDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  work.catch(() => undefined); // settled after the deadline: nobody waits for it any more
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new QueueDeadlineError(what, ms)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Redis did not answer within the deadline: a job not added, a subscription not confirmed (Redis stalled or unreachable). */
export class QueueDeadlineError extends Error {
  constructor(what: string, ms: number) {
    super(ms ? `${what}: no answer from Redis within ${ms} ms` : `${what}: not tried, Redis did not answer a moment ago`);
    this.name = 'QueueDeadlineError';
  }
}
