import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../shared/config';
import { migrateLatest } from '../shared/db/knex';

const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 50;
/** The authenticated GET measured: `GET /v1/me` goes through every middleware (request id, rate
 * limit in Redis, API-key authentication, routing, validation) and reads nothing else. */
const PATH = process.env.BENCH_PATH ?? '/v1/me';

function startServer(file: string, env: Record<string, string>): Promise<{ child: ChildProcess; port: number; key?: string }> {
  const child = fork(path.join(__dirname, 'servers', file), [], { execArgv: ['--import', 'tsx'], env: { ...process.env, ...env }, stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number; key?: string }) => resolve({ child, ...message }));
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
  });
}

async function measure(url: string, headers: Record<string, string>) {
  // A short warm-up, then the measured run.
  await autocannon({ url, connections: CONNECTIONS, duration: 2, headers });
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_SECONDS, headers });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

/** Authenticated GET through the full middleware stack beside a bare Koa hello-world. */
export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const env = { DATABASE_URL: databaseUrl, DESKHAND_REDIS_PREFIX: `bench-${Date.now()}` };
  loadConfig(env);
  await migrateLatest(databaseUrl);

  const bare = await startServer('bare-koa.ts', env);
  const baseline = await measure(`http://127.0.0.1:${bare.port}/`, {});
  bare.child.kill();

  const web = await startServer('deskhand-web.ts', env);
  const full = await measure(`http://127.0.0.1:${web.port}${PATH}`, { authorization: `Bearer ${web.key}` });
  web.child.kill();

  const row = (name: string, m: { rps: number; p50: number; p99: number }) =>
    `${name.padEnd(46)} ${m.rps.toFixed(0).padStart(8)} req/s   p50 ${String(m.p50).padStart(3)} ms   p99 ${String(m.p99).padStart(3)} ms`;
  console.log(`http: ${CONNECTIONS} connections, ${DURATION_SECONDS} s each, server and load generator in separate processes`);
  console.log(row('bare Koa hello-world (baseline)', baseline));
  console.log(row(`GET ${PATH} (full middleware stack)`, full));
  console.log(`ratio: ${(full.rps / baseline.rps).toFixed(2)}x of baseline (target >= 0.60x)`);
}
