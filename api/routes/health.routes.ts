import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { ApiError } from '../../shared/errors';
import { unavailable } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';

const Health = Type.Object(
  {
    status: Type.String({ description: 'ok (/healthz) or ready (/readyz).' }),
    checks: Type.Optional(Type.Record(Type.String(), Type.String(), { description: '/readyz: postgres and redis, each ok or why it is unreachable.' })),
  },
  { title: 'Health', examples: [{ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } }] },
);

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(container: Container): RouteSpec[] {
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'healthz',
      summary: 'The process is up',
      description:
        'Answers 200 `{"status":"ok"}` as long as the process serves HTTP; it checks nothing else (use /readyz for PostgreSQL and Redis). No authentication.',
      tag: 'Health',
      auth: 'none',
      response: Health,
      errors: [],
      handler: async () => ({ status: 'ok' }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'readyz',
      summary: 'PostgreSQL and Redis are reachable (503 when not)',
      description:
        'Checks that PostgreSQL and Redis answer within 2 seconds each: 200 `{"status":"ready","checks":{…}}`, or 503 server_error with code `not_ready` and `checks` naming the one that does not answer. For load balancers; no authentication.',
      tag: 'Health',
      auth: 'none',
      response: Health,
      errors: [unavailable('not_ready', 'Not ready: a backing service is unreachable')],
      handler: async ({ ctx }) => {
        const [database, redis] = await Promise.allSettled([
          within(2000, container.db.raw('select 1')),
          within(2000, container.redis.ping()),
        ]);
        const checks = {
          postgres: database.status === 'fulfilled' ? 'ok' : `unreachable: ${(database.reason as Error).message}`,
          redis: redis.status === 'fulfilled' ? 'ok' : `unreachable: ${(redis.reason as Error).message}`,
        };
        if (database.status === 'fulfilled' && redis.status === 'fulfilled') return { status: 'ready', checks };
        ctx.status = 503;
        ctx.body = new ApiError('server_error', 'Not ready: a backing service is unreachable', { status: 503, code: 'not_ready', extra: { checks } }).toBody();
      },
    }),
  ];
}
