import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createKnex, migrateLatest } from '../shared/db/knex';
import { loadConfig } from '../shared/config';
import { LIVE_MACHINE_STATUSES } from '../shared/machines/machine-rows';
import { benchServers, cpuProfileFlags, databaseBackendsCpuMs, processCpuMs, PROJECT_ROOT, procfileNodeFlags, type ReadyServer, yieldCoresToService } from './support/processes';
import { dropRedisPrefix } from './support/redis-prefix';
import { WatchedRunner } from './support/watched-runner';
import { WatchedDesktops } from './support/desktops';
import { watchQueueHops } from './support/queue-hops';

/**
 * `npm run bench -- evals`: tries per second scheduled and scored through the whole path, with
 * machines that boot at once (`--boot-ms 0`) and the scripted agent. A try: `POST /v1/test_runs`
 * queues it → worker-evals' fair pass requests a machine when a runner has a free slot → the
 * placement sends `machine.make` → the runner boots it and connects it to `/desktop` → the try
 * starts the agent's task on it → worker-agent runs the steps → the task ends → the check script
 * runs on the machine → the try is scored and ends → its machine is destroyed, which frees the
 * slot for the next queued try. Processes as in production: web, worker-agent, worker-evals and
 * worker-clock each in its own; BENCH_RUNNERS reference runners (4 slots each) in the bench's
 * process, which then lowers its own priority (BENCH_NICE, default 19; 0 leaves it): in
 * production the machines run on their runners' hardware, not on the service's cores, and here
 * their screens (a 1440×900 PNG encoded per action) would otherwise hold a core the service's
 * hops wait for. The baseline's desktops live in the same process, at the same priority.
 *
 * Baseline in the same run: the same number of tasks with the same prompt on reference desktop
 * clients (as many as the runners have slots, each starting its next task when the last ended),
 * through `POST /v1/sessions/{id}/tasks`, without evals: what the agent's work costs without
 * the machines and the scheduling around it.
 *
 * Figures come from PostgreSQL's timestamps (a transaction's `now()`, one clock with the bench's):
 * the tries table, their machines, runner commands and tasks. While the run goes, the bench
 * samples every 100 ms how many slots hold a live machine and how many tries wait.
 */

