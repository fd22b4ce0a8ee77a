import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import autocannon from 'autocannon';
import { loadConfig } from '../shared/config';
import { createContainer } from '../shared/container';
import { migrateLatest } from '../shared/db/knex';
import { benchServers, cpuProfileFlags, databaseBackendsCpuMs, processCpuMs, procfileNodeFlags } from './support/processes';
import { dropRedisPrefix } from './support/redis-prefix';

/**
 * `npm run bench -- reads`: every authenticated single-object or first-page read of the API,
 * each beside a bare Koa hello-world measured in the same run (alternating rounds, as the http
 * bench does), and `GET /v1/tasks/{id}` at a fixed rate. The web process runs compiled with the
 * Procfile's web flags, as `npm start` runs it. The org is seeded through the API with real
 * processes (a worker-agent and instant computers, as in the steps bench): agents with versions,
 * sessions, completed tasks with their events; then the worker and computers stop, and only
 * the web process and the bare server share the machine with autocannon. Each list's first page
 * is also measured beside the same Koa answering that page's very object (stringified per
 * request, as the service does): the floor of an answer of that size on this machine, with no
 * key, no database and no mapping.
 */

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ROUND_SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = 50;
const FIXED_RATE = Number(process.env.BENCH_RATE ?? 2000);
const FIXED_SECONDS = Number(process.env.BENCH_FIXED_SECONDS ?? 10);
/** The reads to measure (a comma-separated part of their names), default all. */
const ONLY = process.env.BENCH_ONLY?.split(',');

interface Server {
  child: ChildProcess;
  baseUrl: string;
}

interface Round {
  rps: number;
  p50: number;
  p99: number;
  /** The server process's CPU time per request (user + system), in microseconds. */
  cpuMicros: number;
  /** The CPU time per request of the PostgreSQL backends serving the bench's database, in microseconds. */
  sqlCpuMicros: number;
  /** Bytes per response, headers included. */
  bytes: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface FixedRate {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

/**
 * `rate` requests a second, evenly spaced, for `seconds`, whatever the answers' pace (an open
 * loop, unlike autocannon's `overallRate`, which sends each connection's share of a second at
 * once and then waits). Each latency counts from when its request was due, so a request that
 * waited for a free connection or a late timer is charged for it (no coordinated omission).
 */
async function fixedRate(baseUrl: string, paths: string[], headers: Record<string, string>, rate: number, seconds: number): Promise<FixedRate> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const url = new URL(baseUrl);
  const latencies: number[] = [];
  const failures: string[] = [];
  const total = rate * seconds;
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  const send = (n: number) => {
    const due = started + (n * 1000) / rate;
    const request = new Promise<void>((resolve) => {
      const req = http.get({ host: url.hostname, port: url.port, path: paths[n % paths.length], headers, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode !== 200) failures.push(String(res.statusCode));
          latencies.push(performance.now() - due);
          resolve();
        });
      });
      req.on('error', (error) => {
        failures.push(error.message);
        resolve();
      });
    });
    inFlight.add(request);
    void request.then(() => inFlight.delete(request));
  };
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
    while (sent < due) send(sent++);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(inFlight);
  agent.destroy();
  if (failures.length) throw new Error(`fixed rate: ${failures.length} failures (${failures.slice(0, 3).join(', ')})`);
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))]!;
  return { count: latencies.length, p50: at(50), p99: at(99), max: latencies[latencies.length - 1]! };
}

