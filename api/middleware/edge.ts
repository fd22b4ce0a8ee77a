import type { Middleware } from 'koa';
import type { Logger } from '../../shared/logger';
import { respondWithError } from './errors';
import { RequestState, requestIdFrom } from './request-state';

/**
 * The outermost middleware: gives each request its id (the caller's `X-Request-Id` when sane),
 * turns anything thrown below into the spec's error response, and writes one access-log line.
 *
 * It chains on `next()`'s promise rather than `await` it (as does the rate limiter's waiting
 * path): a request may wait below it for a long time, and a suspended async function keeps its
 * frame, registers and promise alive all that time (about 0.4 KB each). Long polls themselves
 * are served beside Koa (api/long-polls.ts), but a HEAD or another spelling of their path comes
 * this way and waits as long.
 */
export function edge(logger: Logger): Middleware {
  return (ctx, next) => {
    const state = new RequestState(logger, requestIdFrom(ctx.get('x-request-id')));
    ctx.state = state;
    ctx.set('X-Request-Id', state.requestId);
    const logging = logger.isLevelEnabled('info');
    const started = logging ? performance.now() : 0;
    const log = () => {
      if (!logging) return;
      const ms = Math.round((performance.now() - started) * 10) / 10;
      state.logger.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms }, 'request');
    };
    return next().then(log, (caught: unknown) => {
      respondWithError(ctx, caught);
      log();
    });
  };
}
