import type { IncomingMessage } from 'node:http';
import type { Context, Middleware } from 'koa';
import type { Logger } from '../../shared/logger';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from '../../shared/redis';
import { ApiError } from '../../shared/errors';
import type { RequestState } from './request-state';

/** Points a process takes from Redis at once for one address, while the address has plenty left. */
const BLOCK = 25;
/** The most points a process reserves at once for one address (when that many requests wait). */
const MAX_BLOCK = 500;
/** Local reservations kept at most (addresses); past it they are dropped, which only costs a round trip. */
const MAX_RESERVATIONS = 50_000;
/** After Redis failed to answer, how long the in-process budget stands in before Redis is asked again. */
const REDIS_PAUSE_MS = 5_000;

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

/** A per-address request budget; Koa's middleware and the long-poll routes share one. */
export interface AddressLimiter {
  /**
   * Spends a point of `address`'s budget and answers the rate-limit headers to send, at once
   * when this process holds a reserved point, else once Redis has answered; throws the 429.
   * `state.logger` is read only to warn that Redis failed (a request's logger is made on first use).
   */
  take(address: string, state: { readonly logger: Logger }): RateLimitHeaders | Promise<RateLimitHeaders>;
}

/** `X-RateLimit-Limit` and `X-RateLimit-Remaining`; none when the limiter failed and let the request through. */
export type RateLimitHeaders = Record<string, string>;

/**
 * Requests per client address per hour, counted in Redis so that every web process shares the
 * budget. To spare a Redis round trip on most requests, a process reserves a block of points
 * for an address at once and spends it locally; near the end of the budget it takes one point
 * at a time, so the limit stays exact there. Unused reserved points of a process that stops are
 * lost for the rest of that hour (at most a block per process and address). If Redis is
 * unreachable or does not answer (its commands time out), an in-process limiter with the same
 * budget stands in rather than refusing traffic (fails open), and keeps standing in for a few
 * seconds before Redis is asked again, so that a stalled Redis costs one command timeout now
 * and then, not one per request.
 */
export function rateLimitByIp(options: { redis: Redis; prefix: string; pointsPerHour: number }): AddressLimiter {
  const shared = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: `${options.prefix}:rl:ip`,
    points: options.pointsPerHour,
    duration: 3600,
  });
  const local = new RateLimiterMemory({ points: options.pointsPerHour, duration: 3600 });
  let redisPausedUntil = 0;
  /** The shared budget, or this process's while Redis fails; a refusal (RateLimiterRes) is thrown as is. */
  const limiter = {
    async consume(address: string, points: number): Promise<RateLimiterRes> {
      if (Date.now() >= redisPausedUntil) {
        try {
          return await shared.consume(address, points);
        } catch (rejection) {
          if (rejection instanceof RateLimiterRes) throw rejection;
          redisPausedUntil = Date.now() + REDIS_PAUSE_MS;
        }
      }
      return local.consume(address, points);
    },
    async reward(address: string, points: number): Promise<void> {
      await (Date.now() >= redisPausedUntil ? shared : local).reward(address, points).catch(() => undefined);
    },
  };
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

  const headers = (remaining: number): RateLimitHeaders => ({ 'X-RateLimit-Limit': limitHeader, 'X-RateLimit-Remaining': String(remaining) });

  /** Waits for a point of `address`'s budget; throws the 429. */
  async function waitForPoint(address: string, state: { readonly logger: Logger }): Promise<RateLimitHeaders> {
    try {
      return headers(await take(address));
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        throw new ApiError('rate_limit', `Too many requests: at most ${options.pointsPerHour} per hour from one address; retry in ${seconds} s`, {
          headers: { 'Retry-After': String(seconds) },
        });
      }
      state.logger.warn({ err: rejection }, 'rate limiter failed; request let through');
      return {};
    }
  }

  return {
    take(address, state) {
      // Most requests spend a point reserved earlier and go on without waiting for anything.
      const remaining = waiting.has(address) ? null : spend(address, Date.now());
      return remaining === null ? waitForPoint(address, state) : headers(remaining);
    },
  };
}

/** The client's address as Koa's `ctx.ip` gives it: with `proxy`, the first `X-Forwarded-For` entry. */
export function clientAddress(req: IncomingMessage, proxy: boolean): string {
  const forwarded = proxy ? req.headers['x-forwarded-for'] : undefined;
  const first = typeof forwarded === 'string' ? forwarded.split(',')[0]!.trim() : '';
  return first || req.socket.remoteAddress || 'unknown';
}

/** The limiter as Koa middleware, keyed by `ctx.ip`. */
export function rateLimitMiddleware(limiter: AddressLimiter): Middleware {
  const setHeaders = (ctx: Context, headers: RateLimitHeaders) => {
    for (const name in headers) ctx.set(name, headers[name]!);
  };
  return (ctx, next) => {
    const taken = limiter.take(ctx.ip || 'unknown', ctx.state as RequestState);
    // Not `await next()` in an async function: a long poll below would keep that frame for its wait.
    if (taken instanceof Promise) return taken.then((headers) => (setHeaders(ctx, headers), next()));
    setHeaders(ctx, taken);
    return next();
  };
}
