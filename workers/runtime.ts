import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Config } from '../shared/config';
import { createRedis, isCluster } from '../shared/redis';
import type { Logger } from '../shared/logger';
import { JOBS, type QueueName } from '../shared/queues/catalog';
import { assertJobPayload, queuePrefix } from '../shared/queues/job-queues';

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
  worker: Worker;
  /** Stops taking jobs, waits for the running ones, closes its connection. */
  close(): Promise<void>;
  /**
   * Past the shutdown deadline: drops the connection without waiting. The running jobs' locks
   * expire and BullMQ hands them to another worker as stalled (or the sweep fails their task).
   */
  abandon(): void;
}

/**
 * Starts a BullMQ worker for one queue, dispatching by job name and checking payloads: a payload
 * the catalog refuses fails its job for good (`UnrecoverableError`), since trying it again
 * cannot make it valid.
 */
export function startQueueWorker(runtime: WorkerRuntime, wiring: QueueWiring): RunningWorker {
  const { config } = runtime;
  const connection = createRedis(config, { name: `deskhand-worker-${wiring.queue}`, blocking: true });
  const logger = runtime.logger.child({ scope: `worker:${wiring.queue}` });
  const abandoned = new AbortController();
  const worker = new Worker(
    wiring.queue,
    async (job) => {
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
      return processor(job.data, { job, logger: logger.child({ job_id: job.id, job: job.name }), signal: abandoned.signal });
    },
    {
      connection,
      prefix: queuePrefix(config.redisPrefix, isCluster(connection), wiring.queue),
      concurrency: wiring.concurrency,
      lockDuration: config.workerLockDurationMs,
      stalledInterval: config.workerStalledIntervalMs,
      ...wiring.workerOptions,
    },
  );
  worker.on('error', (error) => logger.error({ err: error }, 'worker error'));
  worker.on('failed', (job, error) => logger.warn({ err: error, job_id: job?.id, job: job?.name }, 'job failed'));
  return {
    worker,
    async close() {
      await worker.close();
      await connection.quit().catch(() => connection.disconnect());
    },
    abandon() {
      abandoned.abort(new Error('the worker stopped past its shutdown deadline'));
      worker.close(true).catch(() => undefined);
      connection.disconnect();
    },
  };
}
