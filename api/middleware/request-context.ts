import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../../shared/logger';
import type { RequestState } from '../routing';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Gives each request an id (the caller's `X-Request-Id` when sane), a scoped logger, and one access-log line. */
export function requestContext(logger: Logger): Middleware {
  return async (ctx, next) => {
    const given = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(given) ? given : randomUUID();
    const state = ctx.state as RequestState;
    state.requestId = requestId;
    // The scoped logger is made on first use: most requests only write the access line.
    let scoped: Logger | undefined;
    Object.defineProperty(state, 'logger', { get: () => (scoped ??= logger.child({ request_id: requestId })), enumerable: true });
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      if (logger.isLevelEnabled('info')) {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        state.logger.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 }, 'request');
      }
    }
  };
}
