import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis as SingleRedis } from 'ioredis';
import { loadConfig } from '../shared/config';
import { createContainer, type Container } from '../shared/container';
import { createKnex, migrateLatest, type Knex } from '../shared/db/knex';
import { newId } from '../shared/ids';
import { QUEUE_NAMES } from '../shared/queues/catalog';
import { jobId } from '../shared/queues/job-queues';
import { benchServers, databaseBackendsCpuMs, processCpuMs, procfileNodeFlags, type ReadyServer } from './support/processes';
import { accepts, freePorts } from '../test/support/ports';
import { startPgBouncer } from '../test/support/pgbouncer';

/**
 * `npm run bench -- scale-out`: what each tier carries, for docs/operations.md "Running past one
 * machine" (issue 41).
 *
 * Part 1, counts (`counts`), once on a Redis of the bench's own and once on a Redis Cluster of
 * its own (three masters), both started here so that nothing else's commands are counted:
 *   - per task step: BENCH_SCALE_OUT_TASKS tasks of the scripted model stepping as fast as they
 *     can on instant computers (as `bench -- steps`), web and worker-agent in processes of their
 *     own; the PostgreSQL statements each process sent (counted at pg's client), the Redis
 *     commands every node executed (INFO commandstats) with their execution time, and the CPU
 *     time of Redis, of the database's backends and of each process, over a measured window;
 *   - per follow answer: the same with two long-poll followers per task, less the steps' share;
 *   - per webhook delivery: BENCH_SCALE_OUT_DELIVERIES events queued for dispatch, delivered by
 *     a worker-delivery process to a receiver process (dispatch job, delivery job, signed POST,
 *     attempt row), the enqueue included.
 * Part 2, the pooler's cost (`pooler`): `bench -- steps` and `bench -- machines` as they are, once
 * straight to PostgreSQL and once through PgBouncer in transaction mode (Debian's, started here),
 * with DESKHAND_DATABASE_POOLER=transaction, in the same run.
 *
 * BENCH_SCALE_OUT_PARTS=counts,pooler chooses; BENCH_SCALE_OUT_SECONDS (8) is each window;
 * BENCH_SCALE_OUT_STEP_SECONDS (5) is the capacity model's assumed time between two steps of a
 * real task (a model turn and the computer's action).
 */

