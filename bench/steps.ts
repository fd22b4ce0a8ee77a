import { Queue, Worker } from 'bullmq';
import { createContainer } from '../shared/container';
import { createKnex } from '../shared/db/knex';
import { createRedis } from '../shared/redis';
import { benchServers, cpuProfileFlags, processCpuMs, procfileNodeFlags } from './support/processes';
import { dropRedisPrefix } from './support/redis-prefix';
import { benchWorld } from './support/bench-world';

/**
 * `npm run bench -- steps`: the service's own overhead per agent step, with a model and a
 * computer that take no time (the scripted model, and computers that answer every action at
 * once with the same small screenshot). A step here is a whole cycle: step job → model turn →
 * guardrail judgement → action to the computer → result stored (frame, events) → next step job.
 * Processes as in production: a web process, a worker-agent process, and the computers in a
 * third. Two phases: one task alone (the latency of a step) and BENCH_TASKS at once (steps per
 * second). Baseline in the same run, for each phase: chains of BullMQ no-op jobs, each enqueuing
 * the next (the floor of one queue hop, which every step pays at least once).
 */

const TASKS = Number(process.env.BENCH_TASKS ?? 16);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARM_UP_SECONDS = 2;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

interface Figures {
  perSecond: number;
  p50: number;
  p99: number;
}

async function baseline(redisUrl: string, prefix: string, chains: number): Promise<Figures> {
  const connection = createRedis(redisUrl, { blocking: true });
  const queue = new Queue(`bench-noop-${chains}`, { connection, prefix });
  const gaps: number[] = [];
  let done = 0;
  const stopAt = Date.now() + SECONDS * 1000;
  const worker = new Worker(
    queue.name,
    async (job) => {
      gaps.push(performance.now() - (job.data as { at: number }).at);
      done++;
      if (Date.now() < stopAt) await queue.add('noop', { at: performance.now(), chain: job.data.chain }, { removeOnComplete: true });
    },
    { connection: connection.duplicate(), prefix, concurrency: 50 },
  );
  const started = performance.now();
  await Promise.all(Array.from({ length: chains }, (_, chain) => queue.add('noop', { at: performance.now(), chain }, { removeOnComplete: true })));
  while (Date.now() < stopAt + 200) await new Promise((resolve) => setTimeout(resolve, 100));
  const elapsed = (performance.now() - started) / 1000;
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  gaps.sort((a, b) => a - b);
  return { perSecond: done / elapsed, p50: percentile(gaps, 50), p99: percentile(gaps, 99) };
}

/** `flags`: Node flags, for the service's processes those of their Procfile line. */
/** CPU time a process has used so far, in seconds. */
const cpuSeconds = (pid: number) => (processCpuMs(pid)?.ms ?? 0) / 1000;

