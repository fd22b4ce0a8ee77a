/**
 * Per-request data in `ctx.state`, in a module of its own: the edge middleware makes it, the error
 * mapper, the rate limiter, the routes and the long polls read it.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../shared/logger';
import type { AuthContext } from '../../shared/api-keys/api-keys.service';

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
