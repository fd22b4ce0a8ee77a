import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../shared/config';
import { createContainer, type Container } from '../shared/container';
import { migrateLatest } from '../shared/db/knex';
import { newId } from '../shared/ids';
import { Notifier } from '../shared/notifier';
import { newPairingCode } from '../shared/sessions/pairing-code';
import { changeTaskIfUnchanged, changeTaskLocked, decodeTaskNote, type TaskChange, type TaskChangeDeps } from '../shared/tasks/task-change';
import { followerNotes, orgEventDispatch } from '../shared/tasks/task-change-observers';
import { readTaskForChange } from '../shared/tasks/tasks.repository';
import type { FollowLoadResult, FollowLoadStart } from './servers/follow-load';
import { CPU_TICK_MS, forkServer, processCpuMs, procfileNodeFlags } from './support/processes';
import { dropRedisPrefix } from './support/redis-prefix';

/**
 * `npm run bench -- follow`: how soon a long poll on GET /v1/tasks/{task_id}/events answers
 * after an event is written, with many followers waiting and events arriving steadily.
 *
 * TASKS tasks (running, on a connected session, made with SQL inserts) each have FOLLOWERS
 * followers in a load process: one keep-alive connection each, `wait_ms=25000`, asking again
 * with the returned cursor as soon as an answer arrives. A writer in this process appends events
 * at RATE per second, round-robin over the tasks, through the service's write path (`changeTaskIfUnchanged`
 * with `change.event(...)` from the row read with its version: one statement writing the update
 * and the event, then the PUBLISH of the task's note on its channel), and notes the time of each
 * publish. Wake-up latency is, for every event and every follower of
 * its task, arrival of the answer carrying it minus the publish of that event (one machine, one
 * clock: `performance.timeOrigin + performance.now()`).
 *
 * Baseline in the same run, with the same followers, rate and spread and the same writer (so
 * that PostgreSQL and the writer load the machine alike): a minimal Koa long-poll server with no
 * database that holds requests in memory and answers them from an EventEmitter when the writer
 * publishes the event to it over Redis pub/sub instead of on the task's channel. The ratio is
 * what our follow side (rate limit, API key, validation, the task notes or PostgreSQL reads,
 * Redis subscriptions) costs on top. Before it, the floor: the same server with a plain
 * node:http handler instead of Koa, what Node alone costs on this machine (on two busy cores its
 * garbage collector's pauses already decide the p99; docs/benchmarks.md, follow). Each phase
 * follows fresh tasks of its own.
 *
 * All servers run with the Node flags of the Procfile's web process (BENCH_NODE_FLAGS="…"
 * instead, to compare).
 *
 * Diagnostics: BENCH_TRACE=1 prints the web process's event-loop delay, database pool, query
 * times and GC pauses, and the followers' event-loop delay and GC pauses, every second;
 * BENCH_PROFILE_DIR=DIR writes a CPU profile of its measured window; BENCH_LATENCIES=FILE appends
 * every delivery's time in the window and latency (to see whether late answers cluster).
 */

const TASKS = Number(process.env.BENCH_TASKS ?? 1000);
const FOLLOWERS_PER_TASK = Number(process.env.BENCH_FOLLOWERS_PER_TASK ?? 5);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const WAIT_MS = 25_000;
/** Node flags of the servers (floor, baseline, web process): the Procfile's web process's, unless BENCH_NODE_FLAGS says otherwise. */
const SERVER_NODE_FLAGS = process.env.BENCH_NODE_FLAGS !== undefined ? process.env.BENCH_NODE_FLAGS.split(/\s+/).filter(Boolean) : procfileNodeFlags('web');
/**
 * The followers' process is the measuring instrument: a pause of its own counts as latency of
 * every answer arriving meanwhile. Its young generation is large enough that the window's garbage
 * never fills it (no scavenge while measuring); it collects fully COLLECT_BEFORE_MS before the
 * window opens (no marking inside); and V8's memory reducer is off (it starts a full collection
 * 8 s after allocation slows down, which fell inside the window and paused it 14–20 ms).
 */
const FOLLOWER_NODE_FLAGS = ['--min-semi-space-size=64', '--max-semi-space-size=64', '--no-memory-reducer', '--expose-gc'];
const COLLECT_BEFORE_MS = 1_000;
/** After the writer stops: time for the last answers to arrive before the followers hang up. */
const GRACE_MS = 2_000;

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


