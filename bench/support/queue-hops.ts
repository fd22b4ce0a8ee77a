import { createRedis } from '../../shared/redis';

/** Events read from the stream at a time. */
const PAGE = 1_000;

/**
 * How long a queue's jobs wait between being added and being taken by a worker, read from
 * BullMQ's own event stream (each entry's id is Redis's clock in ms) once a phase is over: the
 * bench neither adds to the path it watches nor wakes up on every event while it runs (its
 * process also holds the runner). `waits(prefix, mark)` gives the waits of the jobs added
 * after the mark whose id starts with `jobIdPrefix`; the stream keeps BullMQ's last 10,000 events.
 */
export function watchQueueHops(redisUrl: string, prefix: string, queue: string): {
  waits(jobIdPrefix: string, sinceMs: number): Promise<number[]>;
  close(): Promise<void>;
} {
  const redis = createRedis(redisUrl);
  const stream = `${prefix}:${queue}:events`;
  return {
    async waits(jobIdPrefix, sinceMs) {
      const added = new Map<string, number>();
      const active = new Map<string, number>();
      let from = `${sinceMs}-0`;
      for (;;) {
        const entries = await redis.xrange(stream, from, '+', 'COUNT', PAGE);
        for (const [id, fields] of entries) {
          const field = (name: string) => fields[fields.indexOf(name) + 1];
          const jobId = field('jobId');
          if (!jobId?.startsWith(jobIdPrefix)) continue;
          const at = Number(id.split('-')[0]);
          if (field('event') === 'added') added.set(jobId, at);
          if (field('event') === 'active' && !active.has(jobId)) active.set(jobId, at);
        }
        if (entries.length < PAGE) break;
        from = `(${entries[entries.length - 1]![0]}`;
      }
      return [...added].flatMap(([jobId, addedAt]) => (active.has(jobId) ? [active.get(jobId)! - addedAt] : []));
    },
    async close() {
      await redis.quit();
    },
  };
}
