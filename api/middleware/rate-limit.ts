import type { Middleware } from 'koa';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from '../../shared/redis';
import { ApiError } from '../../shared/errors';
import type { RequestState } from '../routing';

/**
 * Requests per client address per hour, counted in Redis so that every web process shares the
 * budget. If Redis is unreachable, an in-process limiter with the same budget stands in rather
 * than refusing all traffic.
 */
export function rateLimitByIp(options: { redis: Redis; prefix: string; pointsPerHour: number }): Middleware {
  const limiter = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: `${options.prefix}:rl:ip`,
    points: options.pointsPerHour,
    duration: 3600,
    insuranceLimiter: new RateLimiterMemory({ points: options.pointsPerHour, duration: 3600 }),
  });
  return async (ctx, next) => {
    try {
      const result = await limiter.consume(ctx.ip || 'unknown');
      ctx.set('X-RateLimit-Limit', String(options.pointsPerHour));
      ctx.set('X-RateLimit-Remaining', String(result.remainingPoints));
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        throw new ApiError('rate_limit', `Too many requests: at most ${options.pointsPerHour} per hour from one address; retry in ${seconds} s`, {
          headers: { 'Retry-After': String(seconds) },
        });
      }
      (ctx.state as RequestState).logger.warn({ err: rejection }, 'rate limiter failed; request let through');
    }
    await next();
  };
}
