import { setTimeout as sleep } from 'node:timers/promises';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Config } from '../shared/config';
import { createRedis, isCluster, type Redis } from '../shared/redis';
import type { Logger } from '../shared/logger';
import { JOBS, type QueueName } from '../shared/queues/catalog';
import { assertJobPayload, queuePrefix, type JobQueues } from '../shared/queues/job-queues';

/**
 * What a processor gets besides its payload. The services it uses it gets from its queue's
 * wiring (`workers/<queue>/index.ts`), which the composition root builds: never the container.
 */
export interface JobHelpers {
  job: Job;
  logger: Logger;
  /**
   * Aborts when the worker gives up on its running jobs (the shutdown deadline passed, see
   * `RunningWorker.abandon`): a model turn or an outbound request given it stops there. A graceful
   * close does not abort it: running jobs are let finish.
   */
  signal: AbortSignal;
}

/** What any queue's worker needs from its process: where Redis is, the queue settings, a logger. */
export interface WorkerRuntime {
  config: Pick<Readonly<Config>, 'redisUrl' | 'redisClusterNodes' | 'redisPrefix' | 'workerLockDurationMs' | 'workerStalledIntervalMs'>;
  logger: Logger;
  /** The process's queues, on its commands connection: the liveness guard asks them what waits. */
  queues: Pick<JobQueues, 'queue'>;
}

/** A processor is a plain function; `index.ts` of each queue folder maps job names to them. */
export type Processor = (payload: unknown, helpers: JobHelpers) => Promise<unknown>;

export interface QueueWiring {
  queue: QueueName;
  concurrency: number;
  processors: Record<string, Processor>;
  /** BullMQ worker settings particular to this queue. */
  workerOptions?: { maxStalledCount?: number };
  /**
   * Work that runs beside this queue's worker, started after it and stopped with it (the clock's
   * sweep schedule and its watch over Redis, worker-evals' look for overdue commands).
   */
  alongside?: () => Promise<{ stop(): void | Promise<void> }>;
}

/**
 * Runs `work` every `everyMs` beside a queue's worker (`alongside`), one run at a time: a run
 * still going when the next is due is not doubled. A failure is logged and the next run tries
 * again. `stop` ends the runs and resolves once a run still going has finished, so that the
 * process closes its database connections only after it.
 */
export function everyInterval(everyMs: number, work: () => Promise<unknown>, logger: Logger, failure: string): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (running) return;
    running = work()
      .then(() => undefined, (error: unknown) => logger.warn({ err: error }, failure))
      .finally(() => {
        running = null;
      });
  }, everyMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}

export interface RunningWorker {
  /** The BullMQ worker taking this queue's jobs now (the liveness guard may have replaced an earlier one). */
  readonly worker: Worker;
  /** Stops taking jobs, waits for the running ones, closes its connections. */
  close(): Promise<void>;
  /**
   * Past the shutdown deadline: drops the connections without waiting. The running jobs' locks
   * expire and BullMQ hands them to another worker as stalled (or the sweep fails their task).
   */
  abandon(): void;
}

/** How often the liveness guard looks at the queue (see `startQueueWorker`). */
export const LIVENESS_LOOK_EVERY_MS = 5_000;
/** How long work may wait for a worker that has a free slot and takes nothing before it counts as stuck. */
export const STUCK_AFTER_MS = 10_000;
/** After its running jobs have ended, how long a closing worker may take before it is dropped (a stuck one never closes). */
const CLOSE_GRACE_MS = 2_000;

/** One BullMQ worker with its own blocking connection, its running jobs' count, and their abort. */
interface WorkerInstance {
  worker: Worker;
  connection: Redis;
  running: number;
  abandoned: AbortController;
}

/**
 * Starts a BullMQ worker for one queue, dispatching by job name and checking payloads: a payload
 * the catalog refuses fails its job for good (`UnrecoverableError`), since trying it again
 * cannot make it valid.
 *
 * Beside it runs a liveness guard. BullMQ (6.7) can leave a worker on a Redis Cluster waiting
 * for ever without an error: when a blocking wait overruns its time, BullMQ resets the blocking
 * connection and waits for an `end` that its own cluster recovery prevents, so the worker stays
 * "running" and takes nothing more (seen after a master's failover, more often than not;
 * test/integration/scale-out/worker-liveness.test.ts). Every `LIVENESS_LOOK_EVERY_MS` the guard
 * asks the queue whether work is there for a worker to take (a job waiting, or a delayed job
 * due); when there has been some at every look for `STUCK_AFTER_MS`, while this worker had a
 * free slot and started no job, the worker is stuck: a new one on new connections takes its
 * place (should it be stuck as well, the guard replaces it too), and the old one is closed once
 * the jobs it was running have ended. A healthy worker, here or in another process, takes such
 * work within BullMQ's block time (5 s at most), so the guard does not replace workers that are
 * only busy.
 */