/** Resolves with the child's first message that `accept` takes; rejects if the child exits first. */
export function nextMessage<T>(child: ChildProcess, accept: (message: any) => boolean): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (!accept(message)) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as T);
    };
    const onExit = (code: number | null) => reject(new Error(`${child.spawnargs.at(-1)} exited with ${code}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

async function startServer(file: string, env: Record<string, string>): Promise<{ child: ChildProcess; origin: string }> {
  const child = forkServer(file, env, SERVER_NODE_FLAGS);
  const { port } = await nextMessage<{ port: number }>(child, (message) => typeof message?.port === 'number');
  return { child, origin: `http://127.0.0.1:${port}` };
}

/** Asks a child to stop and waits for it to exit; kills it after 30 s. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.send({ type: 'stop' });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await exited;
  clearTimeout(timer);
  if (code !== 0) process.stderr.write(`${path.basename(child.spawnargs.at(-1)!)} did not stop cleanly (exit ${code})\n`);
}

/** One connected session per task (one running task per computer), then the running tasks. */
/** Vacuums and analyzes the tables the bench writes, then checkpoints (skipped without the privilege). */
export async function settleDatabase(container: Container): Promise<void> {
  await container.db.raw('VACUUM (ANALYZE) tasks, sessions, task_events');
  await container.db.raw('CHECKPOINT').catch(() => undefined);
}

export async function seedTasks(container: Container, orgId: string, count = TASKS): Promise<string[]> {
  const agentId = await container.agents.getDefaultAgentId(orgId);
  const agent = await container.agents.resolveForTask(orgId, agentId, 'published');
  const at = new Date();
  const sessions = Array.from({ length: count }, () => {
    const code = newPairingCode();
    return {
      code,
      org_id: orgId,
      agent_id: agentId,
      token_hash: randomBytes(32).toString('hex'),
      invite_url: agent.invite_url_template.split('{code}').join(code),
      status: 'connected',
      device: JSON.stringify({ os: 'mac', name: 'bench', width: 1440, height: 900, app_version: '1.0.20' }),
      created_at: at,
      paired_at: at,
      last_active_at: at,
      task_count: 1,
    };
  });
  const tasks = sessions.map((session) => ({
    id: newId('task'),
    org_id: orgId,
    session_id: session.code,
    agent_id: agentId,
    agent_version: agent.version,
    agent_draft: false,
    agent_config: JSON.stringify(agent.config),
    model: agent.model,
    effort: agent.effort,
    prompt: 'Follow-bench task: events are written by the bench, nothing runs it',
    status: 'running',
    // Asleep: no step job, no computer action, nothing the loop would pick up.
    phase: 'sleep',
    phase_since: at,
    running_since: at,
    started_at: at,
    created_at: at,
    updated_at: at,
  }));
  await container.db.transaction(async (trx) => {
    await trx.batchInsert('sessions', sessions, 500);
    await trx.batchInsert('tasks', tasks, 500);
    await trx.raw('update sessions s set latest_task_id = t.id from tasks t where t.session_id = s.code and t.org_id = ?', [orgId]);
  });
  return tasks.map((task) => task.id);
}

/** Publish times by task index and cursor. */
type PublishLog = Array<Array<number | undefined>>;

interface Writer {
  write(n: number): Promise<void>;
  published: PublishLog;
}

/**
 * The notifier the writer's change is given: notes the moment each new cursor is published
 * (just after the commit), then publishes it on the task's channel as the service does, or, for
 * the baseline, as `{ task_id, event }` on the baseline server's channel.
 */
class BenchNotifier extends Notifier {
  constructor(
    private readonly container: Container,
    private readonly onPublish: (name: string, message: string, at: number) => void,
    private readonly baselineChannel: string | null,
  ) {
    super(container.redis, container.subscriber, container.config.redisPrefix);
  }

  override async publish(name: string, message = ''): Promise<void> {
    this.onPublish(name, message, now());
    if (this.baselineChannel === null) return super.publish(name, message);
    const event = { cursor: decodeTaskNote(message)!.cursor, type: 'note', message: 'Bench event', ts: new Date().toISOString(), data: {} };
    await this.container.redis.publish(this.baselineChannel, JSON.stringify({ task_id: name.slice('task:'.length), event }));
  }
}

/**
 * Events through the service's write path, for both phases: one `changeTaskIfUnchanged` with one
 * `change.event` each, as the agent loop writes a step (the row read with its version, then one
 * statement writing the update and the event, then the publish), so that PostgreSQL and this
 * process carry the same write load whichever server the followers wait on.
 */
function eventWriter(container: Container, taskIds: string[], baselineChannel: string | null): Writer {
  const published: PublishLog = taskIds.map(() => []);
  const indexByChannel = new Map(taskIds.map((id, index) => [`task:${id}`, index]));
  const notifier = new BenchNotifier(
    container,
    (name, message, at) => {
      const index = indexByChannel.get(name);
      if (index !== undefined) published[index]![decodeTaskNote(message)!.cursor] = at;
    },
    baselineChannel,
  );
  const deps: TaskChangeDeps = {
    db: container.db,
    clock: container.clock,
    logger: container.logger,
    baseUrl: container.config.baseUrl,
    // The root's observers, with this bench's notifier timing each publish.
    observers: [followerNotes(notifier), orgEventDispatch(container.queues)],
  };
  return {
    published,
    async write(n) {
      const taskId = taskIds[n % taskIds.length]!;
      const seen = (await readTaskForChange(container.db, taskId))!;
      const note = (change: TaskChange) => change.event('note', 'Bench event', { n });
      (await changeTaskIfUnchanged(deps, seen, note)) ?? (await changeTaskLocked(deps, taskId, note));
    },
  };
}

/** Calls `write(0), write(1), …` at `rate` per second for `seconds`, without waiting on each. */
async function drive(writer: Writer, seconds: number): Promise<{ errors: number; lastError: string | null }> {
  const started = performance.now();
  const end = started + seconds * 1000;
  const inFlight = new Set<Promise<void>>();
  let n = 0;
  let errors = 0;
  let lastError: string | null = null;
  for (let t = started; t < end; t = performance.now()) {
    const due = Math.floor(((t - started) * RATE) / 1000);
    while (n < due) {
      const write: Promise<void> = writer
        .write(n++)
        .catch((error: Error) => {
          errors++;
          lastError = error.message;
        })
        .finally(() => inFlight.delete(write));
      inFlight.add(write);
    }
    await sleep(1);
  }
  await Promise.all(inFlight);
  return { errors, lastError };
}

interface Figures {
  eventsPerSecond: number;
  responsesPerSecond: number;
  /** Share of one core the server used in the measured window. */
  serverCpu: number;
  /** Server CPU ms per answer. */
  serverCpuPerAnswer: number;
  /** Cores busy in the measured window, by process (Linux only). */
  cores: CpuSnapshot | null;
  p50: number;
  p99: number;
  max: number;
  deliveries: number;
  missed: number;
  followerErrors: number;
  repeats: number;
  empty: number;
  writeErrors: number;
  lastError: string | null;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

/** CPU time (ms) so far of the bench's processes, PostgreSQL, Redis and the whole machine (Linux /proc). */
interface CpuSnapshot {
  server: number;
  load: number;
  writer: number;
  postgres: number;
  redis: number;
  machine: number;
}

function cpuSnapshot(server: ChildProcess, load: ChildProcess): CpuSnapshot | null {
  if (!fs.existsSync('/proc/stat')) return null;
  const [, ...ticks] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal …: busy is everything but idle and iowait.
  const machine = (ticks.reduce((a, b) => a + b, 0) - ticks[3]! - ticks[4]!) * CPU_TICK_MS;
  let postgres = 0;
  let redis = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cpu = processCpuMs(pid);
    if (cpu?.name.startsWith('postgres')) postgres += cpu.ms;
    else if (cpu?.name.startsWith('redis-server')) redis += cpu.ms;
  }
  return {
    server: processCpuMs(server.pid!)?.ms ?? 0,
    load: processCpuMs(load.pid!)?.ms ?? 0,
    writer: processCpuMs(process.pid)?.ms ?? 0,
    postgres,
    redis,
    machine,
  };
}

/** The server's CPU time so far (user + system), in ms. */
async function serverCpuMs(server: ChildProcess): Promise<number> {
  const reply = nextMessage<{ usage: NodeJS.CpuUsage }>(server, (message) => message?.type === 'cpu');
  server.send({ type: 'cpu' });
  const { usage } = await reply;
  return (usage.user + usage.system) / 1000;
}

/** Waits until the server has answered the followers' first polls: its CPU falls quiet. */
async function settle(server: ChildProcess): Promise<void> {
  const deadline = now() + 60_000;
  let before = await serverCpuMs(server);
  for (;;) {
    await sleep(500);
    const cpu = await serverCpuMs(server);
    if (cpu - before < 0.1 * 500 || now() > deadline) return;
    before = cpu;
  }
}

/** Starts the followers against `origin`, runs the writer, and measures. */
async function measure(server: ChildProcess, origin: string, key: string | null, taskIds: string[], writer: Writer): Promise<Figures> {
  const load = forkServer('follow-load.ts', {}, FOLLOWER_NODE_FLAGS);
  try {
    const started = nextMessage(load, (message) => message?.type === 'started');
    const start: FollowLoadStart = { type: 'start', origin, key, taskIds, followersPerTask: FOLLOWERS_PER_TASK, waitMs: WAIT_MS };
    load.send(start);
    await started;
    await settle(server);

    const writeStart = now();
    const from = writeStart + WARMUP_SECONDS * 1000;
    const to = from + SECONDS * 1000;
    const driving = drive(writer, WARMUP_SECONDS + SECONDS);
    await sleep(from - COLLECT_BEFORE_MS - now());
    load.send({ type: 'collect' });
    await sleep(from - now());
    server.send({ type: 'window-start' });
    const cpuFrom = await serverCpuMs(server);
    const machineFrom = cpuSnapshot(server, load);
    await sleep(to - now());
    const cpuTo = await serverCpuMs(server);
    const machineTo = cpuSnapshot(server, load);
    server.send({ type: 'window-end' });
    const written = await driving;
    await sleep(GRACE_MS);

    const result = nextMessage<FollowLoadResult>(load, (message) => message?.type === 'result');
    load.send({ type: 'stop' });
    const { deliveries, responses, errors, repeats, empty, lastError } = await result;
    // Reads the server queued for followers that have now hung up finish before it is stopped.
    await settle(server);

    let events = 0;
    for (const perTask of writer.published) for (const at of perTask) if (at !== undefined && at >= from && at < to) events++;
    const latencies: number[] = [];
    // BENCH_LATENCIES: one line per measured delivery, `ms after the window opened` and `latency ms`.
    const lines: string[] | null = process.env.BENCH_LATENCIES ? [] : null;
    for (let i = 0; i < deliveries.length; i += 3) {
      const published = writer.published[deliveries[i]!]![deliveries[i + 1]!];
      if (published === undefined || published < from || published >= to) continue;
      const latency = deliveries[i + 2]! - published;
      latencies.push(latency);
      lines?.push(`${(published - from).toFixed(1)} ${latency.toFixed(2)}`);
    }
    if (lines) fs.appendFileSync(process.env.BENCH_LATENCIES!, `${lines.join('\n')}\n---\n`);
    latencies.sort((a, b) => a - b);
    const seconds = (to - from) / 1000;
    const answers = responses.filter((at) => at >= from && at < to).length;
    return {
      eventsPerSecond: events / seconds,
      responsesPerSecond: answers / seconds,
      serverCpu: (cpuTo - cpuFrom) / (to - from),
      serverCpuPerAnswer: (cpuTo - cpuFrom) / answers,
      cores:
        machineFrom && machineTo
          ? (Object.fromEntries(Object.keys(machineTo).map((name) => [name, (machineTo[name as keyof CpuSnapshot] - machineFrom[name as keyof CpuSnapshot]) / (to - from)])) as unknown as CpuSnapshot)
          : null,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies.at(-1) ?? NaN,
      deliveries: latencies.length,
      missed: events * FOLLOWERS_PER_TASK - latencies.length,
      followerErrors: errors,
      repeats,
      empty,
      writeErrors: written.errors,
      lastError: lastError ?? written.lastError,
    };
  } finally {
    if (load.exitCode === null) load.kill();
  }
}

export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const prefix = `bench-follow-${Date.now()}`;
  const baselineChannel = `${prefix}:follow-baseline`;
  const env = { DATABASE_URL: databaseUrl, DESKHAND_REDIS_PREFIX: prefix, BENCH_BASELINE_CHANNEL: baselineChannel };
  const config = loadConfig({ ...process.env, ...env, LOG_LEVEL: 'silent' });
  await migrateLatest(databaseUrl);
  const loadAverage = os.loadavg()[0]!;
  const container = createContainer(config);
  const { org, secret } = await container.orgs.create('bench follow');
  const children: ChildProcess[] = [];
  try {
    // Each phase follows tasks of its own, fresh (cursor 0).
    const floorTasks = await seedTasks(container, org.org_id);
    const baselineTasks = await seedTasks(container, org.org_id);
    const fullTasks = await seedTasks(container, org.org_id);
    // PostgreSQL's own work after the seeding (autovacuum of the new rows and of the earlier
    // runs' deleted ones, a checkpoint) would otherwise land in the first phase's window.
    await settleDatabase(container);

    const phase = async (file: string, serverEnv: Record<string, string>, key: string | null, taskIds: string[], channel: string | null): Promise<Figures> => {
      const server = await startServer(file, serverEnv);
      children.push(server.child);
      const figures = await measure(server.child, server.origin, key, taskIds, eventWriter(container, taskIds, channel));
      await stopChild(server.child);
      return figures;
    };
    const floor = await phase('follow-baseline.ts', { ...env, BENCH_BASELINE_SERVER: 'node' }, null, floorTasks, baselineChannel);
    const baseline = await phase('follow-baseline.ts', env, null, baselineTasks, baselineChannel);
    const full = await phase('deskhand-web-follow.ts', env, secret, fullTasks, null);

    const ms = (value: number) => `${value.toFixed(1).padStart(6)} ms`;
    const row = (name: string, f: Figures) =>
      `${name.padEnd(44)} ${f.eventsPerSecond.toFixed(0).padStart(5)} events/s ${f.responsesPerSecond.toFixed(0).padStart(6)} answers/s   wake-up p50 ${ms(f.p50)}  p99 ${ms(f.p99)}  max ${ms(f.max)}   server CPU ${(f.serverCpu * 100).toFixed(0).padStart(3)}% of a core, ${f.serverCpuPerAnswer.toFixed(2)} ms/answer`;
    console.log(
      `follow: ${TASKS} tasks x ${FOLLOWERS_PER_TASK} followers = ${TASKS * FOLLOWERS_PER_TASK} long polls (wait_ms=${WAIT_MS}, one keep-alive connection each, one load process); ` +
        `writer at ${RATE} events/s round-robin over the tasks; ${WARMUP_SECONDS} s warm-up, ${SECONDS} s measured; server, followers and writer in separate processes; ` +
        `load average ${loadAverage.toFixed(1)} on ${os.availableParallelism()} CPUs before the start`,
    );
    console.log(row('node:http long poll, no framework (floor)', floor));
    console.log(row('minimal Koa long poll, no database (baseline)', baseline));
    console.log(row('GET /v1/tasks/{id}/events (full stack)', full));
    for (const [name, f] of [['floor', floor], ['baseline', baseline], ['full stack', full]] as const) {
      if (f.cores) {
        const c = f.cores;
        const other = c.machine - c.server - c.load - c.writer - c.postgres - c.redis;
        console.log(
          `  ${name}: cores busy ${c.machine.toFixed(2)} of ${os.availableParallelism()}: server ${c.server.toFixed(2)}, followers ${c.load.toFixed(2)}, writer ${c.writer.toFixed(2)}, ` +
            `postgres ${c.postgres.toFixed(2)}, redis ${c.redis.toFixed(2)}, anything else ${other.toFixed(2)}` +
            (other > 0.15 ? '  <- other work on this machine disturbed this phase; run again' : ''),
        );
      }
      if (f.missed !== 0 || f.repeats !== 0 || f.empty !== 0 || f.followerErrors !== 0 || f.writeErrors !== 0) {
        console.log(`  ${name}: ${f.missed} deliveries missing (of ${f.deliveries + f.missed}), ${f.repeats} given twice, ${f.empty} answers without events, ${f.followerErrors} follower errors, ${f.writeErrors} write errors; last: ${f.lastError}`);
      }
    }
    console.log(
      `ratio: p50 ${(full.p50 / baseline.p50).toFixed(1)}x, p99 ${(full.p99 / baseline.p99).toFixed(1)}x the baseline's; ` +
        `${full.deliveries} deliveries measured (target: p99 <= 5 ms at ${RATE} events/s: ${full.p99 <= 5 && full.eventsPerSecond >= RATE * 0.98 ? 'met' : 'missed'})`,
    );
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill();
    await container.db('orgs').where({ id: org.org_id }).delete();
    await container.close();
    await dropRedisPrefix(config.redisUrl, prefix);
  }
}
