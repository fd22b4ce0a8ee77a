import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { loadConfig } from '../shared/config';
import { migrateLatest } from '../shared/db/knex';
import { forkServer, processCpuMs, procfileNodeFlags } from './support/processes';
import { dropRedisPrefix } from './support/redis-prefix';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = 50;
/** The authenticated GET measured: `GET /v1/me` goes through every middleware (request id, rate
 * limit in Redis, API-key authentication, routing, validation) and reads nothing else. */
const PATH = process.env.BENCH_PATH ?? '/v1/me';

interface Server {
  child: ChildProcess;
  url: string;
  headers: Record<string, string>;
}

interface Round {
  rps: number;
  p50: number;
  p99: number;
  /** The server process's CPU time per request (user + system), in microseconds. */
  cpuMicros: number;
}

/** Both servers run with the Node flags of the Procfile's web process, as production does. */
function startServer(file: string, env: Record<string, string>, urlPath: string): Promise<Server> {
  const child = forkServer(file, env, procfileNodeFlags('web'));
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number; key?: string }) =>
      resolve({ child, url: `http://127.0.0.1:${message.port}${urlPath}`, headers: message.key ? { authorization: `Bearer ${message.key}` } : {} }),
    );
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
  });
}

async function round(server: Server, seconds: number): Promise<Round> {
  const before = (processCpuMs(server.child.pid!)?.ms ?? 0);
  const result = await autocannon({ url: server.url, connections: CONNECTIONS, duration: seconds, headers: server.headers });
  const used = (processCpuMs(server.child.pid!)?.ms ?? 0) - before;
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${server.url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, cpuMicros: (used * 1000) / result.requests.total };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Authenticated GET through the full middleware stack beside a bare Koa hello-world. Both
 * servers run at once and are measured in alternating short rounds, so that a change in what
 * else the machine does shows in both; the figures are the medians of the rounds.
 */
export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const env = { DATABASE_URL: databaseUrl, DESKHAND_REDIS_PREFIX: `bench-http-${Date.now()}` };
  const config = loadConfig(env);
  await migrateLatest(databaseUrl);

  const bare = await startServer('bare-koa.ts', env, '/');
  // The real web process: every middleware, the rate limiter in Redis (its budget out of the way), key authentication.
  const web = await startServer('deskhand-types.ts', { ...env, BENCH_TYPES: 'web', BENCH_ORG: 'bench http', DESKHAND_RATE_LIMIT_PER_HOUR: '10000000' }, PATH);
  try {
    // Warm-up: both servers' code paths optimised before anything counts.
    await round(bare, 2);
    await round(web, 2);
    const rounds: { bare: Round; web: Round }[] = [];
    for (let i = 0; i < ROUNDS; i++) rounds.push({ bare: await round(bare, ROUND_SECONDS), web: await round(web, ROUND_SECONDS) });

    const summary = (pick: (r: { bare: Round; web: Round }) => Round) => ({
      rps: median(rounds.map((r) => pick(r).rps)),
      p50: median(rounds.map((r) => pick(r).p50)),
      p99: median(rounds.map((r) => pick(r).p99)),
      cpuMicros: median(rounds.map((r) => pick(r).cpuMicros)),
    });
    const baseline = summary((r) => r.bare);
    const full = summary((r) => r.web);
    const row = (name: string, m: Round) =>
      `${name.padEnd(42)} ${m.rps.toFixed(0).padStart(7)} req/s   p50 ${String(m.p50).padStart(3)} ms   p99 ${String(m.p99).padStart(3)} ms   server CPU ${m.cpuMicros.toFixed(0).padStart(4)} µs/req`;
    console.log(`http: ${CONNECTIONS} connections; ${ROUNDS} rounds of ${ROUND_SECONDS} s per server, alternating; medians`);
    for (const [i, r] of rounds.entries()) {
      console.log(`  round ${i + 1}: bare ${r.bare.rps.toFixed(0)} req/s, full ${r.web.rps.toFixed(0)} req/s, ratio ${(r.web.rps / r.bare.rps).toFixed(2)}x`);
    }
    console.log(row('bare Koa hello-world (baseline)', baseline));
    console.log(row(`GET ${PATH} (full middleware stack)`, full));
    const ratios = rounds.map((r) => r.web.rps / r.bare.rps);
    console.log(`ratio: ${median(ratios).toFixed(2)}x of baseline (median of the rounds' ratios; target >= 0.60x)`);
  } finally {
    bare.child.kill();
    web.child.kill();
    await dropRedisPrefix(config.redisUrl, env.DESKHAND_REDIS_PREFIX);
  }
}
