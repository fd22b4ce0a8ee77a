import { createContainer } from '../shared/container';
import { benchWorld } from './support/bench-world';
import { benchServers, cpuProfileFlags, procfileNodeFlags, type ReadyServer } from './support/processes';
import { dropRedisPrefix } from './support/redis-prefix';

/**
 * `npm run bench -- starts`: what the org's account lock costs task starts. Every start of an
 * org's task takes that org's billing account lock (shared/billing/start-admission.service.ts, `admitStart`), so one org's
 * starts happen one after another. BENCH_STARTS (default 200) computers, connected at once (the
 * steps bench's instant computers, in a process of their own), each get a task through `POST
 * /v1/sessions/{id}/tasks`, all sent at once: in one org (one lock), and as baseline in the same
 * run the same requests across as many orgs (a lock each). Rounds alternate (BENCH_ROUNDS,
 * default 3). Only the web process runs: the tasks stay queued, so nothing but the starts
 * competes for the cores.
 */

const STARTS = Number(process.env.BENCH_STARTS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

interface Round {
  perSecond: number;
  p50: number;
  p99: number;
}

export async function run(): Promise<void> {
  const { prefix, env, config } = await benchWorld('starts');
  const servers = benchServers();
  const container = createContainer(config);
  try {
    const web = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'web' }, [...procfileNodeFlags('web'), ...cpuProfileFlags()]);
    const computers = await servers.start('instant-computers.ts', {}, cpuProfileFlags());
    const baseUrl = `http://127.0.0.1:${web.message.port as number}`;
    const call = async (key: string, method: string, url: string, body?: unknown) => {
      const response = await fetch(`${baseUrl}${url}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, unknown>;
    };

    /** `STARTS` connected computers, each with the key of the org it belongs to. */
    const connectedSessions = async (keys: string[]): Promise<Array<{ key: string; code: string }>> => {
      const sessions = [];
      for (const key of keys) sessions.push({ key, code: (await call(key, 'POST', '/v1/sessions', {})).code as string });
      await connect(computers, baseUrl, sessions.map((session) => session.code));
      return sessions;
    };
    const startAll = async (sessions: Array<{ key: string; code: string }>): Promise<Round> => {
      const latencies: number[] = [];
      const began = performance.now();
      await Promise.all(
        sessions.map(async ({ key, code }) => {
          const sent = performance.now();
          await call(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "ok"' });
          latencies.push(performance.now() - sent);
        }),
      );
      const elapsed = performance.now() - began;
      latencies.sort((a, b) => a - b);
      return { perSecond: (sessions.length * 1000) / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
    };

    const oneOrg = (await container.orgs.create('bench starts, one org')).secret;
    const manyOrgs: string[] = [];
    for (let i = 0; i < STARTS; i++) manyOrgs.push((await container.orgs.create(`bench starts ${i}`)).secret);
    // A warm-up round of each, not counted.
    await startAll(await connectedSessions(Array(20).fill(oneOrg)));
    await startAll(await connectedSessions(manyOrgs.slice(0, 20)));

    const results: { one: Round[]; many: Round[] } = { one: [], many: [] };
    for (let round = 0; round < ROUNDS; round++) {
      results.many.push(await startAll(await connectedSessions(manyOrgs)));
      results.one.push(await startAll(await connectedSessions(Array(STARTS).fill(oneOrg))));
    }
    const show = (rounds: Round[]) => rounds.map((r) => `${r.perSecond.toFixed(0)}/s p50 ${r.p50.toFixed(1)} p99 ${r.p99.toFixed(1)} ms`).join('; ');
    console.log(`starts: ${STARTS} task starts sent at once on as many connected computers, ${ROUNDS} rounds each, alternating; web alone (tasks stay queued)`);
    console.log(`  across ${STARTS} orgs (a lock each, the baseline): ${show(results.many)}`);
    console.log(`  in one org (one account lock):           ${show(results.one)}`);
    const ratios = results.one.map((r, i) => r.perSecond / results.many[i]!.perSecond);
    console.log(`  one org ÷ many orgs, starts/s per round: ${ratios.map((r) => r.toFixed(2)).join(', ')}`);
  } finally {
    await container.close();
    await servers.stopAll();
    await dropRedisPrefix(config.redisUrl, prefix);
  }
}

/** Connects the instant computers of `codes` and waits until every one is welcomed. */
async function connect(computers: ReadyServer, baseUrl: string, codes: string[]): Promise<void> {
  const connected = new Promise((resolve) => computers.child.once('message', resolve));
  computers.child.send({ baseUrl, codes });
  await connected;
}
