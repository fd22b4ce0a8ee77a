// bench/servers/deskhand-types.ts with every SQL statement it sends written, one a line with the
// time it was sent (ms), to the file BENCH_SQL_LOG: to read where a bench's path spends its
// statements (`BENCH_SQL_LOG=DIR npm run bench -- machines` writes one file per process type).
import fs from 'node:fs';
import pg from 'pg';

const file = process.env.BENCH_SQL_LOG;
if (file) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function loggedQuery(this: pg.Client, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string } | undefined)?.text ?? '?');
    fs.appendFileSync(file, `${(performance.timeOrigin + performance.now()).toFixed(1)} ${text.replace(/\s+/g, ' ').slice(0, 300)}\n`);
    return (query as (...args: unknown[]) => unknown).apply(this, args);
  } as typeof query;
}

// Loaded after the patch above (a static import would run first).
require('./deskhand-types');