const execFileAsync = promisify(execFile);
const PARTS = (process.env.BENCH_SCALE_OUT_PARTS ?? 'counts,pooler').split(',');
const TASKS = Number(process.env.BENCH_SCALE_OUT_TASKS ?? 8);
const WINDOW_SECONDS = Number(process.env.BENCH_SCALE_OUT_SECONDS ?? 8);
const FOLLOWERS_PER_TASK = 2;
const DELIVERIES = Number(process.env.BENCH_SCALE_OUT_DELIVERIES ?? 3000);
const STEP_SECONDS = Number(process.env.BENCH_SCALE_OUT_STEP_SECONDS ?? 5);
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench_scale_out';
const trace = (what: string) => process.env.BENCH_TRACE && process.stderr.write(`${what}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Redis of the bench's own: one server, or a cluster of three masters.

interface NodeCounters {
  calls: Map<string, number>;
  usec: Map<string, number>;
  cpuMs: number;
}

interface OwnRedis {
  kind: 'one Redis' | 'Redis Cluster, 3 masters';
  ports: number[];
  /** What the service's processes get: REDIS_URL, or DESKHAND_REDIS_CLUSTER_NODES. */
  env: Record<string, string>;
  counters(): Promise<NodeCounters[]>;
  close(): Promise<void>;
}

function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  return fields;
}

async function startOwnRedis(cluster: boolean): Promise<OwnRedis> {
  const count = cluster ? 3 : 1;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-scale-out-redis-'));
  const ports = await freePorts(count);
  const children: ChildProcess[] = ports.map((port) =>
    spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction',
      '--logfile', path.join(dir, `${port}.log`),
      ...(cluster ? ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`] : []),
    ], { stdio: 'ignore' }),
  );
  // One admin connection per node: its INFO calls are left out of the counts.
  const admins = ports.map((port) => new SingleRedis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 }));
  for (const admin of admins) admin.on('error', () => undefined);
  const close = async () => {
    for (const admin of admins) admin.disconnect();
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(children.map((child) => (child.exitCode !== null || child.signalCode !== null ? null : new Promise((resolve) => child.once('exit', resolve)))));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      for (let tries = 0; !(await accepts('127.0.0.1', port)); tries++) {
        if (tries > 100) throw new Error(`redis-server on port ${port} did not start`);
        await sleep(100);
      }
    }
    for (const admin of admins) await admin.connect();
    if (cluster) {
      await execFileAsync('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes']);
      for (let tries = 0; ; tries++) {
        const states = await Promise.all(admins.map((admin) => admin.cluster('INFO') as Promise<string>));
        if (states.every((state) => state.includes('cluster_state:ok'))) break;
        if (tries > 100) throw new Error('the bench\'s cluster did not become ok');
        await sleep(100);
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  return {
    kind: cluster ? 'Redis Cluster, 3 masters' : 'one Redis',
    ports,
    env: cluster ? { DESKHAND_REDIS_CLUSTER_NODES: ports.map((port) => `127.0.0.1:${port}`).join(',') } : { REDIS_URL: `redis://127.0.0.1:${ports[0]}` },
    async counters() {
      return Promise.all(
        admins.map(async (admin) => {
          const stats = parseInfo(await admin.info('commandstats'));
          const cpu = parseInfo(await admin.info('cpu'));
          const calls = new Map<string, number>();
          const usec = new Map<string, number>();
          for (const [field, value] of stats) {
            const name = field.replace(/^cmdstat_/, '');
            if (name === 'info') continue;
            calls.set(name, Number(/calls=(\d+)/.exec(value)?.[1] ?? 0));
            usec.set(name, Number(/usec=(\d+)/.exec(value)?.[1] ?? 0));
          }
          return { calls, usec, cpuMs: (Number(cpu.get('used_cpu_user')) + Number(cpu.get('used_cpu_sys'))) * 1000 };
        }),
      );
    },
    close,
  };
}

// ---------------------------------------------------------------------------------------------
// One measured window: everything each tier did between two readings.

interface Reading {
  at: number;
  redis: NodeCounters[];
  postgresCpuMs: number;
  queries: Record<string, number>;
  cpuMs: Record<string, number>;
  xid: number;
  wal: string;
}

interface Delta {
  seconds: number;
  /** Per node: commands, and the execution time Redis reports for them (µs). */
  redisCalls: Map<string, number>;
  redisUsec: Map<string, number>;
  redisNodeCalls: number[];
  redisNodeCpuMs: number[];
  redisCpuMs: number;
  postgresCpuMs: number;
  queries: Record<string, number>;
  cpuMs: Record<string, number>;
  /** Transactions that wrote (transaction ids used), and WAL bytes written, on the whole PostgreSQL server. */
  writeTransactions: number;
  walBytes: number;
}

