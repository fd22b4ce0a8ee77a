// One Deskhand process of the types named in BENCH_TYPES (comma-separated, as in the Procfile),
// configured from the environment; reports its port when it serves. With BENCH_ORG=NAME it also
// makes an org of that name and reports its API key. Asked `{ type: 'queries' }`, it answers
// `{ type: 'queries', count }`: the SQL statements it has sent to PostgreSQL so far.
import pg from 'pg';
import { loadConfig } from '../../shared/config';
import { startDeskhand } from '../../bin/start';
import type { ProcessType } from '../../shared/queues/catalog';

// Counted at pg's client, under Knex and prepared statements alike.
let queries = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
  queries++;
  return (query as (...args: unknown[]) => unknown).apply(this, args);
} as typeof query;

const types = (process.env.BENCH_TYPES ?? 'web').split(',') as ProcessType[];
startDeskhand(loadConfig({ ...process.env, PORT: '0', LOG_LEVEL: 'silent' }), types).then(
  async (running) => {
    process.on('message', (message: { type?: string }) => {
      if (message.type === 'queries') process.send?.({ type: 'queries', count: queries });
    });
    const org = process.env.BENCH_ORG ? await running.container.orgs.create(process.env.BENCH_ORG) : null;
    process.send?.({ port: running.web?.port ?? null, key: org?.secret });
    process.on('SIGTERM', () => void running.stop().then(() => process.exit(0)));
  },
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
