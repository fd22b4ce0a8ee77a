import { QueueEvents } from 'bullmq';
import { createRedis } from '../../shared/redis';

/**
 * How long a queue's jobs wait between being added and being taken by a worker, read from
 * BullMQ's own event stream (each entry's id is Redis's clock in ms), so the bench adds nothing
 * to the path it watches. `since(mark)` gives the waits of the jobs added after the mark whose
 * id starts with `jobIdPrefix`.
 */
export async function watchQueueHops(redisUrl: string, prefix: string, queue: string): Promise<{
  waits(jobIdPrefix: string, sinceMs: number): number[];
  close(): Promise<void>;
}> {
  const connection = createRedis(redisUrl, { blocking: true });
  const events = new QueueEvents(queue, { connection, prefix });
  const added = new Map<string, number>();
  const active = new Map<string, number>();
  const at = (id: string) => Number(id.split('-')[0]);
  events.on('added', ({ jobId }, id) => added.set(jobId, at(id)));
  events.on('active', ({ jobId }, id) => active.has(jobId) || active.set(jobId, at(id)));
  events.on('error', () => undefined);
  await events.waitUntilReady();
  return {
    waits(jobIdPrefix, sinceMs) {
      const waits: number[] = [];
      for (const [jobId, addedAt] of added) {
        const takenAt = active.get(jobId);
        if (jobId.startsWith(jobIdPrefix) && addedAt >= sinceMs && takenAt !== undefined) waits.push(takenAt - addedAt);
      }
      return waits;
    },
    async close() {
      await events.close();
      connection.disconnect();
    },
  };
}