export function startQueueWorker(runtime: WorkerRuntime, wiring: QueueWiring): RunningWorker {
  const { config } = runtime;
  const logger = runtime.logger.child({ scope: `worker:${wiring.queue}` });
  const prefix = (connection: Redis) => queuePrefix(config.redisPrefix, isCluster(connection), wiring.queue);
  let lastStartedAt = 0;

  const processJob = async (job: Job, instance: WorkerInstance) => {
    const processor = wiring.processors[job.name];
    if (!processor) throw new UnrecoverableError(`queue ${wiring.queue} has no processor for job ${job.name}`);
    // Processors of jobs outside the catalog (tests) skip the payload check.
    const catalogued = (JOBS as Partial<Record<string, object>>)[wiring.queue];
    if (catalogued && job.name in catalogued) {
      try {
        assertJobPayload(wiring.queue, job.name as never, job.data);
      } catch (error) {
        throw new UnrecoverableError((error as Error).message);
      }
    }
    instance.running += 1;
    lastStartedAt = Date.now();
    try {
      return await processor(job.data, { job, logger: logger.child({ job_id: job.id, job: job.name }), signal: instance.abandoned.signal });
    } finally {
      instance.running -= 1;
    }
  };

  const start = (): WorkerInstance => {
    const connection = createRedis(config, { name: `deskhand-worker-${wiring.queue}`, blocking: true });
    const instance = { connection, running: 0, abandoned: new AbortController() } as WorkerInstance;
    instance.worker = new Worker(wiring.queue, (job) => processJob(job, instance), {
      connection,
      prefix: prefix(connection),
      concurrency: wiring.concurrency,
      lockDuration: config.workerLockDurationMs,
      stalledInterval: config.workerStalledIntervalMs,
      ...wiring.workerOptions,
    });
    instance.worker.on('error', (error) => logger.error({ err: error }, 'worker error'));
    instance.worker.on('failed', (job, error) => logger.warn({ err: error, job_id: job?.id, job: job?.name }, 'job failed'));
    return instance;
  };
  const abandon = ({ worker, connection, abandoned }: WorkerInstance) => {
    abandoned.abort(new Error('the worker stopped past its shutdown deadline'));
    worker.close(true).catch(() => undefined);
    connection.disconnect();
  };
  /**
   * Stops taking jobs and closes once the running jobs have ended. A stuck worker's own close
   * never ends: once its jobs have ended it is given CLOSE_GRACE_MS, then dropped.
   */
  const close = async (instance: WorkerInstance) => {
    const closed = instance.worker
      .close()
      .then(() => instance.connection.quit())
      .then(() => 'closed' as const, () => 'closed' as const);
    const idle = (async () => {
      while (instance.running > 0) await sleep(100);
      await sleep(CLOSE_GRACE_MS);
      return 'idle' as const;
    })();
    if ((await Promise.race([closed, idle])) === 'idle') abandon(instance);
  };

  let current = start();
  /** Stuck workers being let finish their running jobs, each with its end. */
  const retiring = new Map<WorkerInstance, Promise<void>>();
  const queue = runtime.queues.queue(wiring.queue);
  let workSince: number | null = null;
  const guard = everyInterval(
    LIVENESS_LOOK_EVERY_MS,
    async () => {
      const now = Date.now();
      const [ready, due] = await Promise.all([queue.getJobCountByTypes('wait', 'prioritized'), queue.getDelayedCount(now)]);
      if (ready + due === 0 || current.running >= wiring.concurrency) {
        workSince = null;
        return;
      }
      workSince ??= now;
      if (now - workSince < STUCK_AFTER_MS || lastStartedAt >= workSince) return;
      logger.warn({ waiting: ready, due, since_ms: now - workSince }, 'the worker took no job while work waited and it had a free slot: a new worker on new connections takes its place');
      workSince = null;
      const stuck = current;
      current = start();
      retiring.set(stuck, close(stuck).finally(() => retiring.delete(stuck)));
    },
    logger,
    'the worker liveness look failed',
  );

  return {
    get worker() {
      return current.worker;
    },
    async close() {
      await guard.stop();
      await Promise.all([...retiring.values(), close(current)]);
    },
    abandon() {
      void guard.stop();
      for (const stuck of retiring.keys()) abandon(stuck);
      abandon(current);
    },
  };
}