const CASES = Number(process.env.BENCH_CASES ?? 20);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 10);
const RUNNERS = Number(process.env.BENCH_RUNNERS ?? 4);
const SLOTS = Number(process.env.BENCH_SLOTS ?? 4);
const WARM_UP = Number(process.env.BENCH_WARM_UP ?? 16);
const NICE = Number(process.env.BENCH_NICE ?? 19);
const SAMPLE_MS = 100;
const PROMPT = 'open Notes\ntype "x"\nkey cmd+s\ndone "ok"';
const CHECK = 'grep -q x $HOME/Documents/Untitled.txt';

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const pair = (values: number[]) => {
  const ordered = sorted(values);
  return `${percentile(ordered, 50).toFixed(1)} / ${percentile(ordered, 95).toFixed(1)}`;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Db = ReturnType<typeof createKnex>;

/** One sample of the runners' slots while a run goes. */
interface Sample {
  /** Machines holding a slot (starting, running, stopping). */
  live: number;
  /** Machines running (made, not yet being destroyed). */
  running: number;
  queued: number;
  /** When it was taken, ms after the run was created. */
  at: number;
}

export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const prefix = `bench-evals-${Date.now()}`;
  const env = {
    DATABASE_URL: databaseUrl,
    DESKHAND_REDIS_PREFIX: prefix,
    DESKHAND_SCRIPTED_MODELS: '1',
    DESKHAND_RATE_LIMIT_PER_HOUR: '10000000',
    DESKHAND_SESSIONS_PER_HOUR: '10000000',
  };
  const config = loadConfig({ ...process.env, ...env });
  await migrateLatest(databaseUrl);
  const db = createKnex(databaseUrl, { min: 0, max: 3 });
  const dataDirs: string[] = [];
  const version = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const trace = (what: string) => process.env.BENCH_TRACE && process.stderr.write(`${what}\n`);
  const slots = RUNNERS * SLOTS;
  const tries = CASES * REPEAT;

  const servers = benchServers();
  const runners: WatchedRunner[] = [];
  const desktops = new WatchedDesktops();
  try {
    // BENCH_SQL_LOG=DIR: every statement of each process type, timed, in DIR/TYPE.sql.
    const sqlLog = process.env.BENCH_SQL_LOG;
    const start = (type: string, extra: Record<string, string> = {}) =>
      servers.start(sqlLog ? 'deskhand-types-sql-log.ts' : 'deskhand-types.ts', { ...env, ...extra, BENCH_TYPES: type, ...(sqlLog ? { BENCH_SQL_LOG: path.join(sqlLog, `${type}.sql`) } : {}) }, [...procfileNodeFlags(type), ...cpuProfileFlags()]);
    const web = await start('web', { BENCH_ORG: 'bench evals' });
    const [agent, evals, clock] = await Promise.all([start('worker-agent'), start('worker-evals'), start('worker-clock')]);
    // The service's processes are started; the machines and desktops this process holds yield
    // them the cores (yieldCoresToService), as machines on their own hardware would.
    const nice = yieldCoresToService(NICE);
    const cores = coresUsed({ web, 'worker-agent': agent, 'worker-evals': evals, 'worker-clock': clock }, new URL(databaseUrl).pathname.slice(1));
    const baseUrl = `http://127.0.0.1:${web.message.port as number}`;
    const headers = { authorization: `Bearer ${web.message.key as string}`, 'content-type': 'application/json' };
    const api = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(`${baseUrl}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, unknown>;
    };

    const runnerIds: string[] = [];
    for (let i = 0; i < RUNNERS; i++) {
      const { token, runner_id: runnerId } = (await api('POST', '/v1/runners', { name: `bench ${i}` })) as { token: string; runner_id: string };
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-evals-'));
      dataDirs.push(dataDir);
      const runner = new WatchedRunner({ token, baseUrl, name: `bench ${i}`, slots: SLOTS, labels: [], images: ['macos-15'], dataDir, bootMs: 0, version });
      runners.push(runner);
      runnerIds.push(runnerId);
    }
    await Promise.all(runners.map((runner) => runner.start()));
    trace('runners connected');

    const codes: string[] = [];
    for (let i = 0; i < slots; i++) codes.push((await api('POST', '/v1/sessions', {})).code as string);
    await desktops.connect(baseUrl, codes);
    trace('desktops connected');

    const cases = (await api('POST', '/v1/test_cases/batch', {
      cases: Array.from({ length: CASES }, (_, i) => ({ key: `bench-${i}`, name: `bench ${i}`, prompt: PROMPT, start_state: 'macos-15', success: { check_script: CHECK } })),
    })).data as Array<{ test_case_id: string }>;
    const caseIds = cases.map((item) => item.test_case_id);

    /** `count` tasks on the desktops, each starting its next task when its last one ended. */
    const onDesktops = async (count: number): Promise<string[]> => {
      const taskIds: string[] = [];
      let left = count;
      const lane = async (code: string) => {
        while (left > 0) {
          left -= 1;
          const id = (await api('POST', `/v1/sessions/${code}/tasks`, { prompt: PROMPT })).task_id as string;
          taskIds.push(id);
          await desktops.taskEnded(id);
        }
      };
      await Promise.all(codes.map(lane));
      return taskIds;
    };

    /** One run of `repeat` tries per case; samples the slots until every try ended. */
    const evalRun = async (ids: string[], repeat: number): Promise<{ runId: string; samples: Sample[] }> => {
      const created = Date.now();
      const { test_run_id: runId } = (await api('POST', '/v1/test_runs', { test_case_ids: ids, repeat })) as { test_run_id: string };
      const samples: Sample[] = [];
      for (;;) {
        const next = Date.now() + SAMPLE_MS;
        const { rows } = await db.raw(
          `select (select count(*) from machines where runner_id = any(?) and status = any(?))::int as live,
                  (select count(*) from machines where runner_id = any(?) and status = 'running')::int as running,
                  (select count(*) from tries where run_id = ? and status = 'queued')::int as queued,
                  (select count(*) from tries where run_id = ? and status = 'running')::int as running_tries`,
          [runnerIds, LIVE_MACHINE_STATUSES as string[], runnerIds, runId, runId],
        );
        const row = rows[0] as Sample & { running_tries: number };
        // Every try ended: the run is over, whether or not its status says so (see `runStatus`).
        if (!row.queued && !row.running_tries) return { runId, samples };
        samples.push({ live: row.live, running: row.running, queued: row.queued, at: Date.now() - created });
        await sleep(Math.max(0, next - Date.now()));
      }
    };

    trace('warm-up');
    await onDesktops(WARM_UP);
    const { runId: warmUpRun } = await evalRun(caseIds.slice(0, 1), WARM_UP);

    trace('baseline: tasks on desktops');
    let measured = cores();
    const taskIds = await onDesktops(tries);
    const baselineCores = measured();
    trace('evals: one run');
    const queueHops = watchQueueHops(config.redisUrl, prefix, 'evals');
    const mark = Date.now();
    measured = cores();
    const { runId, samples } = await evalRun(caseIds, REPEAT);
    const evalsCores = measured();
    trace('done; reading figures');

    const lines = [
      `evals: instant machines (--boot-ms 0) and the scripted agent; web, worker-agent, worker-evals and worker-clock in separate processes; ${RUNNERS} reference runners × ${SLOTS} slots and ${slots} desktops in the bench's process (nice ${nice ?? 'unchanged'}); ${tries} tries (${CASES} cases × repeat ${REPEAT}) and ${tries} tasks, after ${WARM_UP} of each to warm up`,
      ...(await throughput(db, taskIds, runId)),
      await runStatus(db, [warmUpRun, runId]),
      ...(await hops(db, runId)),
      `  BullMQ wait (added → taken by worker-evals) of the try-advance jobs p50 / p95: ${pair(await queueHops.waits('try', mark))} ms`,
      ...utilisation(samples, slots),
      `cores used (of ${os.cpus().length}): baseline ${baselineCores}; evals ${evalsCores}`,
      'targets: the scheduler\'s overhead per try <= 50 ms p50; no runner slot idle while tries wait',
    ];
    await queueHops.close();
    for (const line of lines) console.log(line);
    for (const code of codes) await api('POST', `/v1/sessions/${code}/expire`, {});
  } finally {
    await desktops.close();
    for (const runner of runners) await runner.stop();
    await servers.stopAll();
    await db.destroy();
    await dropRedisPrefix(config.redisUrl, prefix);
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Whether each run says `completed` once its tries all ended (a second later). The try that
 * ends last completes its run only when it sees no other try open, and two tries ending in
 * concurrent transactions can each see the other still open: then nothing completes the run.
 */
async function runStatus(db: Db, runIds: string[]): Promise<string> {
  await sleep(1000);
  const rows = (await db('test_runs').whereIn('id', runIds).select('id', 'status')) as Array<{ id: string; status: string }>;
  const stuck = rows.filter((row) => row.status !== 'completed');
  return `runs completed once every try ended: ${rows.length - stuck.length} of ${rows.length}${stuck.length ? ` (left ${stuck.map((row) => `${row.id} ${row.status}`).join(', ')})` : ''}`;
}

/**
 * Starts a measure of the CPU each process uses; calling what it returns ends it and gives the
 * cores used on average ("bench" is the runners' machines and the desktops, in this process).
 */
function coresUsed(servers: Record<string, ReadyServer>, databaseName: string): () => () => string {
  const read = (): Record<string, number> => ({
    ...Object.fromEntries(Object.entries(servers).map(([name, server]) => [name, processCpuMs(server.child.pid!)?.ms ?? 0])),
    bench: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
    postgres: databaseBackendsCpuMs(databaseName),
  });
  return () => {
    const before = read();
    const started = performance.now();
    return () => {
      const after = read();
      const elapsed = performance.now() - started;
      return Object.entries(after).map(([name, cpuMs]) => `${name} ${((cpuMs - before[name]!) / elapsed).toFixed(2)}`).join(', ');
    };
  };
}

const ms = (column: string) => `extract(epoch from ${column}) * 1000`;

/** Tries/s against tasks/s (first created → last ended), and the time of one try against one task. */
async function throughput(db: Db, taskIds: string[], runId: string): Promise<string[]> {
  const tasks = (await db('tasks').whereIn('id', taskIds).select(db.raw(`${ms('created_at')} as created`), db.raw(`${ms('ended_at')} as ended`), 'status')) as Array<{ created: string; ended: string; status: string }>;
  const taskSpan = (Math.max(...tasks.map((t) => Number(t.ended))) - Math.min(...tasks.map((t) => Number(t.created)))) / 1000;
  const taskTimes = tasks.map((t) => Number(t.ended) - Number(t.created));
  const run = (await db('test_runs').where({ id: runId }).first(db.raw(`${ms('created_at')} as created`))) as { created: string };
  const lastEnded = (await db('tries').where({ run_id: runId }).first(db.raw(`${ms('max(ended_at)')} as ended`))) as { ended: string };
  const runSpan = (Number(lastEnded.ended) - Number(run.created)) / 1000;
  const rows = (await db('tries as t')
    .join('tasks as k', 'k.id', 't.task_id')
    .where('t.run_id', runId)
    .select('t.status', 't.infra_retries', db.raw(`${ms('t.started_at')} as started`), db.raw(`${ms('t.ended_at')} as ended`), db.raw(`${ms('k.created_at')} as task_created`), db.raw(`${ms('k.ended_at')} as task_ended`))) as Array<{ status: string; infra_retries: number; started: string; ended: string; task_created: string; task_ended: string }>;
  const tryTimes = rows.map((r) => Number(r.ended) - Number(r.started));
  const tryTaskTimes = rows.map((r) => Number(r.task_ended) - Number(r.task_created));
  const statuses = (items: Array<{ status: unknown }>) => Object.entries(items.reduce<Record<string, number>>((count, item) => ({ ...count, [String(item.status)]: (count[String(item.status)] ?? 0) + 1 }), {})).map(([status, n]) => `${n} ${status}`).join(', ');
  const perSecond = { tasks: tasks.length / taskSpan, tries: rows.length / runSpan };
  return [
    `baseline: ${tasks.length} tasks on desktops (${statuses(tasks)}) in ${taskSpan.toFixed(2)} s: ${perSecond.tasks.toFixed(1)} tasks/s; a task (created → ended) p50 / p95 ${pair(taskTimes)} ms`,
    `evals:    ${rows.length} tries (${statuses(rows)}, ${rows.reduce((sum, r) => sum + Number(r.infra_retries), 0)} infrastructure retries) in ${runSpan.toFixed(2)} s (run created → its last try ended): ${perSecond.tries.toFixed(1)} tries/s, ${(perSecond.tries / perSecond.tasks).toFixed(2)}x the baseline's tasks/s`,
    `  a try (started → ended) p50 / p95 ${pair(tryTimes)} ms; its task (created → ended) ${pair(tryTaskTimes)} ms; try − its task ${pair(rows.map((_, i) => tryTimes[i]! - tryTaskTimes[i]!))} ms`,
  ];
}

/**
 * Where a try's time goes, hop by hop (p50 / p95 over the run's tries), from PostgreSQL's
 * timestamps. The scheduler's overhead per try is the sum of its own hops: placement (from when
 * the machine could be placed to its make sent), machine made → task created, task ended → check
 * sent, check answered → try ended. A try's machine is requested as soon as a slot is about to
 * free (the try before it on that slot ended and let its machine go), so it may wait for that
 * slot's destroy: it could be placed from whichever is later, its request or the end of the
 * runner's last machine to end before its make was sent (the slot it took). Not in the overhead:
 * the runner's and the socket hops' share of a command (sent → answered), the agent's task, and
 * the slot's turnaround after the try (destroy), shown apart.
 */
async function hops(db: Db, runId: string): Promise<string[]> {
  const command = (alias: string, type: string) =>
    `left join lateral (select sent_at, finished_at from runner_commands c where c.machine_id = t.machine_id and c.type = '${type}' order by c.sent_at desc limit 1) ${alias} on true`;
  const { rows } = await db.raw(
    `select ${ms('t.created_at')} as queued, ${ms('t.started_at')} as started, ${ms('m.created_at')} as machine,
            ${ms('mk.sent_at')} as make_sent, ${ms('mk.finished_at')} as made,
            ${ms('k.created_at')} as task_created, ${ms('k.ended_at')} as task_ended,
            ${ms('ck.sent_at')} as check_sent, ${ms('ck.finished_at')} as checked,
            ${ms('t.ended_at')} as ended, ${ms('ds.sent_at')} as destroy_sent, ${ms('ds.finished_at')} as destroyed,
            ${ms('greatest(m.created_at, (select max(o.ended_at) from machines o where o.runner_id = m.runner_id and o.ended_at <= mk.sent_at))')} as placeable
       from tries t join machines m on m.id = t.machine_id join tasks k on k.id = t.task_id
       ${command('mk', 'machine.make')} ${command('ck', 'machine.run')} ${command('ds', 'machine.destroy')}
      where t.run_id = ?`,
    [runId],
  );
  const at = (rows as Array<Record<string, string>>).map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, Number(value)])));
  const span = (from: string, to: string) => at.map((row) => row[to]! - row[from]!);
  const own = at.map((row) => row.make_sent! - row.placeable! + (row.task_created! - row.made!) + (row.check_sent! - row.task_ended!) + (row.ended! - row.checked!));
  const hop = (name: string, values: number[]) => `  ${name.padEnd(72)} ${pair(values)} ms`;
  return [
    'where a try\'s time goes (p50 / p95 ms, PostgreSQL timestamps):',
    hop('queued (run created → try started: waiting for a slot)', span('queued', 'started')),
    hop('try started → machine row (same transaction)', span('started', 'machine')),
    hop('  machine row → make sent (waiting for a slot, then placed)', span('machine', 'make_sent')),
    hop('* placeable (machine row, or its slot freed if later) → make sent', span('placeable', 'make_sent')),
    hop('  make sent → made (emitter, web, runner boots, /desktop hello, settle)', span('make_sent', 'made')),
    hop('* made → task created (owner told, try advanced, task created)', span('made', 'task_created')),
    hop('  task created → ended (the agent: worker-agent and the machine)', span('task_created', 'task_ended')),
    hop('* task ended → check sent (try advanced, script command)', span('task_ended', 'check_sent')),
    hop('  check sent → answered (emitter, web, runner runs it, settle)', span('check_sent', 'checked')),
    hop('* check answered → try ended (owner told, try advanced, scored)', span('checked', 'ended')),
    hop('  try ended → destroy sent (release)', span('ended', 'destroy_sent')),
    hop('  destroy sent → destroyed (slot free)', span('destroy_sent', 'destroyed')),
    `  scheduler's overhead per try (the * hops summed) p50 / p95: ${pair(own)} ms`,
  ];
}

/** How busy the slots were while tries waited. */
function utilisation(samples: Sample[], slots: number): string[] {
  const waiting = samples.filter((sample) => sample.queued > 0);
  const idle = waiting.filter((sample) => sample.live < slots);
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);
  return [
    `slots while tries waited (${waiting.length} samples every ${SAMPLE_MS} ms of ${samples.length}): ${((100 * idle.length) / Math.max(1, waiting.length)).toFixed(1)}% of samples with an idle slot; mean ${mean(waiting.map((s) => s.live)).toFixed(2)} of ${slots} slots holding a machine, ${mean(waiting.map((s) => s.running)).toFixed(2)} with a machine running`,
    `  whole run: mean ${mean(samples.map((s) => s.live)).toFixed(2)} slots holding a machine; the samples with an idle slot (ms after the run was created: slots held): ${idle.map((s) => `${s.at}: ${s.live}`).join(', ') || 'none'}`,
  ];
}