export async function run(): Promise<void> {
  const { databaseUrl, prefix, env, config } = await benchWorld('steps');
  const db = createKnex(databaseUrl, { min: 0, max: 2 });

  const servers = benchServers();
  const web = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'web' }, [...procfileNodeFlags('web'), ...cpuProfileFlags()]);
  const worker = await servers.start('deskhand-types.ts', { ...env, BENCH_TYPES: 'worker-agent' }, [...procfileNodeFlags('worker-agent'), ...cpuProfileFlags()]);
  const computers = await servers.start('instant-computers.ts', {}, cpuProfileFlags());
  const baseUrl = `http://127.0.0.1:${web.message.port as number}`;
  const container = createContainer(config);
  const { secret } = await container.orgs.create('bench steps');
  await container.close();
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const api = async (method: string, url: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, unknown>;
  };
  await api('POST', '/v1/agents', { agent_id: 'bench', narration: false, guardrails: { max_steps: 500, confirm: [] } });

  /** Runs `count` tasks at once for the measured window; step figures from their `step` events. */
  const trace = (what: string) => process.env.BENCH_TRACE && process.stderr.write(`${what}\n`);
  async function phase(count: number): Promise<Figures & { cpu: Record<string, number> }> {
    const codes: string[] = [];
    for (let i = 0; i < count; i++) codes.push((await api('POST', '/v1/sessions', { agent_id: 'bench' })).code as string);
    trace(`sessions made: ${codes.length}`);
    const connected = new Promise((resolve) => computers.child.once('message', resolve));
    computers.child.send({ baseUrl, codes });
    await connected;
    trace('computers connected');
    // A task ends at the agent's 500 steps: each computer gets a new one when its task ends.
    const taskIds: string[] = [];
    const current = new Map<string, string>();
    const startTask = async (code: string) => {
      const id = (await api('POST', `/v1/sessions/${code}/tasks`, { prompt: 'click_at 5 5\nrepeat' })).task_id as string;
      taskIds.push(id);
      current.set(code, id);
    };
    for (const code of codes) await startTask(code);
    let running = true;
    const keeper = (async () => {
      while (running) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        for (const code of codes) {
          const task = await api('GET', `/v1/tasks/${current.get(code)}`);
          if (running && task.status !== 'running' && task.status !== 'queued') await startTask(code);
        }
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, WARM_UP_SECONDS * 1000));
    const measureFrom = new Date();
    const cpuBefore = { web: cpuSeconds(web.child.pid!), worker: cpuSeconds(worker.child.pid!), computers: cpuSeconds(computers.child.pid!) };
    await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
    const measureTo = new Date();
    const cpu = {
      web: (cpuSeconds(web.child.pid!) - cpuBefore.web) / SECONDS,
      worker: (cpuSeconds(worker.child.pid!) - cpuBefore.worker) / SECONDS,
      computers: (cpuSeconds(computers.child.pid!) - cpuBefore.computers) / SECONDS,
    };
    running = false;
    await keeper;
    for (const id of current.values()) await api('POST', `/v1/tasks/${id}/stop`, {});
    for (const code of codes) await api('POST', `/v1/sessions/${code}/expire`, {});

    const rows: Array<{ task_id: string; ts: Date }> = await db('task_events')
      .whereIn('task_id', taskIds)
      .andWhere('type', 'step')
      .andWhere('ts', '>=', measureFrom)
      .andWhere('ts', '<', measureTo)
      .orderBy(['task_id', 'cursor'])
      .select('task_id', 'ts');
    const cycles: number[] = [];
    for (let i = 1; i < rows.length; i++) {
      if (rows[i]!.task_id === rows[i - 1]!.task_id) cycles.push(rows[i]!.ts.getTime() - rows[i - 1]!.ts.getTime());
    }
    cycles.sort((a, b) => a - b);
    return { perSecond: rows.length / ((measureTo.getTime() - measureFrom.getTime()) / 1000), p50: percentile(cycles, 50), p99: percentile(cycles, 99), cpu };
  }

  try {
    const lines: string[] = [];
    for (const count of [1, TASKS]) {
      trace(`phase ${count}`);
      const floor = await baseline(config.redisUrl, prefix, count);
      const steps = await phase(count);
      const cpu = Object.entries(steps.cpu).map(([name, cores]) => `${name} ${cores.toFixed(2)}`).join(', ');
      lines.push(
        `${String(count).padStart(3)} at once: BullMQ no-op chain ${floor.perSecond.toFixed(0).padStart(6)} jobs/s (hop p50 ${floor.p50.toFixed(1)} / p99 ${floor.p99.toFixed(1)} ms)` +
          `   agent ${steps.perSecond.toFixed(0).padStart(4)} steps/s (step p50 ${steps.p50} / p99 ${steps.p99} ms)   cores: ${cpu}`,
      );
    }
    console.log(`steps: instant model and computers; web, worker-agent and computers in separate processes; ${SECONDS} s measured per phase`);
    for (const line of lines) console.log(line);
    console.log('targets: one task alone p50 <= 5 ms and p99 <= 20 ms per step; >= 300 steps/s with many at once');
  } finally {
    await servers.stopAll();
    await db.destroy();
    await dropRedisPrefix(config.redisUrl, prefix);
  }
}