function queriesOf(server: ReadyServer): Promise<number> {
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

async function read(redis: OwnRedis, db: Knex, servers: Record<string, ReadyServer>): Promise<Reading> {
  const queries: Record<string, number> = {};
  const cpuMs: Record<string, number> = {};
  for (const [name, server] of Object.entries(servers)) {
    queries[name] = await queriesOf(server);
    cpuMs[name] = processCpuMs(server.child.pid!)?.ms ?? 0;
  }
  // The next transaction id to be given out (reading it takes none).
  const { x, wal } = (await db.raw('select txid_snapshot_xmax(txid_current_snapshot()) as x, pg_current_wal_lsn()::text as wal')).rows[0] as { x: string; wal: string };
  return { at: performance.now(), redis: await redis.counters(), postgresCpuMs: databaseBackendsCpuMs(new URL(DATABASE_URL).pathname.slice(1)), queries, cpuMs, xid: Number(x), wal };
}

/** Bytes between two WAL positions (`16/B374D848`). */
function walDistance(from: string, to: string): number {
  const position = (lsn: string) => {
    const [high, low] = lsn.split('/') as [string, string];
    return parseInt(high, 16) * 2 ** 32 + parseInt(low, 16);
  };
  return position(to) - position(from);
}

function delta(before: Reading, after: Reading): Delta {
  const redisCalls = new Map<string, number>();
  const redisUsec = new Map<string, number>();
  const redisNodeCalls: number[] = [];
  const redisNodeCpuMs: number[] = [];
  after.redis.forEach((node, i) => {
    let calls = 0;
    for (const [name, count] of node.calls) {
      const made = count - (before.redis[i]!.calls.get(name) ?? 0);
      if (made <= 0) continue;
      calls += made;
      redisCalls.set(name, (redisCalls.get(name) ?? 0) + made);
      redisUsec.set(name, (redisUsec.get(name) ?? 0) + node.usec.get(name)! - (before.redis[i]!.usec.get(name) ?? 0));
    }
    redisNodeCalls.push(calls);
    redisNodeCpuMs.push(node.cpuMs - before.redis[i]!.cpuMs);
  });
  const minus = (a: Record<string, number>, b: Record<string, number>) => Object.fromEntries(Object.entries(a).map(([name, value]) => [name, value - (b[name] ?? 0)]));
  return {
    seconds: (after.at - before.at) / 1000,
    redisCalls,
    redisUsec,
    redisNodeCalls,
    redisNodeCpuMs,
    redisCpuMs: redisNodeCpuMs.reduce((sum, ms) => sum + ms, 0),
    postgresCpuMs: after.postgresCpuMs - before.postgresCpuMs,
    queries: minus(after.queries, before.queries),
    cpuMs: minus(after.cpuMs, before.cpuMs),
    writeTransactions: Math.max(0, after.xid - before.xid),
    walBytes: walDistance(before.wal, after.wal),
  };
}

const sum = (values: Iterable<number>) => [...values].reduce((total, value) => total + value, 0);

/** What one unit of work (a step, a follow answer, a delivery) cost each tier, per unit. */
interface UnitCost {
  units: number;
  perSecond: number;
  /** Statements each process sent, by process. */
  statements: Record<string, number>;
  writeTransactions: number;
  walBytes: number;
  /** By command: calls, and Redis' execution time (µs). */
  commands: Map<string, number>;
  commandUs: Map<string, number>;
  /** By node: commands, and Redis CPU (µs). */
  nodeCommands: number[];
  nodeCpuUs: number[];
  postgresCpuUs: number;
  processCpuUs: Record<string, number>;
}

function perUnit(d: Delta, units: number): UnitCost {
  const each = <K>(map: Map<K, number> | Record<string, number>, scale = 1) =>
    map instanceof Map ? new Map([...map].map(([key, value]) => [key, (value * scale) / units])) : Object.fromEntries(Object.entries(map).map(([key, value]) => [key, (value * scale) / units]));
  return {
    units,
    perSecond: units / d.seconds,
    statements: each(d.queries) as Record<string, number>,
    writeTransactions: d.writeTransactions / units,
    walBytes: d.walBytes / units,
    commands: each(d.redisCalls) as Map<string, number>,
    commandUs: each(d.redisUsec) as Map<string, number>,
    nodeCommands: d.redisNodeCalls.map((calls) => calls / units),
    nodeCpuUs: d.redisNodeCpuMs.map((ms) => (ms * 1000) / units),
    postgresCpuUs: (d.postgresCpuMs * 1000) / units,
    processCpuUs: each(d.cpuMs, 1000) as Record<string, number>,
  };
}

/**
 * The follow answers' own share of a window in which `baseUnits` steps ran too: the window's
 * totals less what that many steps cost (`base`), per answer. Floored at zero.
 */
function beyond(window: Delta, base: UnitCost, baseUnits: number, units: number): UnitCost {
  const whole = perUnit(window, 1);
  const less = (value: number, per: number) => Math.max(0, (value - per * baseUnits) / units);
  const lessMap = <T extends Map<string, number> | Record<string, number>>(value: T, per: T): T =>
    (value instanceof Map
      ? new Map([...value].map(([key, count]) => [key, less(count, (per as Map<string, number>).get(key) ?? 0)]))
      : Object.fromEntries(Object.entries(value).map(([key, count]) => [key, less(count, (per as Record<string, number>)[key] ?? 0)]))) as T;
  return {
    units,
    perSecond: units / window.seconds,
    statements: lessMap(whole.statements, base.statements),
    writeTransactions: less(whole.writeTransactions, base.writeTransactions),
    walBytes: less(whole.walBytes, base.walBytes),
    commands: lessMap(whole.commands, base.commands),
    commandUs: lessMap(whole.commandUs, base.commandUs),
    nodeCommands: whole.nodeCommands.map((count, i) => less(count, base.nodeCommands[i] ?? 0)),
    nodeCpuUs: whole.nodeCpuUs.map((us, i) => less(us, base.nodeCpuUs[i] ?? 0)),
    postgresCpuUs: less(whole.postgresCpuUs, base.postgresCpuUs),
    processCpuUs: lessMap(whole.processCpuUs, base.processCpuUs),
  };
}

// ---------------------------------------------------------------------------------------------
// Part 1: counts.

const RECEIVER = `
const http = require('node:http');
let received = 0;
const server = http.createServer((req, res) => { req.resume(); req.on('end', () => { received++; res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}'); }); });
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', () => process.send({ received }));
`;

async function countsOn(redis: OwnRedis): Promise<{ alone: UnitCost; step: UnitCost; follow: UnitCost; delivery: UnitCost }> {
  const prefix = `bench-scale-out-${Date.now()}`;
  const env: Record<string, string> = {
    DATABASE_URL,
    ...redis.env,
    DESKHAND_REDIS_PREFIX: prefix,
    DESKHAND_SCRIPTED_MODELS: '1',
    DESKHAND_ALLOW_PRIVATE_URLS: '1',
    DESKHAND_RATE_LIMIT_PER_HOUR: '10000000',
    DESKHAND_SESSIONS_PER_HOUR: '10000000',
    LOG_LEVEL: 'silent',
  };
  const config = loadConfig({ ...process.env, ...env });
  const container: Container = createContainer(config);
  const db = createKnex(DATABASE_URL, { min: 0, max: 2 });
  const servers = benchServers();
  let receiver: ChildProcess | null = null;
  try {
    const web = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'web' }, procfileNodeFlags('web'));
    const agent = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'worker-agent' }, procfileNodeFlags('worker-agent'));
    const computers = await servers.start('instant-computers.ts', {});
    const baseUrl = `http://127.0.0.1:${web.message.port as number}`;
    const { org, secret } = await container.orgs.create('bench scale-out');
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const api = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(`${baseUrl}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, any>;
    };
    await api('POST', '/v1/agents', { agent_id: 'bench', narration: false, guardrails: { max_steps: 500, confirm: [] } });
    const codes: string[] = [];
    for (let i = 0; i < TASKS; i++) codes.push((await api('POST', '/v1/sessions', { agent_id: 'bench' })).code as string);
    const connected = new Promise((resolve) => computers.child.once('message', resolve));
    computers.child.send({ baseUrl, codes });
    await connected;

    // Each computer gets a new task when its task ends (the agent's 500 steps); the keeper reads
    // PostgreSQL itself, so that its reads are not the service's.
    const current = new Map<string, string>();
    const taskIds: string[] = [];
    const startTask = async (code: string) => {
      const id = (await api('POST', `/v1/sessions/${code}/tasks`, { prompt: 'click_at 5 5\nrepeat' })).task_id as string;
      current.set(code, id);
      taskIds.push(id);
    };
    await startTask(codes[0]!);
    let running = true;
    const keeper = (async () => {
      while (running) {
        await sleep(200);
        const rows = (await db('tasks').whereIn('id', [...current.values()]).select('id', 'status')) as Array<{ id: string; status: string }>;
        const ended = new Set(rows.filter((row) => row.status !== 'running' && row.status !== 'queued').map((row) => row.id));
        for (const [code, id] of current) if (running && ended.has(id)) await startTask(code);
      }
    })();
    const stepsBetween = async (from: number, to: number) =>
      Number(((await db('task_events').whereIn('task_id', taskIds).andWhere('type', 'step').andWhere('ts', '>=', new Date(performance.timeOrigin + from)).andWhere('ts', '<', new Date(performance.timeOrigin + to)).count({ n: '*' }))[0] as { n: string }).n);
    const measured = { web, 'worker-agent': agent };
    await sleep(2000);

    // One task alone: nothing to share a statement or a pipeline with.
    trace('one task window');
    const aloneStart = await read(redis, db, measured);
    await sleep(WINDOW_SECONDS * 1000);
    const aloneEnd = await read(redis, db, measured);
    const alone = perUnit(delta(aloneStart, aloneEnd), await stepsBetween(aloneStart.at, aloneEnd.at));
    for (const code of codes.slice(1)) await startTask(code);
    await sleep(2000);

    trace('steps window');
    const stepsStart = await read(redis, db, measured);
    await sleep(WINDOW_SECONDS * 1000);
    const stepsEnd = await read(redis, db, measured);
    const stepWindow = delta(stepsStart, stepsEnd);
    const step = perUnit(stepWindow, await stepsBetween(stepsStart.at, stepsEnd.at));

    trace('follow window');
    let answers = 0;
    let following = true;
    const follower = async (code: string) => {
      let taskId = current.get(code)!;
      let cursor = 0;
      while (following) {
        if (current.get(code) !== taskId) [taskId, cursor] = [current.get(code)!, 0];
        const page = await api('GET', `/v1/tasks/${taskId}/events?after=${cursor}&wait_ms=5000`);
        cursor = page.cursor as number;
        answers++;
        if (page.task.done) await sleep(50);
      }
    };
    const followers = codes.flatMap((code) => Array.from({ length: FOLLOWERS_PER_TASK }, () => follower(code)));
    await sleep(1000);
    const followStart = await read(redis, db, measured);
    const answersBefore = answers;
    await sleep(WINDOW_SECONDS * 1000);
    const followEnd = await read(redis, db, measured);
    const answered = answers - answersBefore;
    following = false;
    await Promise.all(followers);
    const followWindow = delta(followStart, followEnd);
    const followSteps = await stepsBetween(followStart.at, followEnd.at);
    const follow = beyond(followWindow, step, followSteps, answered);

    running = false;
    await keeper;
    for (const id of current.values()) await api('POST', `/v1/tasks/${id}/stop`, {});
    for (const code of codes) await api('POST', `/v1/sessions/${code}/expire`, {});
    await servers.stop(computers.child);
    await servers.stop(agent.child);
    await servers.stop(web.child);

    trace('deliveries');
    const receiverChild = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    receiver = receiverChild;
    const { port } = await new Promise<{ port: number }>((resolve) => receiverChild.once('message', resolve as never));
    const received = () => new Promise<number>((resolve) => (receiverChild.once('message', (message: { received: number }) => resolve(message.received)), receiverChild.send({})));
    await container.webhooks.update(org.org_id, { url: `http://127.0.0.1:${port}/hooks` }, { actor: null });
    // The steps' own org events (sessions connected, tasks started and ended) are not this part's.
    await container.queues.queue(QUEUE_NAMES.webhooks).obliterate({ force: true });
    const delivery = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'worker-delivery' }, procfileNodeFlags('worker-delivery'));
    const ids = Array.from({ length: DELIVERIES }, () => newId('evt'));
    const data = { task: { object: 'task', task_id: 'task_bench', status: 'completed', done: true, result: 'Renewed the insurance until 2027.' } };
    for (let i = 0; i < ids.length; i += 1000) {
      await db('org_events').insert(ids.slice(i, i + 1000).map((id) => ({ id, org_id: org.org_id, type: 'task.completed', task_id: 'task_bench', data: JSON.stringify(data) })));
    }
    await sleep(500);
    const deliveryStart = await read(redis, db, { 'worker-delivery': delivery });
    // As the service's dispatch does it after a commit: one job per event, in bulk.
    const queue = container.queues.queue(QUEUE_NAMES.webhooks);
    for (let i = 0; i < ids.length; i += 1000) await queue.addBulk(ids.slice(i, i + 1000).map((id) => ({ name: 'dispatch', data: { event_id: id }, opts: { jobId: jobId('dispatch', id) } })));
    for (;;) {
      if ((await received()) >= DELIVERIES) break;
      await sleep(20);
    }
    // Each delivery's attempt row is written after the receiver's answer.
    await sleep(200);
    const deliveryEnd = await read(redis, db, { 'worker-delivery': delivery });
    const deliveryCost = perUnit(delta(deliveryStart, deliveryEnd), DELIVERIES);
    await servers.stop(delivery.child);
    return { alone, step, follow, delivery: deliveryCost };
  } finally {
    receiver?.kill('SIGKILL');
    await servers.stopAll();
    await container.queues.queue(QUEUE_NAMES.webhooks).obliterate({ force: true }).catch(() => undefined);
    await container.close();
    await db.destroy();
  }
}

