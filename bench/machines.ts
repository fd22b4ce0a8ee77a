import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createKnex, migrateLatest } from '../shared/db/knex';
import { loadConfig } from '../shared/config';
import { benchServers, cpuProfileFlags, databaseBackendsCpuMs, processCpuMs, PROJECT_ROOT, procfileNodeFlags, type ReadyServer } from './support/processes';
import { dropRedisPrefix } from './support/redis-prefix';
import { watchQueueHops } from './support/queue-hops';
import { WatchedRunner, wallClockMs, type CommandTimes } from './support/watched-runner';

/**
 * `npm run bench -- machines`: the service's overhead per machine of an eval, with machines
 * that boot at once. A machine goes the whole path: `POST /v1/start_states` (method hand) →
 * web records it and places it on the runner in the same transaction, then sends `machine.make`
 * → the reference runner, which boots it and connects it to `/desktop` (the web process
 * accepts its machine session's hello) → `runner:done` → web settles the command and tells the
 * owner; then `DELETE /v1/start_states/{id}` → `machine.destroy` → runner → `runner:done` →
 * settled. Processes as in production: web, worker-evals and worker-clock each in its own, the
 * runner in the bench's process (so that each command's moments can be read off its socket,
 * bench/support/watched-runner.ts). A machine is made (or destroyed) when the service
 * acknowledges the runner's answer: by then the command is settled in PostgreSQL.
 *
 * Baseline in the same run: the same reference runner, served by a bare socket.io server
 * (bench/servers/bare-runner-service.ts) that sends `machine.make` / `machine.destroy` itself
 * and welcomes every machine's `/desktop` hello at once: the runner's own cost and the
 * socket.io hops, without the service. Overhead per machine = p50 of make + destroy on the
 * whole path − the same on the baseline. Two phases: one machine at a time (latency) and
 * BENCH_AT_ONCE lanes (throughput).
 */

const MACHINES = Number(process.env.BENCH_MACHINES ?? 200);
const AT_ONCE = Number(process.env.BENCH_AT_ONCE ?? 8);
const WARM_UP = Number(process.env.BENCH_WARM_UP ?? 20);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const p50 = (values: number[]) => percentile(sorted(values), 50);

interface Figures {
  make: number[];
  destroy: number[];
  /** make + destroy, per machine */
  cycle: number[];
  perSecond: number;
}

/** One whole-path machine: when it was asked for and dropped, and what the runner saw of its two commands. */
interface Trip {
  machineId: string;
  requested: number;
  dropRequested: number;
  make: CommandTimes;
  destroy: CommandTimes;
}

