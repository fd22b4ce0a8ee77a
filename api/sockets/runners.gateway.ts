import { Type, type Static } from '@sinclair/typebox';
import { RUNNERS_NAMESPACE, runnerRoom } from '../../shared/runners/runner-link';
import { RunnerRefused, type RunnerConnection, type RunnersService } from '../../shared/runners/runners.service';
import { invalidRequest } from '../../shared/errors';
import type { Gateway } from './gateway';

/** The runner protocol's events (docs/runners.md, "The gateway protocol"). */
export const RunnerEvents = {
  hello: 'runner:hello',
  heartbeat: 'runner:heartbeat',
} as const;

const Name = (max: number, description: string) => Type.String({ minLength: 1, maxLength: max, description });

const Hello = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200, description: 'The runner token (`dhr_…`) from POST /v1/runners or the CLI.' }),
  provider: Name(100, 'The hypervisor it drives, e.g. `simulated`.'),
  version: Name(100, 'The runner\'s own version.'),
  labels: Type.Array(Name(100, 'A label'), { maxItems: 50, description: 'Where machines can run.' }),
  slots: Type.Integer({ minimum: 0, maximum: 10_000, description: 'Machines it runs at once.' }),
  images: Type.Array(Name(200, 'An image id'), { maxItems: 200, description: 'Image ids it has.' }),
  busy: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000, description: 'Machines running now (after a reconnect); 0 when left out.' })),
});

/**
 * The `/runners` namespace (docs/runners.md): a runner says hello with its token and what it
 * has, then heartbeats. Everything it changes goes through `RunnersService`, which keeps it in
 * PostgreSQL for every web process to read.
 */
export function runnersGateway(deps: { runners: RunnersService }): Gateway<RunnerConnection> {
  const { runners } = deps;
  return {
    namespace: RUNNERS_NAMESPACE,
    name: 'runners',
    peer: 'The runner',
    helloEvent: RunnerEvents.hello,
    helloSchema: Hello,
    logFields: (data) => ({ runner: data.runnerId }),

    async authenticate(message) {
      // The gateway checked it against `Hello`.
      const hello = message as Static<typeof Hello>;
      try {
        const connection = await runners.connect(hello.token, {
          provider: hello.provider,
          version: hello.version,
          labels: hello.labels,
          slots: hello.slots,
          busy: hello.busy ?? 0,
          images: hello.images,
        });
        const reply = { ok: true as const, runner_id: connection.runnerId, name: connection.name, scope: connection.scope, heartbeat_ms: runners.heartbeatMs };
        return { ok: true, data: connection, reply };
      } catch (error) {
        if (error instanceof RunnerRefused) return { ok: false, code: error.code, message: error.message };
        throw error;
      }
    },

    // One connection per runner: an older one (or a second process with the same token) is closed.
    room: (data) => runnerRoom(data.runnerId),

    // In its room, a revocation committing from now on reaches this connection; one committed
    // before is seen here.
    async admit({ data }) {
      if (!(await runners.stillHolds(data))) return { ok: false, code: 'revoked', message: `Runner ${data.runnerId} has been deleted; its token no longer works` };
    },

    events: [RunnerEvents.heartbeat],
    async receive(data, _event, payload) {
      const busy = (payload as { busy?: unknown } | null | undefined)?.busy;
      if (busy !== undefined && !(Number.isInteger(busy) && (busy as number) >= 0 && (busy as number) <= 10_000)) {
        throw invalidRequest('busy must be an integer from 0 to 10000');
      }
      await runners.heartbeat(data, busy as number | undefined);
      return { ok: true };
    },

    gone: (data) => runners.gone(data),
  };
}
