import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../../shared/logger';
import type { AuthContext } from '../../shared/api-keys/api-keys.service';
import { respondWithError } from './errors';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Per-request data in `ctx.state`: the request id, a logger scoped to it, and (on /v1) who asks. */
export class RequestState {
  auth?: AuthContext;
  private scoped: Logger | undefined;

  constructor(
    private readonly root: Logger,
    readonly requestId: string,
  ) {}

  /** Made on first use: most requests only write the access line. */
  get logger(): Logger {
    return (this.scoped ??= this.root.child({ request_id: this.requestId }));
  }
}

/** The caller's `X-Request-Id` when sane, else a new one. */
export function requestIdFrom(given: string | undefined): string {
  if (given && REQUEST_ID.test(given)) return given;
  const made = randomUUID();
  // Node builds it by some twenty concatenations, which V8 keeps as a tree (~490 B); reading a
  // character flattens it in place (~60 B). Thousands of waiting long polls each keep one.
  made.charCodeAt(0);
  return made;
}

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
