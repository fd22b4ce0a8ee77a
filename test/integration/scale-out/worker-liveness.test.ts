import { expect } from 'chai';
import { JobQueues } from '../../../shared/queues/job-queues';
import { QUEUE_NAMES } from '../../../shared/queues/catalog';
import { createLogger } from '../../../shared/logger';
import { createRedis } from '../../../shared/redis';
import { LIVENESS_LOOK_EVERY_MS, STUCK_AFTER_MS, startQueueWorker, type RunningWorker } from '../../../workers/runtime';
import { testConfig } from '../../support/environment';
import { startRedisCluster, type OwnRedisCluster } from '../../support/redis-cluster';
import { waitFor } from '../../support/service';

/**
 * A queue's worker on a Redis Cluster whose master fails over while jobs wait in it, as a
 * webhook delivery waits for its retry. BullMQ 6.7's worker can stop taking jobs for good there
 * (more often than not here): the liveness guard of `startQueueWorker` replaces it. Each round
 * fails over another master (each has one replica to promote).
 */
describe('a queue worker on a Redis Cluster after its master fails over', function () {
  this.timeout(180_000);
  let cluster: OwnRedisCluster;
  const logger = createLogger('silent');

  before(async () => {
    cluster = await startRedisCluster();
  });
  after(async () => {
    await cluster?.close();
  });

  /** A prefix whose webhooks queue lies on a master that still has a replica and that no earlier round used. */
  async function prefixOnFreshMaster(used: Set<number>): Promise<{ prefix: string; master: number }> {
    const masters = (await cluster.masters()).filter((master) => master.replicas.length > 0 && !used.has(master.port)).map((master) => master.port);
    for (let attempt = 0; attempt < 500; attempt++) {
      const prefix = `liveness-${Date.now().toString(36)}-${attempt}`;
      const master = await cluster.masterOf(`{${prefix}:${QUEUE_NAMES.webhooks}}`);
      if (masters.includes(master)) return { prefix, master };
    }
    throw new Error('no prefix on a master with a replica');
  }

  it('takes every job, the waiting and the delayed ones and those added after, within the guard\'s time, three failovers in a row', async () => {
    const used = new Set<number>();
    const figures: string[] = [];
    for (let round = 0; round < 3; round++) {
      const { prefix, master } = await prefixOnFreshMaster(used);
      used.add(master);
      const config = testConfig({ DESKHAND_REDIS_CLUSTER_NODES: cluster.seeds, DESKHAND_REDIS_PREFIX: prefix });
      const queues = new JobQueues(createRedis(config, { name: 'producer', scripted: true, commandTimeoutMs: 2000 }), prefix, { deadlineMs: 2000, logger });
      const taken = new Set<string>();
      let worker: RunningWorker | null = null;
      try {
        worker = startQueueWorker({ config, logger, queues }, {
          queue: QUEUE_NAMES.webhooks,
          concurrency: 4,
          processors: {
            deliver: async (payload) => {
              taken.add((payload as { delivery_id: string }).delivery_id);
            },
          },
        });
        let added = 0;
        const add = (delay: number) => {
          const id = `dlv_${round}_${added++}`;
          return queues.enqueueOrLeaveToSweep(QUEUE_NAMES.webhooks, 'deliver', { delivery_id: id }, { jobId: id, delay });
        };
        for (let i = 0; i < 5; i++) await add(0);
        await waitFor(() => taken.size === 5, 10_000, 'the first jobs taken');
        // Retries waiting in the queue across the failover, due 0.5-2.5 s from now.
        await Promise.all(Array.from({ length: 5 }, (_, i) => add(500 + i * 500)));
        const { tookMs } = await cluster.failOver(master);
        const failedOver = Date.now();
        // Jobs added once the shard has a master again (left over and retried if Redis refuses them).
        for (let i = 0; i < 5; i++) await add(0);
        // Stuck work is seen at a look and counted stuck STUCK_AFTER_MS later, at the next look at
        // most; the new worker may be stuck as well once (a fresh connection can be).
        const allowedMs = 2 * (STUCK_AFTER_MS + 2 * LIVENESS_LOOK_EVERY_MS) + 5_000;
        await waitFor(() => taken.size === added, allowedMs, `all ${added} jobs taken after the failover (${taken.size} were)`);
        figures.push(`master ${master} promoted in ${tookMs} ms, every job taken ${Date.now() - failedOver} ms after`);
        expect(taken.size).to.equal(15);
      } finally {
        await worker?.close();
        await queues.close();
      }
    }
    console.log(`      ${figures.join('; ')}`);
  });
});
