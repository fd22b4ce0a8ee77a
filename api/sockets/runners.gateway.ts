import { Type, type Static } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { RUNNERS_NAMESPACE, RunnerEvents, runnerRoom, type RunnerLink } from '../../shared/runners/runner-link';
import { RunnerRefused, type RunnerConnection, type RunnersService } from '../../shared/runners/runners.service';
import { invalidRequest } from '../../shared/errors';
import type { MachinesService } from '../../shared/machines/machines.service';
import type { RunnerConsole } from '../../shared/runners/runner-console';
import type { Gateway } from './gateway';



const Name = (max: number, description: string) => Type.String({ minLength: 1, maxLength: max, description });

const Hello = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200, description: 'The runner token (`dhr_…`) from POST /v1/runners or the CLI.' }),
  provider: Name(100, 'The hypervisor it drives, e.g. `simulated`.'),
  version: Name(100, 'The runner\'s own version.'),
  labels: Type.Array(Name(100, 'A label'), { maxItems: 50, description: 'Where machines can run.' }),
  slots: Type.Integer({ minimum: 0, maximum: 10_000, description: 'Machines it runs at once.' }),
  images: Type.Array(Name(200, 'An image id'), { maxItems: 200, description: 'Image ids it has.' }),
  busy: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000, description: 'Machines running now (after a reconnect); 0 when left out.' })),
  machines: Type.Optional(Type.Array(Name(100, 'A machine id'), { maxItems: 10_000, description: 'The machines it runs now (after a reconnect), by id.' })),
});

/** A runner's answer to a command (docs/runners.md, "Machines and commands"). */
const Done = Type.Union([
  Type.Object({ command_id: Name(100, 'The command answered'), ok: Type.Literal(true), result: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }),
  Type.Object({
    command_id: Name(100, 'The command answered'),
    ok: Type.Literal(false),
    error: Type.Object({ code: Name(100, 'Why, in a word'), message: Type.String({ maxLength: 20_000 }) }),
    result: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'What it still has to say (a timed-out script\'s output so far).' })),
  }),
]);

const ajv = new Ajv({ strict: false });
const validDone = ajv.compile(Done);

/**
 * The `/runners` namespace (docs/runners.md): a runner says hello with its token and what it
 * has, heartbeats, and answers the commands the service sends it. Everything it changes goes
 * through `RunnersService` and `MachinesService`, which keep it in PostgreSQL for every process.
 */
export function runnersGateway(deps: { runners: RunnersService; machines: MachinesService; console: RunnerConsole; link: RunnerLink }): Gateway<RunnerConnection & { machines: readonly string[] }> {
  const { runners, machines } = deps;
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
        return { ok: true, data: { ...connection, machines: hello.machines ?? [] }, reply };
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

    // What it runs is reconciled with what the service placed on it; what it missed is sent again.
    welcome: ({ data }) => machines.runnerConnected(data.runnerId, data.machines),

    // This process's commands and console requests go through its own namespace (a runner
    // connected here hears them at once).
    setUp(namespace) {
      deps.console.attach(namespace);
      deps.link.attach(namespace);
    },

    events: [RunnerEvents.heartbeat, RunnerEvents.done],
    async receive(data, event, payload) {
      if (event === RunnerEvents.done) {
        if (!validDone(payload)) throw invalidRequest(`runner:done ${ajv.errorsText(validDone.errors, { dataVar: 'answer' })}`);
        const answer = payload as Static<typeof Done>;
        await machines.answered(data.runnerId, answer.ok ? { command_id: answer.command_id, ok: true, result: answer.result ?? {} } : answer);
        return { ok: true };
      }
      const busy = (payload as { busy?: unknown } | null | undefined)?.busy;
      if (busy !== undefined && !(Number.isInteger(busy) && (busy as number) >= 0 && (busy as number) <= 10_000)) {
        throw invalidRequest('busy must be an integer from 0 to 10000');
      }
      await runners.heartbeat(data, busy as number | undefined);
      return { ok: true };
    },

    async gone(data) {
      await runners.gone(data);
      await machines.runnerGone(data.runnerId);
    },
  };
}
