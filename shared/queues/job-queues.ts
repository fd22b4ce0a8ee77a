import { Queue, type JobsOptions } from 'bullmq';
import { Ajv, type ValidateFunction } from 'ajv';
import type { Redis } from '../redis';
import { JOBS, QUEUE_NAMES, type JobName, type JobPayload, type QueueName } from './catalog';

const ajv = new Ajv({ allErrors: false, strict: true });
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

/** The queues of the catalog, opened on one connection of their own, for producers (routes and workers). */
export class JobQueues {
  private readonly queues = new Map<QueueName, Queue>();

  constructor(
    private readonly connection: Redis,
    private readonly prefix: string,
  ) {}

  /** The BullMQ queue object (for Bull Board and tests). */
  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: this.connection,
        prefix: this.prefix,
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
    await this.queue(queue).add(name, payload, options);
  }

  /** Closes the queues, then the connection they were given. */
  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
    await this.connection.quit().catch(() => this.connection.disconnect());
  }
}
