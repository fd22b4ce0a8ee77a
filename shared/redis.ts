import { Cluster, Redis as SingleRedis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from './config';
import { ApiError } from './errors';

/**
 * A Redis connection: to one Redis, or to a Redis Cluster (`DESKHAND_REDIS_CLUSTER_NODES`).
 * Callers use the commands both offer; where a cluster needs something else (sharded pub/sub,
 * one SCAN per master, a hash tag per queue), the function that does it asks `isCluster`.
 */
export type Redis = SingleRedis | Cluster;

/** Where Redis is: `Config`'s `redisUrl`, or its cluster's seed nodes when those are set. */
export type RedisTarget = Pick<Config, 'redisUrl' | 'redisClusterNodes'>;

export interface RedisConnectionOptions {
  /** BullMQ workers and subscribers: commands wait (and retry) as long as it takes. */
  blocking?: boolean;
  /** BullMQ's producers: no auto-pipelining (see `createRedis`). */
  scripted?: boolean;
  /**
   * Subscribes (the notifier, socket.io's adapter): on a cluster, sharded pub/sub through one
   * subscriber connection per master, which ioredis moves to the new master after a failover.
   */
  subscriber?: boolean;
  name?: string;
  commandTimeoutMs?: number;
}

/** Whether `redis` is a Redis Cluster connection. */
export function isCluster(redis: Redis): redis is Cluster {
  return (redis as Cluster).isCluster === true;
}

/**
 * A Redis connection, to `target`'s single Redis (a URL) or to its cluster. `blocking`
 * connections (BullMQ workers, subscribers) retry forever as BullMQ's production guide asks
 * (`maxRetriesPerRequest: null`); the others fail a command fast so that an HTTP request never
 * hangs on a Redis outage: with `commandTimeoutMs`, a command that has no reply by then (a stalled
 * Redis keeps its connection open) fails with "Command timed out". On one Redis, commands sent in
 * one turn of the event loop go out as one pipeline, except on `scripted` connections: there
 * ioredis copies every defined script (BullMQ defines dozens) into each pipeline it makes, which
 * costs more than it saves. On a cluster, never: ioredis follows a MOVED redirect in a pipeline
 * only when every command in it got the same one, so after a failover, commands to several of a
 * master's slots sent together were refused for good and the client's map of slots stayed wrong
 * (test/integration/scale-out/redis-cluster.test.ts); sent alone, each follows its redirect.
 */
export function createRedis(target: string, options?: RedisConnectionOptions): SingleRedis;
export function createRedis(target: RedisTarget, options?: RedisConnectionOptions): Redis;
export function createRedis(target: string | RedisTarget, options: RedisConnectionOptions = {}): Redis {
  const perNode: RedisOptions = {
    connectionName: options.name,
    maxRetriesPerRequest: options.blocking ? null : 2,
    // Blocking commands wait on purpose; a timeout there would cut a worker's fetch short.
    commandTimeout: options.blocking ? undefined : options.commandTimeoutMs,
    connectTimeout: options.commandTimeoutMs ? Math.max(options.commandTimeoutMs, 1000) : undefined,
  };
  const retry = (attempt: number) => Math.min(attempt * 200, 2000);
  const nodes = typeof target === 'string' ? null : target.redisClusterNodes;
  const autoPipelining = !nodes && !options.blocking && !options.scripted;
  const client: Redis = nodes
    ? new Cluster(
        nodes.map((node) => ({ host: node.host, port: node.port })),
        {
          redisOptions: perNode,
          enableOfflineQueue: true,
          enableAutoPipelining: autoPipelining,
          clusterRetryStrategy: retry,
          shardedSubscribers: options.subscriber === true,
          // A master's failover takes the cluster's node timeout and an election (a few seconds
          // with the defaults): a command to its slots is retried meanwhile, every 300 ms, up to
          // ioredis' 16 redirections (about 5 s), before it fails as with Redis down.
          retryDelayOnFailover: 300,
          retryDelayOnClusterDown: 300,
          retryDelayOnTryAgain: 300,
        } satisfies ClusterOptions,
      )
    : new SingleRedis(typeof target === 'string' ? target : target.redisUrl, {
        ...perNode,
        enableOfflineQueue: true,
        enableAutoPipelining: autoPipelining,
        retryStrategy: retry,
      });
  // Connection errors are retried by ioredis; an unhandled 'error' event would crash the process.
  client.on('error', () => undefined);
  // A cluster reports a node's errors on their own event too; they are retried like the others.
  if (isCluster(client)) client.on('node error', () => undefined);
  return client;
}

/**
 * Another connection to the same Redis (or cluster) with `redis`'s options, for subscribing:
 * on a cluster, with sharded subscribers (see `RedisConnectionOptions.subscriber`).
 */
export function subscriberLike(redis: Redis): Redis {
  const copy: Redis = isCluster(redis) ? redis.duplicate(undefined, { shardedSubscribers: true }) : redis.duplicate();
  copy.on('error', () => undefined);
  if (isCluster(copy)) copy.on('node error', () => undefined);
  return copy;
}

/**
 * Deletes every key whose name starts with `prefix` (a test world's or a bench run's), also
 * those it wraps in a hash tag (`{prefix…}`, a cluster's queue keys). On a cluster, each master
 * holds its own keys: each is scanned, and keys are deleted one by one (they lie in many slots).
 */
export async function deleteKeysByPrefix(redis: Redis, prefix: string): Promise<void> {
  const nodes: SingleRedis[] = isCluster(redis) ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    for (const pattern of [`${prefix}*`, `{${prefix}*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await Promise.all(keys.map((key) => node.del(key)));
      } while (cursor !== '0');
    }
  }
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
 * Whether `error` says that Redis did not answer (timed out, unreachable, connection closed; on
 * a cluster, a shard without a master while it fails over, or no node reachable), as ioredis and
 * BullMQ raise it, or that a connection was refused or reset (PostgreSQL down), rather than a
 * fault of ours: such a failure becomes a 503.
 */
export function isBackingServiceUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ClusterAllFailedError' || error instanceof QueueDeadlineError) return true;
  return /^(Command timed out|Connection is closed|Stream isn't writeable|connect ECONNREFUSED|read ECONNRESET|CLUSTERDOWN|TRYAGAIN|Too many Cluster redirections|None of startup nodes is available|Cluster is ended)/.test(error.message);
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
