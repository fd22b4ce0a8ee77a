import type { Container } from '../../shared/container';
import { QUEUE_NAMES } from '../../shared/queues/catalog';
import { jobId } from '../../shared/queues/job-queues';
import { isCluster, withinDeadline } from '../../shared/redis';

/** What the watch uses: the commands connection, the queues, the prefix and deadlines, a logger. */
export type RedisWatchDeps = Pick<Container, 'redis' | 'queues' | 'config' | 'logger'>;

export interface RedisWatch {
  /** One look now (also run every `checkEveryMs` and on each reconnect). */
  check(): Promise<void>;
  stop(): void;
}

/**
 * worker-clock's guard of what lives only in Redis. Redis is not the record: a Redis restarted
 * empty (or flushed) has lost the sweep's schedule and every queued, delayed and repeating job.
 * A marker key written with SET NX tells: when the clock finds it missing, Redis lost its data,
 * so the clock registers the sweep's schedule again and queues one sweep at once with
 * `quiet_ms: 0`, which queues from PostgreSQL every task's next step, lost tool calls, undispatched
 * org events and due deliveries, sends again the action each task waits for on its computer (a
 * copy published while the web processes' subscriptions were down reached nobody), and times out
 * overdue approvals and sessions. The same sweep
 * runs whenever Redis answers again after an outage, a reconnect or a stall (Redis may have kept its data,
 * but requests meanwhile committed work whose jobs it could not take: a task started while Redis
 * was down runs then). Several clocks may run: the marker is set by one, the sweep's job id is
 * the same for all within a few seconds, and a sweep is idempotent anyway.
 *
 * On a Redis Cluster each shard can lose its data alone (a master restarted empty, a failover to
 * a replica that had not caught up): there is a marker beside each queue, in its slot
 * (`{prefix:queue}:clock:present`), and any one missing rebuilds. A failover also counts as a
 * reconnect (a node left the cluster's connection pool): writes the old master took but had not
 * passed to its replica are gone, and the subscriptions on that shard were down a moment.
 */
export function watchRedis(container: RedisWatchDeps, options: { sweepEveryMs: number; checkEveryMs: number; settleMs: number }): RedisWatch {
  const { redis, queues, config } = container;
  const logger = container.logger.child({ scope: 'redis-watch' });
  // One marker on one Redis; on a cluster, one per queue's slot (each queue's prefix: `queuePrefix`).
  const markers = [...new Set(Object.values(QUEUE_NAMES).map((queue) => `${queues.prefixOf(queue)}:clock:present`))];
  const maintenance = queues.queue(QUEUE_NAMES.maintenance);
  let reconnected = false;
  let running: Promise<void> | null = null;
  let stopped = false;

  // One scheduler entry however many clock processes run: BullMQ upserts by id. Bounded, so
  // that a Redis stalled mid-look cannot hold every later look.
  const schedule = () =>
    withinDeadline(maintenance.upsertJobScheduler('sweep', { every: options.sweepEveryMs }, { name: 'sweep', data: {} }), config.redisCommandTimeoutMs * 2, 'the sweep schedule');

  const rebuild = async (why: 'first' | 'empty' | 'reconnected'): Promise<void> => {
    await schedule();
    const bucket = Math.floor(Date.now() / options.checkEveryMs);
    await queues.enqueue(QUEUE_NAMES.maintenance, 'sweep', { quiet_ms: 0 }, { jobId: jobId('sweep', 'rebuild', bucket) });
    if (why === 'empty') logger.warn('Redis lost its data: the sweep schedule is registered again and a sweep re-queues from PostgreSQL');
    else if (why === 'first') logger.info('No clock has run on this Redis yet (a first start, or Redis was emptied while no clock ran): the sweep schedule is registered and a sweep re-queues from PostgreSQL');
    else logger.info('Redis is back: a sweep re-queues from PostgreSQL what could not be queued meanwhile');
  };
  // The marker is missing at the first look on a new Redis (or prefix) as well: not a loss to warn of.
  let firstLook = true;

  const look = async (): Promise<void> => {
    const wasReconnect = reconnected;
    reconnected = false;
    try {
      const now = new Date().toISOString();
      const empty = (await Promise.all(markers.map((marker) => redis.set(marker, now, 'NX')))).includes('OK');
      // After an outage, the other processes' connections come back within their reconnect
      // interval (2 s at most): the web processes' subscriptions must be there before the
      // rebuilt steps send actions to computers, or those messages reach nobody.
      if (wasReconnect) await new Promise((resolve) => setTimeout(resolve, options.settleMs));
      if (stopped) return;
      const first = firstLook;
      firstLook = false;
      if (empty || wasReconnect) await rebuild(empty ? (first ? 'first' : 'empty') : 'reconnected');
      // Whatever removed the schedule alone (an operator, an eviction policy), it comes back.
      else if (!(await withinDeadline(maintenance.getJobScheduler('sweep'), config.redisCommandTimeoutMs, 'the sweep schedule'))) await schedule();
    } catch (error) {
      // Redis does not answer (down, or stalled with its connection open), or the rebuild failed
      // after the marker was set: the first look that gets answers again rebuilds.
      reconnected = true;
      logger.debug({ err: error }, 'Redis check failed');
    }
  };

  const check = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    running ??= look().finally(() => {
      running = null;
    });
    return running;
  };

  // ioredis emits `ready` on every (re)connection; the first one is this process starting.
  let connectedBefore = redis.status === 'ready';
  const onReady = () => {
    if (connectedBefore) {
      reconnected = true;
      void check();
    }
    connectedBefore = true;
  };
  redis.on('ready', onReady);
  // A cluster stays `ready` through a master's failover; the node it lost tells.
  const onNodeGone = () => {
    reconnected = true;
    void check();
  };
  if (isCluster(redis)) redis.on('-node', onNodeGone);
  const timer = setInterval(() => void check(), options.checkEveryMs);
  timer.unref();
  return {
    check,
    stop() {
      stopped = true;
      clearInterval(timer);
      redis.off('ready', onReady);
      redis.off('-node', onNodeGone);
    },
  };
}
