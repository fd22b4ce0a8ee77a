import type { Config } from './config';
import { createContainer, type Container } from './container';
import { QUEUE_NAMES } from './queues/catalog';
import { taskDesktopInbox } from './tasks/desktop-inbox';
import type { Gateway } from '../api/sockets/gateway';
import { desktopGateway } from '../api/sockets/desktop.gateway';
import { runnersGateway } from '../api/sockets/runners.gateway';
import type { QueueWirings } from '../workers';
import { taskStepsWiring } from '../workers/task-steps';
import { guardrailsWiring } from '../workers/guardrails';
import { webhooksWiring } from '../workers/webhooks';
import { toolCallsWiring } from '../workers/tool-calls';
import { maintenanceWiring } from '../workers/maintenance';
import { evalsWiring } from '../workers/evals';

/**
 * A process's whole wiring: its services (with the observers of task changes), the socket.io
 * gateways a web process attaches, and every queue's processors with the services each uses.
 */
export interface Composition {
  container: Container;
  /** One per socket.io namespace: `/desktop` and `/runners`. */
  gateways: readonly Gateway[];
  wirings: QueueWirings;
}

/**
 * The composition root: the one place that knows which service feeds which edge. It is the only
 * module of `shared/` that imports `api/` and `workers/`, because it composes them; `bin/start.ts`
 * only starts the process types asked for, from what this builds.
 */
export function composeDeskhand(config: Readonly<Config>, options: Parameters<typeof createContainer>[1] = {}): Composition {
  const container = createContainer(config, options);
  const { logger, loop, sessions } = container;
  // What a computer sends while its task runs goes to the task loop.
  const inboxes = [taskDesktopInbox(loop, logger.child({ scope: 'desktop-inbox' }))];
  const gateways = [desktopGateway({ sessions, logger: logger.child({ scope: 'desktop-gateway' }) }, inboxes), runnersGateway({ runners: container.runners, machines: container.machines, console: container.runnerConsole, link: container.runnerLink })];
  const evals = { machines: container.machines, startStates: container.startStateFlow, tries: container.tryFlow };
  const { webhookDelivery } = container;
  const wirings: QueueWirings = {
    [QUEUE_NAMES.taskSteps]: taskStepsWiring({ loop }),
    [QUEUE_NAMES.guardrails]: guardrailsWiring({ db: container.db, models: container.models, modelTimeoutMs: config.modelTimeoutMs, loop }),
    [QUEUE_NAMES.webhooks]: webhooksWiring({ webhookDelivery }),
    // A finished call resumes its task: the reply (or why it failed) goes to the model.
    [QUEUE_NAMES.toolCalls]: toolCallsWiring({ toolCalls: container.toolCalls, finished: (call) => loop.toolCallFinished(call) }),
    [QUEUE_NAMES.evals]: evalsWiring({ ...evals, logger: logger.child({ scope: 'worker:evals' }) }),
    [QUEUE_NAMES.maintenance]: maintenanceWiring({ sessions, loop, webhookDelivery, evals, idempotency: container.idempotency, billing: container.billing, redisWatch: container }),
  };
  return { container, gateways, wirings };
}
