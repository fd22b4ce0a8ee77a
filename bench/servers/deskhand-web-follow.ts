// The measured side of `npm run bench -- follow`: the real web process (every middleware, the
// rate limiter in Redis, API-key authentication, validation, PostgreSQL reads, Redis
// notifications), serving long polls on GET /v1/tasks/{task_id}/events. The bench creates the org
// and the tasks itself and sends the key with its requests.
//
// Messages from the bench: `cpu` (answers with this process's CPU time), `window-start` and
// `window-end` (the measured window), `stop`; from `npm run bench -- follow-heap`: `heap` (heap
// in use after a full collection, with --expose-gc) and `snapshot` (writes a heap snapshot into
// BENCH_PROFILE_DIR and answers with its path).
// BENCH_TRACE=1: once a second on stderr, event-loop delay, the database pool and query times.
// BENCH_PROFILE_DIR=DIR: a CPU profile of the measured window only (not start-up or the ramp);
// with BENCH_HEAP_WINDOW=1, heap snapshots at its start and end instead, to see what survives it.
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import v8 from 'node:v8';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { loadConfig } from '../../shared/config';
import { startDeskhand, type RunningDeskhand } from '../../bin/start';
import { heapAfterFullGc } from '../support/processes';

let running: RunningDeskhand | null = null;
let profiler: Session | null = null;

startDeskhand(loadConfig({ ...process.env, PORT: '0', LOG_LEVEL: 'silent', DESKHAND_RATE_LIMIT_PER_HOUR: '10000000' }), ['web']).then(
  (started) => {
    running = started;
    if (process.env.BENCH_TRACE) trace(started);
    process.send?.({ port: started.web!.port });
  },
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);

process.on('message', (message: { type?: string }) => {
  if (message.type === 'cpu') process.send?.({ type: 'cpu', usage: process.cpuUsage() });
  else if (message.type === 'window-start' && process.env.BENCH_HEAP_WINDOW) writeSnapshot('window-start');
  else if (message.type === 'window-end' && process.env.BENCH_HEAP_WINDOW) writeSnapshot('window-end');
  else if (message.type === 'window-start' && process.env.BENCH_PROFILE_DIR) void startProfile();
  else if (message.type === 'window-end' && profiler) void stopProfile(process.env.BENCH_PROFILE_DIR!);
  else if (message.type === 'stop') void stop();
  else if (message.type === 'heap') process.send?.(heapAfterFullGc());
  else if (message.type === 'snapshot') process.send?.({ type: 'snapshot', file: v8.writeHeapSnapshot(path.join(process.env.BENCH_PROFILE_DIR ?? '.', `follow-web-${Date.now()}.heapsnapshot`)) });
});
/** A heap snapshot into BENCH_PROFILE_DIR: objects in the second one newer than the first are what survived the window. */
function writeSnapshot(name: string): void {
  fs.mkdirSync(process.env.BENCH_PROFILE_DIR ?? '.', { recursive: true });
  v8.writeHeapSnapshot(path.join(process.env.BENCH_PROFILE_DIR ?? '.', `follow-web-${name}.heapsnapshot`));
}
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());

async function stop(): Promise<never> {
  // The followers have hung up by now, so no request is left to drain.
  const outcome = running ? await running.stop() : { clean: true };
  process.exit(outcome.clean ? 0 : 1);
}

async function startProfile(): Promise<void> {
  profiler = new Session();
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.start');
}

async function stopProfile(dir: string): Promise<void> {
  const session = profiler!;
  profiler = null;
  const { profile } = await session.post('Profiler.stop');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `follow-web-${process.pid}.cpuprofile`), JSON.stringify(profile));
  session.disconnect();
}

function trace(started: RunningDeskhand): void {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let cpu = process.cpuUsage();
  const sent = new Map<string, number>();
  let durations: number[] = [];
  let gcPauses: number[] = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcPauses.push(entry.duration);
  }).observe({ entryTypes: ['gc'] });
  started.container.db.on('query', (query: { __knexQueryUid: string }) => sent.set(query.__knexQueryUid, performance.now()));
  started.container.db.on('query-response', (_response: unknown, query: { __knexQueryUid: string }) => {
    const at = sent.get(query.__knexQueryUid);
    sent.delete(query.__knexQueryUid);
    if (at !== undefined) durations.push(performance.now() - at);
  });
  setInterval(() => {
    const pool = (started.container.db.client as { pool: { numUsed(): number; numFree(): number; numPendingAcquires(): number } }).pool;
    const used = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    durations.sort((a, b) => a - b);
    const gcMs = gcPauses.reduce((a, b) => a + b, 0);
    const ms = (value: number | undefined) => `${(value ?? 0).toFixed(1)} ms`;
    process.stderr.write(
      `[web] cpu ${((used.user + used.system) / 10_000).toFixed(0)}%  event-loop delay p99 ${ms(delay.percentile(99) / 1e6)} max ${ms(delay.max / 1e6)}  ` +
        `db pool used ${pool.numUsed()} waiting ${pool.numPendingAcquires()}  ${durations.length} queries p50 ${ms(durations[durations.length >> 1])} p99 ${ms(durations[Math.floor(durations.length * 0.99)])} max ${ms(durations.at(-1))}  gc ${gcPauses.length}x ${ms(gcMs)} max ${ms(Math.max(0, ...gcPauses))}\n`,
    );
    durations = [];
    gcPauses = [];
    delay.reset();
  }, 1000).unref();
}
