import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from './redis';
import { ApiError } from './errors';

/**
 * A named per-key budget (e.g. sessions created per org per hour), for services to consume.
 * While Redis does not answer, a budget of this process alone stands in (fails open, like the
 * per-address limit) rather than refusing the work.
 */
export function createKeyedLimiter(options: { redis: Redis; prefix: string; name: string; points: number; durationSeconds: number }) {
  const limiter = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: `${options.prefix}:rl:${options.name}`,
    points: options.points,
    duration: options.durationSeconds,
    insuranceLimiter: new RateLimiterMemory({ points: options.points, duration: options.durationSeconds }),
  });
  return async (key: string, what: string): Promise<void> => {
    try {
      await limiter.consume(key);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        throw new ApiError('rate_limit', `Too many ${what}: at most ${options.points} per hour; retry in ${seconds} s`, {
          headers: { 'Retry-After': String(seconds) },
        });
      }
      throw rejection;
    }
  };
}