export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const prefix = `bench-reads-${Date.now()}`;
  const env = {
    DATABASE_URL: databaseUrl,
    DESKHAND_REDIS_PREFIX: prefix,
    DESKHAND_SCRIPTED_MODELS: '1',
    DESKHAND_RATE_LIMIT_PER_HOUR: '10000000',
    DESKHAND_SESSIONS_PER_HOUR: '10000000',
  };
  const config = loadConfig({ ...process.env, ...env });
  const databaseName = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  await migrateLatest(databaseUrl);

  const servers = benchServers();

  try {
    const bareChild = await servers.start('bare-koa.ts', {}, procfileNodeFlags('web'));
    const bare: Server = { child: bareChild.child, baseUrl: `http://127.0.0.1:${bareChild.message.port as number}` };
    // The same Koa answering, for each list read, that read's own answer (its bytes, stringified
    // per request): what an answer of that size costs with no database, no key and no mapping.
    const sameBytesChild = await servers.start('bare-koa.ts', {}, procfileNodeFlags('web'));
    const sameBytes: Server = { child: sameBytesChild.child, baseUrl: `http://127.0.0.1:${sameBytesChild.message.port as number}` };
    // Only the web process is profiled (BENCH_PROFILE_DIR): the reads are its work.
    const webChild = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'web' }, [...procfileNodeFlags('web'), ...cpuProfileFlags()]);
    const web: Server = { child: webChild.child, baseUrl: `http://127.0.0.1:${webChild.message.port as number}` };
    const worker = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'worker-agent' }, procfileNodeFlags('worker-agent'));
    const computers = await servers.start('instant-computers.ts', {});

    const container = createContainer(config);
    const { secret } = await container.orgs.create('bench reads');
    await container.close();
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const api = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(`${web.baseUrl}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, any>;
    };

    // ---- seed: 10 agents (one with 6 versions), 20 sessions, 24 completed tasks of ~20 events each.
    process.stderr.write('reads: seeding…\n');
    for (let i = 0; i < 10; i++) await api('POST', '/v1/agents', { agent_id: `bench-${i}`, narration: false, guardrails: { max_steps: 100, confirm: [] } });
    for (let v = 0; v < 5; v++) await api('PATCH', '/v1/agents/bench-0', { instructions: `Version ${v + 2} of the bench agent.` });
    const codes: string[] = [];
    for (let i = 0; i < 20; i++) codes.push((await api('POST', '/v1/sessions', { agent_id: `bench-${i % 10}` })).code as string);
    const working = codes.slice(0, 4);
    const connected = new Promise((resolve) => computers.child.once('message', resolve));
    computers.child.send({ baseUrl: web.baseUrl, codes: working });
    await connected;
    const prompt = [...Array.from({ length: 8 }, (_, i) => `click_at ${5 + i} 5`), 'done "Clicked."'].join('\n');
    const taskIds: string[] = [];
    await Promise.all(
      working.map(async (code) => {
        for (let t = 0; t < 6; t++) {
          const id = (await api('POST', `/v1/sessions/${code}/tasks`, { prompt, metadata: { run: String(t) } })).task_id as string;
          taskIds.push(id);
          const deadline = Date.now() + 60_000;
          while ((await api('GET', `/v1/tasks/${id}`)).status !== 'completed') {
            if (Date.now() > deadline) throw new Error(`task ${id} did not complete in 60 s`);
            await sleep(50);
          }
        }
      }),
    );
    await servers.stop(computers.child);
    await servers.stop(worker.child);
    const taskId = taskIds[taskIds.length - 1]!;
    const task = await api('GET', `/v1/tasks/${taskId}`);
    const after = Math.max(0, (task.cursor as number) - 5);

    // Single objects are read in turn over all the seeded ones (each connection cycles through
    // them), as many clients reading different objects would.
    const agentIds = Array.from({ length: 10 }, (_, i) => `bench-${i}`);
    const reads: Array<[string, string[]]> = [
      ['GET /v1/me', ['/v1/me']],
      ['GET /v1/agents/{id}', agentIds.map((id) => `/v1/agents/${id}`)],
      ['GET /v1/agents', ['/v1/agents']],
      ['GET /v1/agents/{id}/versions', ['/v1/agents/bench-0/versions']],
      ['GET /v1/sessions', ['/v1/sessions']],
      ['GET /v1/sessions/{id}', codes.map((code) => `/v1/sessions/${code}`)],
      ['GET /v1/tasks?limit=5', ['/v1/tasks?limit=5']],
      ['GET /v1/tasks/{id}', taskIds.map((id) => `/v1/tasks/${id}`)],
      [`GET /v1/tasks/{id}/events?after=N`, taskIds.map((id) => `/v1/tasks/${id}/events?after=${after}`)],
      ['GET /v1/webhook', ['/v1/webhook']],
      ['GET /v1/audit_log?limit=20', ['/v1/audit_log?limit=20']],
    ];
    // The lists' first pages (kilobytes each), also measured beside Koa answering their very bytes.
    const lists = new Set(['GET /v1/agents', 'GET /v1/agents/{id}/versions', 'GET /v1/sessions', 'GET /v1/tasks?limit=5', 'GET /v1/audit_log?limit=20']);
    const measured = ONLY ? reads.filter(([name]) => ONLY.some((part) => name.includes(part))) : reads;

    const round = async (server: Server, paths: string[], seconds: number, auth: boolean): Promise<Round> => {
      const cpuBefore = processCpuMs(server.child.pid!)?.ms ?? 0;
      const sqlCpuBefore = databaseBackendsCpuMs(databaseName);
      const result = await autocannon({
        url: `${server.baseUrl}${paths[0]}`,
        requests: paths.map((path) => ({ method: 'GET', path })),
        connections: CONNECTIONS,
        duration: seconds,
        headers: auth ? headers : {},
      });
      const used = (processCpuMs(server.child.pid!)?.ms ?? 0) - cpuBefore;
      const sqlUsed = databaseBackendsCpuMs(databaseName) - sqlCpuBefore;
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${paths[0]}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
      return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, cpuMicros: (used * 1000) / result.requests.total, sqlCpuMicros: (sqlUsed * 1000) / result.requests.total, bytes: result.throughput.total / result.requests.total };
    };
    const summary = (rounds: Round[]): Round => ({
      rps: median(rounds.map((r) => r.rps)),
      p50: median(rounds.map((r) => r.p50)),
      p99: median(rounds.map((r) => r.p99)),
      cpuMicros: median(rounds.map((r) => r.cpuMicros)),
      sqlCpuMicros: median(rounds.map((r) => r.sqlCpuMicros)),
      bytes: median(rounds.map((r) => r.bytes)),
    });
    /** SQL statements the web process has sent through Knex so far (bench/servers/deskhand-types.ts). */
    const queriesSoFar = () =>
      new Promise<number>((resolve) => {
        const listener = (message: { type?: string; count?: number }) => {
          if (message.type !== 'queries') return;
          web.child.off('message', listener);
          resolve(message.count!);
        };
        web.child.on('message', listener);
        web.child.send({ type: 'queries' });
      });
    /** Statements per request, from 100 requests one after the other (an API key is verified once per half minute, not counted). */
    const queriesPerRequest = async (paths: string[]) => {
      await api('GET', paths[0]!);
      const before = await queriesSoFar();
      for (let i = 0; i < 100; i++) await api('GET', paths[i % paths.length]!);
      return ((await queriesSoFar()) - before) / 100;
    };

    await round(bare, ['/'], 2, false);
    const lines: string[] = [];
    const row = (name: string, m: Round, extra?: { ratio: number; queries: number }) =>
      `${name.padEnd(36)} ${m.rps.toFixed(0).padStart(7)} req/s   p50 ${String(m.p50).padStart(3)} ms   p99 ${String(m.p99).padStart(3)} ms   CPU ${m.cpuMicros.toFixed(0).padStart(4)} µs/req   PostgreSQL ${m.sqlCpuMicros.toFixed(0).padStart(4)} µs/req   ${m.bytes.toFixed(0).padStart(5)} B/resp` +
      (extra === undefined ? '' : `   SQL/req ${extra.queries.toFixed(1)}   ratio ${extra.ratio.toFixed(2)}x`);
    /** Sets the answer of the same-bytes Koa to the read's own (its first path's). */
    const answerLike = async (path: string) => {
      const body = await api('GET', path);
      const set = new Promise((resolve) => sameBytes.child.once('message', resolve));
      sameBytes.child.send({ type: 'answer', body });
      await set;
    };
    const bareRounds: Round[] = [];
    for (const [name, paths] of measured) {
      process.stderr.write(`reads: ${name}\n`);
      const queries = await queriesPerRequest(paths);
      await round(web, paths, 1, true); // warm-up of this route's code
      const list = lists.has(name);
      if (list) await answerLike(paths[0]!);
      const rounds: Array<{ bare: Round; web: Round; same?: Round }> = [];
      for (let i = 0; i < ROUNDS; i++) {
        rounds.push({ bare: await round(bare, ['/'], ROUND_SECONDS, false), web: await round(web, paths, ROUND_SECONDS, true), ...(list ? { same: await round(sameBytes, ['/'], ROUND_SECONDS, false) } : {}) });
      }
      bareRounds.push(...rounds.map((r) => r.bare));
      const ratio = median(rounds.map((r) => r.web.rps / r.bare.rps));
      lines.push(row(name, summary(rounds.map((r) => r.web)), { ratio, queries }));
      if (list) {
        const same = summary(rounds.map((r) => r.same!));
        const sameRatio = median(rounds.map((r) => r.same!.rps / r.bare.rps));
        const ofSame = median(rounds.map((r) => r.web.rps / r.same!.rps));
        lines.push(`  Koa answering the same bytes ${same.rps.toFixed(0).padStart(7)} req/s   CPU ${same.cpuMicros.toFixed(0).padStart(4)} µs/req   ${same.bytes.toFixed(0).padStart(5)} B/resp   ratio ${sameRatio.toFixed(2)}x of hello-world; the read is ${ofSame.toFixed(2)}x of it`);
      }
    }

    // A fixed rate: latency when the process is not saturated.
    let fixed: FixedRate | null = null;
    let fixedBare: FixedRate | null = null;
    if (!ONLY || ONLY.some((part) => 'fixed'.includes(part))) {
      process.stderr.write(`reads: GET /v1/tasks/{id} at ${FIXED_RATE} req/s\n`);
      fixedBare = await fixedRate(bare.baseUrl, ['/'], {}, FIXED_RATE, FIXED_SECONDS);
      fixed = await fixedRate(web.baseUrl, taskIds.map((id) => `/v1/tasks/${id}`), headers, FIXED_RATE, FIXED_SECONDS);
    }

    console.log(`reads: ${CONNECTIONS} connections; per read ${ROUNDS} rounds of ${ROUND_SECONDS} s alternating with bare Koa; medians; web compiled with the Procfile's flags`);
    console.log(`seeded: 10 agents (bench-0 with 6 versions), 20 sessions, ${taskIds.length} completed tasks of ${task.cursor as number} events each; events read after ${after}`);
    console.log(row('bare Koa hello-world (baseline)', summary(bareRounds)));
    for (const line of lines) console.log(line);
    if (fixed && fixedBare) {
      console.log(`bare Koa at a fixed ${FIXED_RATE} req/s for ${FIXED_SECONDS} s (the same load generator): p50 ${fixedBare.p50.toFixed(1)} ms, p99 ${fixedBare.p99.toFixed(1)} ms, max ${fixedBare.max.toFixed(1)} ms`);
      console.log(
        `GET /v1/tasks/{id} at a fixed ${FIXED_RATE} req/s for ${FIXED_SECONDS} s (open loop, latency from each request's due time): ` +
          `${fixed.count} answered, p50 ${fixed.p50.toFixed(1)} ms, p99 ${fixed.p99.toFixed(1)} ms, max ${fixed.max.toFixed(1)} ms (target p99 <= 10 ms)`,
      );
    }
    console.log('target: every read >= 0.25x of bare Koa in the same run');
  } finally {
    await servers.stopAll();
    await dropRedisPrefix(config.redisUrl, prefix);
  }
}
