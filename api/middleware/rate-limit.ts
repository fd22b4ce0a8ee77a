import type { Context, Middleware } from 'koa';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from '../../shared/redis';
import { ApiError } from '../../shared/errors';
import type { RequestState } from './edge';

/** Points a process takes from Redis at once for one address, while the address has plenty left. */
const BLOCK = 25;
/** The most points a process reserves at once for one address (when that many requests wait). */
const MAX_BLOCK = 500;
/** Local reservations kept at most (addresses); past it they are dropped, which only costs a round trip. */
const MAX_RESERVATIONS = 50_000;

interface Waiter {
  resolve(remaining: number): void;
  reject(rejection: unknown): void;
}

interface Reservation {
  /** Points taken from the shared budget and not yet used by this process. */
  left: number;
  /** What the shared budget had left after the reservation (for the header). */
  remaining: number;
  /** When the hour window of the shared counter ends. */
  resetAt: number;
}

/**
 * Requests per client address per hour, counted in Redis so that every web process shares the
 * budget. To spare a Redis round trip on most requests, a process reserves a block of points
 * for an address at once and spends it locally; near the end of the budget it takes one point
 * at a time, so the limit stays exact there. Unused reserved points of a process that stops are
 * lost for the rest of that hour (at most a block per process and address). If Redis is
 * unreachable, an in-process limiter with the same budget stands in rather than refusing traffic.
 */
export function rateLimitByIp(options: { redis: Redis; prefix: string; pointsPerHour: number }): Middleware {
  const limiter = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: `${options.prefix}:rl:ip`,
    points: options.pointsPerHour,
    duration: 3600,
    insuranceLimiter: new RateLimiterMemory({ points: options.pointsPerHour, duration: 3600 }),
  });
  const reservations = new Map<string, Reservation>();
  /** Requests of an address waiting for points from Redis, first come first served. */
  const waiting = new Map<string, Waiter[]>();
  const limitHeader = String(options.pointsPerHour);

  /** Spends a locally reserved point of `address`, or answers null when none is left. */
  function spend(address: string, now: number): number | null {
    const held = reservations.get(address);
    if (!held || held.left <= 0 || held.resetAt <= now) return null;
    held.left--;
    return held.remaining + held.left;
  }

  /** Takes points of `address` from the shared budget: enough for `wanted` requests while there is plenty, else one. */
  async function reserve(address: string, now: number, wanted: number): Promise<void> {
    const held = reservations.get(address);
    const known = held && held.resetAt > now ? held.remaining : options.pointsPerHour;
    const block = known < BLOCK * 4 ? 1 : Math.min(Math.max(BLOCK, wanted), MAX_BLOCK, Math.floor(known / 4));
    let taken = block;
    let result: RateLimiterRes;
    try {
      result = await limiter.consume(address, block);
    } catch (rejection) {
      if (block === 1 || !(rejection instanceof RateLimiterRes)) throw rejection;
      // Other processes spent the budget meanwhile: give the block back, take one point.
      await limiter.reward(address, block);
      result = await limiter.consume(address, 1);
      taken = 1;
    }
    if (reservations.size >= MAX_RESERVATIONS) reservations.clear();
    reservations.set(address, { left: taken, remaining: result.remainingPoints, resetAt: now + result.msBeforeNext });
  }

  /**
   * Serves the waiting requests of `address` in order, one reservation in flight at a time, each
   * sized for the requests waiting then; a refusal goes to every request still waiting.
   */
  async function serve(address: string, queue: Waiter[]): Promise<void> {
    while (queue.length > 0) {
      const now = Date.now();
      let left: number | null;
      while (queue.length > 0 && (left = spend(address, now)) !== null) queue.shift()!.resolve(left);
      if (queue.length === 0) break;
      try {
        await reserve(address, now, queue.length);
      } catch (rejection) {
        for (const waiter of queue.splice(0)) waiter.reject(rejection);
      }
    }
    waiting.delete(address);
  }

  /** One point of `address`'s budget: what is left of it after this request, or a rejection. */
  function take(address: string): Promise<number> {
    return new Promise((resolve, reject) => {
      let queue = waiting.get(address);
      if (!queue) waiting.set(address, (queue = []));
      queue.push({ resolve, reject });
      if (queue.length === 1) void serve(address, queue);
    });
  }

  const setHeaders = (ctx: Context, remaining: number) => {
    ctx.set('X-RateLimit-Limit', limitHeader);
    ctx.set('X-RateLimit-Remaining', String(remaining));
  };

  /** Waits for a point of `address`'s budget and sets the headers; throws the 429. */
  async function waitForPoint(ctx: Context, address: string): Promise<void> {
    try {
      setHeaders(ctx, await take(address));
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        throw new ApiError('rate_limit', `Too many requests: at most ${options.pointsPerHour} per hour from one address; retry in ${seconds} s`, {
          headers: { 'Retry-After': String(seconds) },
        });
      }
      (ctx.state as RequestState).logger.warn({ err: rejection }, 'rate limiter failed; request let through');
    }
  }

  // Most requests spend a point reserved earlier and go on without waiting for anything.
  return (ctx, next) => {
    const address = ctx.ip || 'unknown';
    const remaining = waiting.has(address) ? null : spend(address, Date.now());
    // Not `await next()` in an async function: a long poll below would keep that frame for its wait.
    if (remaining === null) return waitForPoint(ctx, address).then(() => next());
    setHeaders(ctx, remaining);
    return next();
  };
}