const f1 = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : '-');
const f0 = (value: number) => (Number.isFinite(value) ? value.toFixed(0) : '-');

function costLines(name: string, cost: UnitCost): string[] {
  const statements = Object.entries(cost.statements).map(([process, count]) => `${process} ${f1(count)}`).join(', ');
  const cpu = Object.entries(cost.processCpuUs).map(([process, us]) => `${process} ${f0(us)}`).join(', ');
  const busiest = cost.nodeCpuUs.indexOf(Math.max(...cost.nodeCpuUs));
  const nodes = cost.nodeCommands.length > 1 ? ` (by node ${cost.nodeCommands.map(f1).join(' / ')}; CPU by node ${cost.nodeCpuUs.map(f0).join(' / ')} µs, busiest ${f0(cost.nodeCpuUs[busiest]!)})` : '';
  const top = [...cost.commands].filter(([, calls]) => calls >= 0.05).sort((a, b) => b[1] - a[1]).slice(0, 10);
  return [
    `  per ${name} (${cost.units} in the window, ${f0(cost.perSecond)}/s):`,
    `    PostgreSQL: ${statements} statements; ${f1(cost.writeTransactions)} writing transactions and ${f0(cost.walBytes)} WAL bytes (server-wide); backends' CPU ${f0(cost.postgresCpuUs)} µs`,
    `    Redis: ${f1(sum(cost.commands.values()))} commands executing ${f0(sum(cost.commandUs.values()))} µs; Redis CPU ${f0(sum(cost.nodeCpuUs))} µs${nodes}`,
    `    commands (per ${name}, µs each): ${top.map(([command, calls]) => `${command} ${f1(calls)} (${((cost.commandUs.get(command) ?? 0) / calls).toFixed(1)})`).join(', ')}`,
    `    process CPU: ${cpu} µs`,
  ];
}

