import { expect } from 'chai';
import type { Job } from 'bullmq';
import { createContainer, type Container } from '../../shared/container';
import { QUEUE_NAMES } from '../../shared/queues/catalog';
import { startQueueWorker, type RunningWorker } from '../../workers/runtime';
import { testConfig } from '../support/environment';
import { waitFor } from '../support/service';

/**
 * A job whose payload the catalog refuses cannot become valid by waiting: it fails at once,
 * without the retries its options ask for. A processor's ordinary failure is still retried.
 */
describe('job payloads the catalog refuses, on a real queue', () => {
  let container: Container;
  let worker: RunningWorker;
  const ran: unknown[] = [];

  before(() => {
    // Queues of its own: no other suite's webhooks jobs reach this worker, nor its jobs theirs.
    container = createContainer(testConfig({ DESKHAND_REDIS_PREFIX: `test-unrecoverable-${Date.now()}` }));
    worker = startQueueWorker(container, {
      queue: QUEUE_NAMES.webhooks,
      concurrency: 1,
      processors: {
        dispatch: async (payload) => {
          ran.push(payload);
          throw new Error('the receiver is down');
        },
      },
    });
  });
  after(async () => {
    await worker.close();
    await container.queues.queue(QUEUE_NAMES.webhooks).obliterate({ force: true });
    await container.close();
  });

  const settled = (id: string) =>
    waitFor(async () => {
      const job = await container.queues.queue(QUEUE_NAMES.webhooks).getJob(id);
      return job && (await job.getState()) === 'failed' && job.attemptsMade >= 1 ? (job as Job) : null;
    }, 10_000, `job ${id} to fail`);

  it('fails an invalid payload for good on its first attempt, naming the field, without running the processor', async () => {
    const queue = container.queues.queue(QUEUE_NAMES.webhooks);
    // Added as a producer of an older release or another tool would: not through the catalog's check.
    await queue.add('dispatch', { event_id: 42 }, { jobId: 'bad-payload', attempts: 3, backoff: { type: 'fixed', delay: 10 } });
    const job = await settled('bad-payload');
    expect(job.attemptsMade).to.equal(1);
    expect(job.failedReason).to.match(/^bad webhooks\/dispatch payload: .*event_id/);
    expect(ran).to.deep.equal([]);
  });

  it('still retries a valid payload whose processor failed', async () => {
    const queue = container.queues.queue(QUEUE_NAMES.webhooks);
    await queue.add('dispatch', { event_id: 'evt_retried' }, { jobId: 'good-payload', attempts: 3, backoff: { type: 'fixed', delay: 10 } });
    const job = await waitFor(async () => {
      const found = await settled('good-payload');
      return found.attemptsMade === 3 ? found : null;
    }, 10_000, 'the third attempt');
    expect(job.failedReason).to.equal('the receiver is down');
    expect(ran).to.deep.equal([{ event_id: 'evt_retried' }, { event_id: 'evt_retried' }, { event_id: 'evt_retried' }]);
  });
});
