import { createRedis, deleteKeysByPrefix } from '../../shared/redis';

/** Removes a bench run's Redis keys (its queues' jobs, rate-limit counters, socket.io keys). */
export async function dropRedisPrefix(redisUrl: string, prefix: string): Promise<void> {
  const redis = createRedis(redisUrl);
  try {
    await deleteKeysByPrefix(redis, prefix);
  } finally {
    redis.disconnect();
  }
}