export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const prefix = `bench-machines-${Date.now()}`;
  const env = { DATABASE_URL: databaseUrl, DESKHAND_REDIS_PREFIX: prefix, DESKHAND_RATE_LIMIT_PER_HOUR: '10000000', DESKHAND_SESSIONS_PER_HOUR: '10000000' };
  const config = loadConfig({ ...process.env, ...env });
  await migrateLatest(databaseUrl);
  const db = createKnex(databaseUrl, { min: 0, max: 2 });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-machines-'));
  const version = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const runnerOptions = { name: 'bench', slots: AT_ONCE * 2, labels: [], images: ['macos-15'], dataDir, bootMs: 0, version };
  const trace = (what: string) => process.env.BENCH_TRACE && process.stderr.write(`${what}\n`);

  // BENCH_SQL_LOG=DIR: every statement of web and worker-evals, timed, in DIR/web.sql and DIR/worker-evals.sql.
  const sqlLog = process.env.BENCH_SQL_LOG;
  const deskhand = (type: string) => (sqlLog ? ['deskhand-types-sql-log.ts', { BENCH_SQL_LOG: path.join(sqlLog, `${type}.sql`) }] as const : ['deskhand-types.ts', {}] as const);
  const servers = benchServers();
  const runners: WatchedRunner[] = [];
  const closers: Array<() => Promise<void>> = [];
  try {
    const web = await servers.start(deskhand('web')[0], { ...env, ...deskhand('web')[1], BENCH_TYPES: 'web', BENCH_ORG: 'bench machines' }, [...procfileNodeFlags('web'), ...cpuProfileFlags()]);
    const evals = await servers.start(deskhand('worker-evals')[0], { ...env, ...deskhand('worker-evals')[1], BENCH_TYPES: 'worker-evals' }, [...procfileNodeFlags('worker-evals'), ...cpuProfileFlags()]);
    const clock = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'worker-clock' }, [...procfileNodeFlags('worker-clock'), ...cpuProfileFlags()]);
    const bare = await servers.start('bare-runner-service.ts', {}, cpuProfileFlags());
    const baseUrl = `http://127.0.0.1:${web.message.port as number}`;
    const headers = { authorization: `Bearer ${web.message.key as string}`, 'content-type': 'application/json' };
    const api = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(`${baseUrl}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, unknown>;
    };

    const { token } = (await api('POST', '/v1/runners', { name: 'bench' })) as { token: string };
    const runner = new WatchedRunner({ ...runnerOptions, token, baseUrl });
    runners.push(runner);
    await runner.start();
    const bareRunner = new WatchedRunner({ ...runnerOptions, token: 'dhr_bare', baseUrl: `http://127.0.0.1:${bare.message.port as number}` });
    runners.push(bareRunner);
    await bareRunner.start();
    trace('runners connected');
    const queueHops = watchQueueHops(config.redisUrl, prefix, 'evals');
    closers.push(() => queueHops.close());

    /**
     * One machine through the whole path, made then destroyed. Nothing but the request runs in the
     * bench's process (which holds the runner) while the machine is made: the lane takes the next
     * make the runner has answered (one at a time, its own; with several lanes, the one first in
     * line), and only then reads which state owns that machine, to delete it.
     */
    const oneMachine = async (): Promise<Trip> => {
      const requested = wallClockMs();
      await api('POST', '/v1/start_states', { name: 'bench', from: 'macos-15', method: 'hand' });
      const make = await runner.nextMade();
      const machineId = make.machineId;
      if (!make.ok) throw new Error(`machine ${machineId} was not made`);
      const { owner_id: id } = (await db('machines').where({ id: machineId }).first('owner_id')) as { owner_id: string };
      const dropRequested = wallClockMs();
      await api('DELETE', `/v1/start_states/${id}`);
      const destroy = await runner.acknowledged(machineId, 'machine.destroy');
      return { machineId, requested, dropRequested, make, destroy };
    };
    const wholePath = async (count: number, atOnce: number): Promise<{ figures: Figures; trips: Trip[] }> => {
      const trips: Trip[] = [];
      let left = count;
      const started = performance.now();
      const lane = async () => {
        while (left > 0) {
          left -= 1;
          trips.push(await oneMachine());
        }
      };
      await Promise.all(Array.from({ length: atOnce }, lane));
      const seconds = (performance.now() - started) / 1000;
      const make = trips.map((trip) => trip.make.acknowledged! - trip.requested);
      const destroy = trips.map((trip) => trip.destroy.acknowledged! - trip.dropRequested);
      return { figures: { make, destroy, cycle: make.map((ms, i) => ms + destroy[i]!), perSecond: count / seconds }, trips };
    };
    const baseline = async (count: number, atOnce: number): Promise<Figures> => {
      const result = new Promise<{ make: number[]; destroy: number[]; seconds: number }>((resolve) => {
        const listen = (message: { type?: string }) => {
          if (message.type !== 'result') return;
          bare.child.off('message', listen);
          resolve(message as never);
        };
        bare.child.on('message', listen);
      });
      bare.child.send({ type: 'run', machines: count, atOnce });
      const { make, destroy, seconds } = await result;
      return { make, destroy, cycle: make.map((ms, i) => ms + destroy[i]!), perSecond: count / seconds };
    };

    const lines: string[] = [];
    for (const atOnce of [1, AT_ONCE]) {
      trace(`phase ${atOnce}: warm-up`);
      await baseline(WARM_UP, atOnce);
      await wholePath(WARM_UP, atOnce);
      trace(`phase ${atOnce}: measured`);
      const floor = await baseline(MACHINES, atOnce);
      const queriesBefore = { web: await queries(web), evals: await queries(evals) };
      const mark = Date.now();
      const databaseName = new URL(databaseUrl).pathname.slice(1);
      const cpu = () => ({
        web: processCpuMs(web.child.pid!)?.ms ?? 0,
        'worker-evals': processCpuMs(evals.child.pid!)?.ms ?? 0,
        'worker-clock': processCpuMs(clock.child.pid!)?.ms ?? 0,
        'bench and runner': process.cpuUsage().user / 1000 + process.cpuUsage().system / 1000,
        postgres: databaseBackendsCpuMs(databaseName),
      });
      const cpuBefore = cpu();
      const started = performance.now();
      const { figures, trips } = await wholePath(MACHINES, atOnce);
      const cpuAfter = cpu();
      const elapsedMs = performance.now() - started;
      const cores = Object.entries(cpuAfter).map(([name, ms]) => `${name} ${((ms - cpuBefore[name as keyof typeof cpuBefore]) / elapsedMs).toFixed(2)}`).join(', ');
      const perMachine = (before: number, after: number) => ((after - before) / MACHINES).toFixed(1);
      const jobsPerMachine = async (name: string, idPrefix: string, since: number) => {
        const waits = await queueHops.waits(idPrefix, since);
        return waits.length === 0 ? `${name} none` : `${name} ${(waits.length / MACHINES).toFixed(1)}, ${p50(waits).toFixed(1)} ms`;
      };
      lines.push(
        ...report(atOnce, floor, figures),
        ...(await hops(db, trips)),
        `  BullMQ jobs per machine, and their wait (added → taken by worker-evals, p50): ${await jobsPerMachine('start-state-advance', 'start-state', mark)}; ${await jobsPerMachine('use-free-slots', 'free-slots', mark)}`,
        `  cores used on the whole path: ${cores} (of 2)`,
        `  SQL statements per machine: web ${perMachine(queriesBefore.web, await queries(web))}, worker-evals ${perMachine(queriesBefore.evals, await queries(evals))}`,
        `  a writing transaction alone (BEGIN, txid_current(), COMMIT) on this PostgreSQL, p50: ${(await commitProbe(db)).toFixed(1)} ms`,
      );
    }
    console.log(`machines: instant boots (--boot-ms 0); web, worker-evals and worker-clock in separate processes, the reference runner in the bench's; ${MACHINES} machines per phase after ${WARM_UP} to warm up`);
    for (const line of lines) console.log(line);
    console.log('target: the service\'s overhead per machine (make + destroy, p50 whole path − p50 baseline) <= 20 ms');
  } finally {
    for (const close of closers) await close();
    for (const runner of runners) await runner.stop();
    await servers.stopAll();
    await db.destroy();
    await dropRedisPrefix(config.redisUrl, prefix);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The SQL statements a Deskhand process has sent so far (bench/servers/deskhand-types.ts). */
function queries(server: ReadyServer): Promise<number> {
  return new Promise((resolve) => {
    const listen = (message: { type?: string; count?: number }) => {
      if (message.type !== 'queries') return;
      server.child.off('message', listen);
      resolve(message.count!);
    };
    server.child.on('message', listen);
    server.child.send({ type: 'queries' });
  });
}

/**
 * The floor under every step of the path that commits: one transaction that writes (an xid
 * makes the commit wait for the WAL flush, as the service's do), timed from the bench.
 */
async function commitProbe(db: ReturnType<typeof createKnex>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const started = performance.now();
    await db.transaction((trx) => trx.raw('select txid_current()'));
    times.push(performance.now() - started);
  }
  return p50(times);
}

