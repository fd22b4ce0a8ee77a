import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/**
 * A Redis connection. `blocking` connections (BullMQ workers, subscribers) retry forever as
 * BullMQ's production guide asks (`maxRetriesPerRequest: null`); the others fail a command fast
 * so that an HTTP request never hangs on a Redis outage. Commands sent in one turn of the event
 * loop go out as one pipeline, except on `scripted` connections: there ioredis copies every
 * defined script (BullMQ defines dozens) into each pipeline it makes, which costs more than it saves.
 */
export function createRedis(redisUrl: string, options: { blocking?: boolean; scripted?: boolean; name?: string } = {}): Redis {
  const redisOptions: RedisOptions = {
    connectionName: options.name,
    maxRetriesPerRequest: options.blocking ? null : 2,
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
