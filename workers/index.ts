import { WORKER_TYPES, type QueueName, type WorkerType } from '../shared/queues/catalog';
import { startQueueWorker, type QueueWiring, type RunningWorker, type WorkerRuntime } from './runtime';

/** Every queue's wiring, as the composition root builds them from its services. */
export type QueueWirings = Readonly<Record<QueueName, QueueWiring>>;

/** Starts the workers of the given process types from the wirings given, each with what runs alongside it. */
export async function startWorkers(runtime: WorkerRuntime, wirings: QueueWirings, types: readonly WorkerType[]): Promise<RunningWorker[]> {
  const running: RunningWorker[] = [];
  for (const type of types) {
    for (const queue of WORKER_TYPES[type]) {
      const wiring = wirings[queue];
      const worker = startQueueWorker(runtime, wiring);
      running.push(wiring.alongside ? withAlongside(worker, await wiring.alongside()) : worker);
    }
  }
  return running;
}

/** A worker whose companion (the clock's Redis watch, worker-evals' deadline look) stops with it; closing waits for both. */
function withAlongside(worker: RunningWorker, alongside: { stop(): void | Promise<void> }): RunningWorker {
  return {
    get worker() {
      return worker.worker;
    },
    close: async () => {
      await Promise.all([alongside.stop(), worker.close()]);
    },
    abandon: () => {
      void alongside.stop();
      worker.abandon();
    },
  };
}
