import { Queue, type JobsOptions } from 'bullmq';
import { Ajv, type ValidateFunction } from 'ajv';
import { isCluster, QueueDeadlineError, withinDeadline, type Redis } from '../redis';
import type { Logger } from '../logger';
import { JOBS, QUEUE_NAMES, type JobName, type JobPayload, type QueueName } from './catalog';

const ajv = new Ajv({ allErrors: false, strict: true });
/** Left-over jobs one process keeps for a quick retry; past it, the sweep alone queues them. */
const MAX_LEFT_OVER = 10_000;
const LEFT_OVER_RETRY_MS = 1_000;
const validators = new Map<string, ValidateFunction>();

function validatorFor(queue: QueueName, name: string): ValidateFunction {
  const key = `${queue}/${name}`;
  let validate = validators.get(key);
  if (!validate) {
    const schema = (JOBS[queue] as Record<string, object>)[name];
    if (!schema) throw new Error(`queue ${queue} has no job named ${name}`);
    validate = ajv.compile(schema);
    validators.set(key, validate);
  }
  return validate;
}

/** Checks a job payload against the catalog; throws with the schema error when it does not fit. */
export function assertJobPayload<Q extends QueueName, N extends JobName<Q>>(
  queue: Q,
  name: N,
  payload: unknown,
): asserts payload is JobPayload<Q, N> {
  const validate = validatorFor(queue, name);
  if (!validate(payload)) {
    throw new Error(`bad ${queue}/${name} payload: ${ajv.errorsText(validate.errors)}`);
  }
}

/** BullMQ refuses custom job ids with colons; ids are built from parts joined by dashes. */
export function jobId(...parts: Array<string | number>): string {
  const id = parts.join('-');
  if (id.includes(':')) throw new Error(`job id may not contain ':' (${id})`);
  return id;
}

/**
 * BullMQ's key prefix for `queue`: the deployment's Redis prefix. On a Redis Cluster, BullMQ's
 * scripts touch several keys of a queue at once, which must then share a slot: each queue's
 * prefix is a hash tag of its own, `{prefix:queue}`, so that each queue's keys lie on one shard
 * and the queues spread over the shards (one tag for all would put every queue on one shard).
 */
export function queuePrefix(redisPrefix: string, cluster: boolean, queue: string): string {
  return cluster ? `{${redisPrefix}:${queue}}` : redisPrefix;
}

/** The queues of the catalog, opened on one connection of their own, for producers (routes and workers). */
export class JobQueues {
  private readonly queues = new Map<QueueName, Queue>();
  /** After an add missed its deadline, adds fail at once until then (a stalled Redis costs one wait, not one per request). */
  private pausedUntil = 0;
  /** Jobs `enqueueOrLeaveToSweep` could not add, tried again every second (by queue and job id). */
  private readonly leftOver = new Map<string, () => Promise<void>>();
  private retryTimer: NodeJS.Timeout | null = null;
  private retrying = false;

  constructor(
    private readonly connection: Redis,
    private readonly prefix: string,
    private readonly options: {
      /** How long an add may wait for Redis (a stalled Redis never answers; one down makes BullMQ wait for it). */
      deadlineMs?: number;
      logger?: Logger;
    } = {},
  ) {}

  /** BullMQ's key prefix of `name` (see `queuePrefix`). */
  prefixOf(name: QueueName): string {
    return queuePrefix(this.prefix, isCluster(this.connection), name);
  }

  /** The BullMQ queue object (for Bull Board and tests). */
  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: this.connection,
        prefix: this.prefixOf(name),
        defaultJobOptions: { removeOnComplete: { age: 3600, count: 10000 }, removeOnFail: { age: 7 * 24 * 3600 } },
      });
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  all(): Queue[] {
    return Object.values(QUEUE_NAMES).map((name) => this.queue(name));
  }

  /**
   * Adds a job after validating its payload. `options.jobId` should be deterministic so that
   * enqueuing the same work twice is harmless.
   */
  async enqueue<Q extends QueueName, N extends JobName<Q>>(
    queue: Q,
    name: N,
    payload: JobPayload<Q, N>,
    options: JobsOptions & { jobId: string },
  ): Promise<void> {
    assertJobPayload(queue, name, payload);
    if (Date.now() < this.pausedUntil) throw new QueueDeadlineError(`job ${queue}/${options.jobId}`, 0);
    const added = this.queue(queue).add(name, payload, options);
    const ms = this.options.deadlineMs;
    if (!ms) {
      await added;
      return;
    }
    try {
      await withinDeadline(added, ms, `job ${queue}/${options.jobId}`);
    } catch (error) {
      if (error instanceof QueueDeadlineError) this.pausedUntil = Date.now() + ms;
      throw error;
    }
  }

  /**
   * `enqueue` for work that PostgreSQL records and the maintenance sweep queues again when its
   * job is missing (a task's next step, an org event's dispatch, a delivery, a session's
   * expiry): when Redis does not take the job now, the failure is logged and the caller goes on,
   * since its change is committed and will be carried out once Redis answers. Answers whether
   * the job was added now.
   */
  async enqueueOrLeaveToSweep<Q extends QueueName, N extends JobName<Q>>(
    queue: Q,
    name: N,
    payload: JobPayload<Q, N>,
    options: JobsOptions & { jobId: string },
  ): Promise<boolean> {
    const add = () => this.enqueue(queue, name, payload, options);
    try {
      await add();
      return true;
    } catch (error) {
      this.options.logger?.warn({ err: error, queue, job_id: options.jobId }, 'job not queued now; the maintenance sweep queues it from PostgreSQL');
      this.retryLater(`${queue}/${options.jobId}`, add);
      return false;
    }
  }

  /**
   * Not the backstop (a process may die with its list; the sweep is the backstop), only quicker:
   * work left over while Redis was stalled or down goes out within about a second of Redis
   * answering again, instead of at the next sweep that finds it missing.
   */
  private retryLater(key: string, add: () => Promise<void>): void {
    if (this.leftOver.size >= MAX_LEFT_OVER) return;
    this.leftOver.set(key, add);
    this.retryTimer ??= setInterval(() => void this.retryLeftOver(), LEFT_OVER_RETRY_MS);
    this.retryTimer.unref();
  }

  private async retryLeftOver(): Promise<void> {
    if (this.retrying || Date.now() < this.pausedUntil) return;
    this.retrying = true;
    try {
      for (const [key, add] of this.leftOver) {
        await add();
        this.leftOver.delete(key);
      }
    } catch {
      // Still no answer: the next tick tries again.
    } finally {
      this.retrying = false;
    }
    if (this.leftOver.size === 0 && this.retryTimer) {
      clearInterval(this.retryTimer);
      this.retryTimer = null;
    }
  }

  /** Closes the queues, then the connection they were given. */
  async close(): Promise<void> {
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.retryTimer = null;
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
    await this.connection.quit().catch(() => this.connection.disconnect());
  }
}
