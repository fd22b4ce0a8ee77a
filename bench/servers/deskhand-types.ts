// One Deskhand process of the types named in BENCH_TYPES (comma-separated, as in the Procfile),
// configured from the environment; reports its port when it serves. With BENCH_ORG=NAME it also
// makes an org of that name and reports its API key.
import { loadConfig } from '../../shared/config';
import { startDeskhand } from '../../bin/start';
import type { ProcessType } from '../../shared/queues/catalog';

const types = (process.env.BENCH_TYPES ?? 'web').split(',') as ProcessType[];
startDeskhand(loadConfig({ ...process.env, PORT: '0', LOG_LEVEL: 'silent' }), types).then(
  async (running) => {
    const org = process.env.BENCH_ORG ? await running.container.orgs.create(process.env.BENCH_ORG) : null;
    process.send?.({ port: running.web?.port ?? null, key: org?.secret });
    process.on('SIGTERM', () => void running.stop().then(() => process.exit(0)));
  },
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
