import type { Context, Middleware, Next } from 'koa';
import { koaBody } from 'koa-body';
import { ApiError, invalidRequest } from '../../shared/errors';

export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/** The request body as it came, on a path whose parser kept it (koa-body's `includeUnparsed`: `ctx.request.rawBody`); undefined elsewhere. */
export function rawBodyOf(ctx: Context): Buffer | undefined {
  const raw = (ctx.request as unknown as { rawBody?: unknown }).rawBody;
  return typeof raw === 'string' ? Buffer.from(raw, 'utf8') : undefined;
}

/**
 * Parses JSON request bodies up to `limitBytes` (routes may allow more through `largeBodyPaths`)
 * and refuses bodies of any other content type, so that a wrong `Content-Type` is a clear 400.
 */
export function jsonBody(options: {
  limitBytes: number;
  largeLimitBytes: number;
  isLargeBodyPath: (path: string) => boolean;
  /** Paths whose body is also kept as it came (`rawBodyOf`): a payment provider's signed webhooks. */
  keepsRawBody?: (path: string) => boolean;
}): Middleware {
  const parsers = {
    normal: koaBody({ json: true, jsonStrict: true, jsonLimit: options.limitBytes, urlencoded: false, text: false, multipart: false }),
    large: koaBody({ json: true, jsonStrict: true, jsonLimit: options.largeLimitBytes, urlencoded: false, text: false, multipart: false }),
    raw: koaBody({ json: true, jsonStrict: true, jsonLimit: options.limitBytes, urlencoded: false, text: false, multipart: false, includeUnparsed: true }),
  };
  async function parseThenNext(ctx: Context, next: Next): Promise<void> {
    if (!ctx.is('application/json')) throw invalidRequest('Content-Type must be application/json');
    const parser = options.keepsRawBody?.(ctx.path) ? parsers.raw : options.isLargeBodyPath(ctx.path) ? parsers.large : parsers.normal;
    // Parse first, then call the routes outside the try, so that only parsing errors are read as such.
    try {
      await parser(ctx, async () => undefined);
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status === 413) throw new ApiError('invalid_request', `Request body is too large (limit ${limitText(ctx.path)})`, { status: 413 });
      throw invalidRequest('Request body is not valid JSON');
    }
    await next();
  }
  // Requests without a body (every GET) pass straight on.
  return (ctx, next) => {
    if (ctx.method === 'GET' || ctx.method === 'HEAD' || ctx.method === 'DELETE' || ctx.method === 'OPTIONS') return next();
    const length = Number(ctx.get('content-length') || 0);
    const hasBody = length > 0 || Boolean(ctx.get('transfer-encoding'));
    return hasBody ? parseThenNext(ctx, next) : next();
  };
  function limitText(path: string): string {
    const bytes = options.isLargeBodyPath(path) ? options.largeLimitBytes : options.limitBytes;
    return `${Math.round(bytes / 1024 / 1024)} MB`;
  }
}
