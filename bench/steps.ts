import { createCanvas } from '@napi-rs/canvas';
import { Queue, Worker } from 'bullmq';
import { io, type Socket } from 'socket.io-client';
import { loadConfig } from '../shared/config';
import { migrateLatest } from '../shared/db/knex';
import { createRedis } from '../shared/redis';
import { startDeskhand } from '../bin/start';
import { DesktopEvents, type ActMessage, type Observation, type ResultMessage } from '../shared/desktop/protocol';

/**
 * `npm run bench -- steps`: the service's own overhead per agent step, with a model and a
 * computer that take no time (the scripted model, and a computer that answers every action at
 * once with the same small screenshot). A step here is a whole cycle: step job → model turn →
 * guardrail judgement → action to the computer → result stored (frame, events) → next step job.
 * Baseline in the same run: a chain of BullMQ no-op jobs, each enqueuing the next (the floor of
 * one queue hop, which every step pays at least once).
 */

const TASKS = Number(process.env.BENCH_TASKS ?? 16);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;

async function baseline(redisUrl: string, prefix: string): Promise<{ perSecond: number; p50: number; p99: number }> {
  const connection = createRedis(redisUrl, { blocking: true });
  const queue = new Queue('bench-noop', { connection, prefix });
  const gaps: number[] = [];
  let done = 0;
  const stopAt = Date.now() + SECONDS * 1000;
  const worker = new Worker(
    'bench-noop',
    async (job) => {
      const now = performance.now();
      gaps.push(now - (job.data as { at: number }).at);
      done++;
      if (Date.now() < stopAt) await queue.add('noop', { at: performance.now(), chain: job.data.chain }, { removeOnComplete: true });
    },
    { connection: connection.duplicate(), prefix, concurrency: 50 },
  );
  const started = performance.now();
  await Promise.all(Array.from({ length: TASKS }, (_, chain) => queue.add('noop', { at: performance.now(), chain }, { removeOnComplete: true })));
  while (Date.now() < stopAt + 200) await new Promise((resolve) => setTimeout(resolve, 100));
  const elapsed = (performance.now() - started) / 1000;
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  gaps.sort((a, b) => a - b);
  return { perSecond: done / elapsed, p50: percentile(gaps, 50), p99: percentile(gaps, 99) };
}

/** A computer that answers every action at once. */
function instantComputer(baseUrl: string, code: string, png: Buffer): Promise<Socket> {
  const observation: Observation = {
    width: 64,
    height: 40,
    windows: [{ app: 'TextEdit', title: 'Untitled', bounds: { x: 0, y: 0, width: 64, height: 40 }, system: false }],
    focused_app: 'TextEdit',
    focused: null,
    elements: [],
    dialog: null,
    text: '',
    visible_labels: [],
  };
  const socket = io(`${baseUrl}/desktop`, { transports: ['websocket'] });
  socket.on(DesktopEvents.act, (message: ActMessage) => {
    const result: ResultMessage = { task_id: message.task_id, act_id: message.act_id, result: { ok: true, observation, screenshot: png } };
    socket.emit(DesktopEvents.result, result);
  });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => {
      socket
        .timeout(5000)
        .emitWithAck(DesktopEvents.hello, {
          code,
          device: { os: 'mac', name: 'bench', width: 64, height: 40, app_version: '1.0.20' },
          capabilities: { accessibility: true, page_addresses: true, element_info: true },
        })
        .then(() => resolve(socket), reject);
    });
  });
}

export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const prefix = `bench-steps-${Date.now()}`;
  const config = loadConfig({ ...process.env, DATABASE_URL: databaseUrl, DESKHAND_REDIS_PREFIX: prefix, DESKHAND_SCRIPTED_MODELS: '1', LOG_LEVEL: 'silent', PORT: '0' });
  await migrateLatest(databaseUrl);

  const floor = await baseline(config.redisUrl, prefix);

  const running = await startDeskhand(config, ['web', 'worker-agent']);
  const baseUrl = `http://127.0.0.1:${running.web!.port}`;
  const { secret } = await running.container.orgs.create('bench steps');
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  await fetch(`${baseUrl}/v1/agents`, { method: 'POST', headers, body: JSON.stringify({ agent_id: 'bench', narration: false, guardrails: { max_steps: 500, confirm: [] } }) });
  const canvas = createCanvas(64, 40);
  canvas.getContext('2d').fillRect(0, 0, 10, 10);
  const png = canvas.toBuffer('image/png');

  const sockets: Socket[] = [];
  const taskIds: string[] = [];
  for (let i = 0; i < TASKS; i++) {
    const session = (await (await fetch(`${baseUrl}/v1/sessions`, { method: 'POST', headers, body: JSON.stringify({ agent_id: 'bench' }) })).json()) as { code: string };
    sockets.push(await instantComputer(baseUrl, session.code, png));
    const task = (await (await fetch(`${baseUrl}/v1/sessions/${session.code}/tasks`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'click_at 5 5\nrepeat' }) })).json()) as { task_id: string };
    taskIds.push(task.task_id);
  }
  const measureFrom = new Date(Date.now() + 2000); // skip the warm-up
  await new Promise((resolve) => setTimeout(resolve, 2000 + SECONDS * 1000));
  const measureTo = new Date();
  for (const id of taskIds) await fetch(`${baseUrl}/v1/tasks/${id}/stop`, { method: 'POST', headers });

  const rows: Array<{ task_id: string; ts: Date }> = await running.container.db('task_events')
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
  const steps = rows.length;
  const seconds = (measureTo.getTime() - measureFrom.getTime()) / 1000;
  for (const socket of sockets) socket.disconnect();
  await running.stop();

  console.log(`steps: ${TASKS} tasks at once, ${SECONDS} s measured, instant model and computer, web + worker-agent in one process`);
  console.log(`BullMQ no-op job chain (baseline)        ${floor.perSecond.toFixed(0).padStart(7)} jobs/s   hop p50 ${floor.p50.toFixed(1)} ms   p99 ${floor.p99.toFixed(1)} ms`);
  console.log(`agent steps (turn + action + result)     ${(steps / seconds).toFixed(0).padStart(7)} steps/s  step p50 ${percentile(cycles, 50)} ms   p99 ${percentile(cycles, 99)} ms  (per task, under load)`);
  console.log(`ratio: ${((steps / seconds) / floor.perSecond).toFixed(2)}x of the no-op job rate (targets: >= 300 steps/s, p50 <= 5 ms, p99 <= 20 ms)`);
}
