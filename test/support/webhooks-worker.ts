/**
 * A delivery worker in its own process, for fault tests: builds a container from the
 * environment (the parent passes `testEnv(...)`) and runs only the `webhooks` queue. Tells the
 * parent `{ ready: true }` once it takes jobs. SIGTERM stops it in order; SIGKILL is the test.
 */
import { loadConfig } from '../../shared/config';
import { createContainer } from '../../shared/container';
import { startQueueWorker } from '../../workers/runtime';
import { webhooksWiring } from '../../workers/webhooks';

const container = createContainer(loadConfig());
const running = startQueueWorker(container, webhooksWiring(container));

running.worker.waitUntilReady().then(
  () => process.send?.({ ready: true }),
  (error: unknown) => {
    process.stderr.write(`webhooks worker failed to start: ${String(error)}\n`);
    process.exit(1);
  },
);

process.once('SIGTERM', () => {
  running
    .close()
    .then(() => container.close())
    .finally(() => process.exit(0));
});
