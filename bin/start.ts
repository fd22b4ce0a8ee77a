import type { Config } from '../shared/config';
import type { Clock } from '../shared/clock';
import type { HostResolver } from '../shared/http';
import type { Logger } from '../shared/logger';
import type { Container } from '../shared/container';
import type { TaskChangeObserver } from '../shared/tasks/task-change';
import type { TryFlowDeps } from '../shared/test-runs/try-flow';
import { composeDeskhand } from '../shared/composition-root';
import { PROCESS_TYPES, type ProcessType, type WorkerType } from '../shared/queues/catalog';
import { startWeb, type WebServer } from '../api/server';
import { startWorkers, type QueueWirings } from '../workers';
import type { RunningWorker } from '../workers/runtime';

export interface RunningDeskhand {
  container: Container;
  /** Every queue's wiring from the composition root (also those of types not started here). */
  wirings: QueueWirings;
  web: WebServer | null;
  workers: RunningWorker[];
  /**
   * Ordered shutdown under `config.shutdownTimeoutMs`: stop intake (HTTP and job fetching),
   * let running jobs finish, then close queues, Redis and the database. Past the deadline,
   * running jobs are abandoned (the reconcile sweep fails their tasks) and connections dropped.
   */
  stop(): Promise<{ clean: boolean }>;
}

/** Starts the given process types in this process; `npm start` runs them all. */
export async function startDeskhand(
  config: Readonly<Config>,
  types: readonly ProcessType[] = PROCESS_TYPES,
  options: { port?: number; validateResponses?: boolean; clock?: Clock; hostResolver?: HostResolver; logger?: Logger; observers?: readonly TaskChangeObserver[]; judge?: TryFlowDeps['judge'] } = {},
): Promise<RunningDeskhand> {
  const { container, gateways, wirings } = composeDeskhand(config, { clock: options.clock, hostResolver: options.hostResolver, logger: options.logger, observers: options.observers, judge: options.judge });
  const web = types.includes('web') ? await startWeb(container, { port: options.port, validateResponses: options.validateResponses, gateways }) : null;
  const workers = await startWorkers(container, wirings, types.filter((type): type is WorkerType => type !== 'web'));
  container.logger.info({ types, port: web?.port }, 'deskhand started');

  let stopping: Promise<{ clean: boolean }> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      const log = container.logger;
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), config.shutdownTimeoutMs);
      });
      const drained = Promise.all([web?.close(), ...workers.map((worker) => worker.close())]).then(() => 'drained' as const);
      const outcome = await Promise.race([drained, deadline]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        log.warn({ timeout_ms: config.shutdownTimeoutMs }, 'shutdown deadline passed; abandoning running jobs');
        web?.server.closeAllConnections();
        for (const worker of workers) worker.abandon();
      }
      await container.close();
      log.info({ clean: outcome === 'drained' }, 'deskhand stopped');
      return { clean: outcome === 'drained' };
    })());
  return { container, wirings, web, workers, stop };
}