/**
 * Ceilings from the measured CPU costs: how many units per second one core of each tier
 * carries (Redis is one core per shard; on a cluster, the busiest shard's share counts, since
 * each queue lives on one shard).
 */
function capacityLines(costs: { step: UnitCost; follow: UnitCost; delivery: UnitCost }): string[] {
  const perCore = (us: number | undefined) => (us && us > 0 ? 1e6 / us : Infinity);
  const shard = (cost: UnitCost) => perCore(Math.max(...cost.nodeCpuUs));
  const { step, follow, delivery } = costs;
  // The steps of many tasks at once: what a busy deployment's steps cost.
  return [
    `  ceilings per core from the CPU above (a real task steps every ${STEP_SECONDS} s: running tasks = steps/s × ${STEP_SECONDS}):`,
    `    steps/s: Redis shard ${f0(shard(step))} (${f0(shard(step) * STEP_SECONDS)} running tasks); PostgreSQL ${f0(perCore(step.postgresCpuUs))} per core (${f0(perCore(step.postgresCpuUs) * STEP_SECONDS)} tasks); web ${f0(perCore(step.processCpuUs.web))} (${f0(perCore(step.processCpuUs.web) * STEP_SECONDS)} tasks); worker-agent ${f0(perCore(step.processCpuUs['worker-agent']))}`,
    `    follow answers/s: Redis shard ${f0(shard(follow))}; PostgreSQL ${f0(perCore(follow.postgresCpuUs))} per core; web ${f0(perCore(follow.processCpuUs.web))}`,
    `    webhook deliveries/s: Redis shard ${f0(shard(delivery))}; PostgreSQL ${f0(perCore(delivery.postgresCpuUs))} per core; worker-delivery ${f0(perCore(delivery.processCpuUs['worker-delivery']))}`,
  ];
}

