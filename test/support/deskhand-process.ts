/**
 * Deskhand process types in a child process, for fault tests: `deskhand-process.ts worker-agent`
 * starts them from the environment the parent passes (`testEnv(...)`) and tells the parent
 * `{ ready: true }`. SIGKILL is what the tests do to it.
 */
import { loadConfig } from '../../shared/config';
import { PROCESS_TYPES, type ProcessType } from '../../shared/queues/catalog';
import { startDeskhand } from '../../bin/start';

const types = process.argv.slice(2).filter((type): type is ProcessType => (PROCESS_TYPES as readonly string[]).includes(type));
startDeskhand(loadConfig(), types).then(
  async (running) => {
    await Promise.all(running.workers.map((worker) => worker.worker.waitUntilReady()));
    process.send?.({ ready: true });
    process.once('SIGTERM', () => running.stop().finally(() => process.exit(0)));
  },
  (error: unknown) => {
    process.stderr.write(`deskhand process failed to start: ${String(error)}\n`);
    process.exit(1);
  },
);