function report(atOnce: number, floor: Figures, whole: Figures): string[] {
  const row = (name: string, figures: Figures) => {
    const column = (values: number[]) => {
      const ordered = sorted(values);
      return `${percentile(ordered, 50).toFixed(1).padStart(6)} / ${percentile(ordered, 95).toFixed(1).padStart(6)}`;
    };
    return `  ${name.padEnd(10)} make ${column(figures.make)}   destroy ${column(figures.destroy)}   make+destroy ${column(figures.cycle)} ms (p50 / p95)   ${figures.perSecond.toFixed(1).padStart(6)} machines/s`;
  };
  const overhead = p50(whole.cycle) - p50(floor.cycle);
  return [
    `${atOnce} at once:`,
    row('baseline', floor),
    row('service', whole),
    `  overhead per machine (p50): ${overhead.toFixed(1)} ms (make ${(p50(whole.make) - p50(floor.make)).toFixed(1)}, destroy ${(p50(whole.destroy) - p50(floor.destroy)).toFixed(1)}); throughput ${(whole.perSecond / floor.perSecond).toFixed(2)}x the baseline's`,
  ];
}

/**
 * Where a whole-path machine's time goes, hop by hop (p50 over the phase's machines): the bench's
 * and the runner's moments beside PostgreSQL's `now()` in the rows (a transaction's start) on the
 * same host's clock.
 */
async function hops(db: ReturnType<typeof createKnex>, trips: Trip[]): Promise<string[]> {
  const rows = (await db('runner_commands as c')
    .join('machines as m', 'm.id', 'c.machine_id')
    .whereIn('c.machine_id', trips.map((trip) => trip.machineId))
    .select(
      'c.machine_id',
      'c.type',
      db.raw('extract(epoch from m.created_at) * 1000 as created'),
      db.raw('extract(epoch from c.sent_at) * 1000 as sent'),
      db.raw('extract(epoch from c.finished_at) * 1000 as finished'),
    )) as Array<{ machine_id: string; type: string; created: string; sent: string; finished: string }>;
  const at = new Map(rows.map((row) => [`${row.machine_id} ${row.type}`, { created: Number(row.created), sent: Number(row.sent), finished: Number(row.finished) }]));
  const steps = (type: 'machine.make' | 'machine.destroy') => {
    const spans: Record<string, number[]> = {};
    const add = (name: string, ms: number) => (spans[name] ??= []).push(ms);
    for (const trip of trips) {
      const row = at.get(`${trip.machineId} ${type}`);
      if (!row) continue;
      const times = type === 'machine.make' ? trip.make : trip.destroy;
      if (type === 'machine.make') {
        add('request → machine row (API transaction starts)', row.created - trip.requested);
        add('machine row → make command row (0: the API transaction places the machine)', row.sent - row.created);
      } else {
        add('request → destroy command row (release transaction starts in web)', row.sent - trip.dropRequested);
      }
      add('command row → runner receives it (the rest of the transaction, its commit, web sends)', times.received - row.sent);
      add(type === 'machine.make' ? 'runner carries it out (boot, /desktop hello to web)' : 'runner carries it out', times.answered! - times.received);
      add('runner:done sent → settle transaction starts (web)', row.finished - times.answered!);
      add('settle transaction → acknowledgement at the runner (commit, owner told)', times.acknowledged! - row.finished);
    }
    return Object.entries(spans).map(([name, values]) => `    ${p50(values).toFixed(1).padStart(6)} ms  ${name}`);
  };
  return ['  where the time goes (service, p50 per hop), make:', ...steps('machine.make'), '  destroy:', ...steps('machine.destroy')];
}