async function countsPart(): Promise<void> {
  for (const cluster of [false, true]) {
    const redis = await startOwnRedis(cluster);
    try {
      trace(`counts on ${redis.kind}`);
      const costs = await countsOn(redis);
      console.log(`scale-out counts on ${redis.kind} (the bench's own), PostgreSQL straight; ${TASKS} tasks stepping at once, instant model and computers; ${WINDOW_SECONDS} s windows`);
      for (const line of [...costLines('task step, one task alone', costs.alone), ...costLines(`task step, ${TASKS} tasks at once`, costs.step), ...costLines('follow answer (beyond the steps)', costs.follow), ...costLines('webhook delivery', costs.delivery), ...capacityLines(costs)]) console.log(line);
    } finally {
      await redis.close();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Part 2: the steps and machines benches straight to PostgreSQL and through PgBouncer.

/** Runs a bench's `run` with `env` set, its lines printed indented and returned. */
async function benchLines(name: 'steps' | 'machines', env: Record<string, string | undefined>): Promise<string[]> {
  const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  const log = console.log;
  const lines: string[] = [];
  for (const [key, value] of Object.entries(env)) value === undefined ? delete process.env[key] : (process.env[key] = value);
  console.log = (...args: unknown[]) => {
    const line = args.join(' ');
    lines.push(line);
    log(`    ${line}`);
  };
  try {
    // As bench/run.ts loads a bench: from its sources or compiled, whichever this run is.
    const module = (await import(path.join(__dirname, `${name}${path.extname(__filename)}`))) as { run: () => Promise<void> };
    await module.run();
  } finally {
    console.log = log;
    for (const [key, value] of Object.entries(saved)) value === undefined ? delete process.env[key] : (process.env[key] = value);
  }
  return lines;
}

async function poolerPart(): Promise<void> {
  const bouncer = await startPgBouncer();
  try {
    const pooledUrl = bouncer.through(DATABASE_URL);
    const figures: Record<string, { steps: string[]; machines: string[] }> = {};
    for (const [mode, env] of [
      ['straight to PostgreSQL', { BENCH_DATABASE_URL: DATABASE_URL, DESKHAND_DATABASE_POOLER: undefined }],
      ['through PgBouncer, transaction mode', { BENCH_DATABASE_URL: pooledUrl, DESKHAND_DATABASE_POOLER: 'transaction' }],
    ] as const) {
      console.log(`scale-out, pooler: ${mode}`);
      figures[mode] = { steps: await benchLines('steps', env), machines: await benchLines('machines', env) };
    }
    const [direct, pooled] = Object.values(figures) as [{ steps: string[]; machines: string[] }, { steps: string[]; machines: string[] }];
    const stepFigures = (lines: string[]) => lines.map((line) => /^\s*(\d+) at once:.*agent\s+(\d+) steps\/s \(step p50 (\S+) \/ p99 (\S+) ms\)/.exec(line)).filter((match): match is RegExpExecArray => !!match);
    const overheads = (lines: string[]) => lines.map((line) => /overhead per machine \(p50\): (\S+) ms.*throughput (\S+)x/.exec(line)).filter((match): match is RegExpExecArray => !!match);
    const machinesPerSecond = (lines: string[]) => lines.map((line) => /^\s*service .* (\S+) machines\/s/.exec(line)?.[1]).filter((value): value is string => !!value);
    console.log('scale-out, what transaction pooling costs (through PgBouncer ÷ straight):');
    stepFigures(direct.steps).forEach((match, i) => {
      const other = stepFigures(pooled.steps)[i];
      if (other) console.log(`  steps, ${match[1]} at once: ${match[2]} → ${other[2]} steps/s (${(Number(other[2]) / Number(match[2])).toFixed(2)}x); step p50 ${match[3]} → ${other[3]} ms, p99 ${match[4]} → ${other[4]} ms`);
    });
    overheads(direct.machines).forEach((match, i) => {
      const other = overheads(pooled.machines)[i];
      const rates = [machinesPerSecond(direct.machines)[i], machinesPerSecond(pooled.machines)[i]];
      if (other) console.log(`  machines, phase ${i + 1}: overhead per machine p50 ${match[1]} → ${other[1]} ms; ${rates[0]} → ${rates[1]} machines/s`);
    });
  } finally {
    await bouncer.close();
  }
}

export async function run(): Promise<void> {
  await migrateLatest(DATABASE_URL);
  if (PARTS.includes('counts')) await countsPart();
  if (PARTS.includes('pooler')) await poolerPart();
}
