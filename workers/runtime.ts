import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Container } from '../shared/container';
import { createRedis } from '../shared/redis';
import type { Logger } from '../shared/logger';
import { JOBS, type QueueName } from '../shared/queues/catalog';
import { assertJobPayload } from '../shared/queues/job-queues';

/** What a processor gets besides its payload. */
export interface JobHelpers {
  job: Job;
  logger: Logger;
  container: Container;
}

/** A processor is a plain function; `index.ts` of each queue folder maps job names to them. */
export type Processor = (payload: unknown, helpers: JobHelpers) => Promise<unknown>;

export interface QueueWiring {
  queue: QueueName;
  concurrency: number;
  processors: Record<string, Processor>;
  /** BullMQ worker settings particular to this queue. */
  workerOptions?: { maxStalledCount?: number };
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

/** Starts a BullMQ worker for one queue, dispatching by job name and checking payloads. */
export function startQueueWorker(container: Container, wiring: QueueWiring): RunningWorker {
  const connection = createRedis(container.config.redisUrl, { name: `deskhand-worker-${wiring.queue}`, blocking: true });
  const logger = container.logger.child({ scope: `worker:${wiring.queue}` });
  const worker = new Worker(
    wiring.queue,
    async (job) => {
      const processor = wiring.processors[job.name];
      if (!processor) throw new UnrecoverableError(`queue ${wiring.queue} has no processor for job ${job.name}`);
      // Processors of jobs outside the catalog (tests) skip the payload check.
      const catalogued = (JOBS as Partial<Record<string, object>>)[wiring.queue];
      if (catalogued && job.name in catalogued) {
        assertJobPayload(wiring.queue, job.name as never, job.data);
      }
      return processor(job.data, { job, logger: logger.child({ job_id: job.id, job: job.name }), container });
    },
    {
      connection,
      prefix: container.config.redisPrefix,
      concurrency: wiring.concurrency,
      lockDuration: container.config.workerLockDurationMs,
      stalledInterval: container.config.workerStalledIntervalMs,
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
      worker.close(true).catch(() => undefined);
      connection.disconnect();
    },
  };
}
