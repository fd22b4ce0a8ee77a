/**
 * `npm run bench -- webhooks`: webhook deliveries per second to a local receiver, beside BullMQ
 * no-op jobs measured in the same run on the same Redis, worker settings and concurrency.
 *
 * Both phases fill the queue first, then start one worker and time it until every job has
 * completed. A delivery is the whole path: load the event and endpoint, make the delivery row,
 * sign, POST through the SSRF-safe client (keep-alive), store the attempt row. The receiver runs
 * in its own process and checks every signature.
 *
 * Environment: BENCH_EVENTS (default 20000), BENCH_DATABASE_URL, REDIS_URL.
 */
import http from 'node:http';
import { fork, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from 'bullmq';
import { loadConfig } from '../shared/config';
import { createContainer, type Container } from '../shared/container';
import { migrateLatest } from '../shared/db/knex';
import { createRedis } from '../shared/redis';
import { verifySignature } from '../shared/http';
import { newId } from '../shared/ids';
import { QUEUE_NAMES } from '../shared/queues/catalog';
import { jobId } from '../shared/queues/job-queues';
import { startQueueWorker } from '../workers/runtime';
import { WEBHOOKS_CONCURRENCY, webhooksWiring } from '../workers/webhooks';
import { LOADER_FLAGS } from './support/processes';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const ROLE = process.env.BENCH_WEBHOOKS_ROLE;

/** The receiver process: answers 200 at once, verifies every signature, reports counts on request. */
function runReceiver(): void {
  let secret = '';
  let received = 0;
  let badSignatures = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received += 1;
      if (!verifySignature(Buffer.concat(chunks), req.headers['service-signature'] as string, secret)) badSignatures += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on('message', (message: { secret?: string }) => {
    if (message.secret) secret = message.secret;
    process.send!({ received, badSignatures });
  });
}

function startReceiverProcess(): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(__filename, [], {
    execArgv: LOADER_FLAGS,
    env: { ...process.env, BENCH_WEBHOOKS_ROLE: 'receiver' },
    stdio: 'inherit',
  });
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number }) => resolve({ child, port: message.port }));
    child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
  });
}

function askReceiver(child: ChildProcess, message: { secret?: string } = {}): Promise<{ received: number; badSignatures: number }> {
  return new Promise((resolve) => {
    child.once('message', (answer: { received: number; badSignatures: number }) => resolve(answer));
    child.send(message);
  });
}

/** Resolves when `worker` has completed `count` jobs; rejects on the first failed job. */
function completions(worker: Worker, count: number): Promise<void> {
  let done = 0;
  return new Promise((resolve, reject) => {
    worker.on('completed', () => {
      done += 1;
      if (done === count) resolve();
    });
    worker.on('failed', (_job, error) => reject(error));
  });
}

async function addInChunks(queue: Queue, jobs: Array<{ name: string; data: object; opts?: { jobId: string } }>): Promise<void> {
  for (let i = 0; i < jobs.length; i += 1000) await queue.addBulk(jobs.slice(i, i + 1000));
}

/** BullMQ no-op jobs on a queue of their own, with the webhooks worker's concurrency and lock settings. */
async function measureNoop(container: Container): Promise<number> {
  const name = 'bench-noop';
  const queue = new Queue(name, { connection: container.redis, prefix: container.config.redisPrefix });
  await addInChunks(queue, Array.from({ length: EVENTS }, (_, i) => ({ name: 'noop', data: { event_id: `evt_${i}` } })));
  const connection = createRedis(container.config, { blocking: true });
  const started = performance.now();
  const worker = new Worker(name, async () => undefined, {
    connection,
    prefix: container.config.redisPrefix,
    concurrency: WEBHOOKS_CONCURRENCY,
    lockDuration: container.config.workerLockDurationMs,
    stalledInterval: container.config.workerStalledIntervalMs,
  });
  await completions(worker, EVENTS);
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  connection.disconnect();
  await queue.obliterate({ force: true });
  await queue.close();
  return EVENTS / seconds;
}

async function measureDeliveries(container: Container, orgId: string): Promise<number> {
  const { db } = container;
  const ids = Array.from({ length: EVENTS }, () => newId('evt'));
  const data = { task: { object: 'task', task_id: 'task_bench', status: 'completed', done: true, result: 'Renewed the insurance until 2027.' } };
  for (let i = 0; i < ids.length; i += 1000) {
    await db('org_events').insert(
      ids.slice(i, i + 1000).map((id) => ({ id, org_id: orgId, type: 'task.completed', task_id: 'task_bench', data: JSON.stringify(data) })),
    );
  }
  const queue = container.queues.queue(QUEUE_NAMES.webhooks);
  // As dispatchOrgEvents enqueues them, in bulk.
  await addInChunks(queue, ids.map((id) => ({ name: 'dispatch', data: { event_id: id }, opts: { jobId: jobId('dispatch', id) } })));
  const started = performance.now();
  const running = startQueueWorker(container, webhooksWiring(container));
  await completions(running.worker, EVENTS);
  const seconds = (performance.now() - started) / 1000;
  await running.close();
  const succeeded = await db('webhook_deliveries').whereIn('event_id', ids.slice(0, 1)).where({ status: 'succeeded' }).count({ n: '*' });
  if (Number(succeeded[0]!.n) !== 1) throw new Error('the first delivery did not succeed');
  return EVENTS / seconds;
}

export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.REDIS_URL,
    DESKHAND_REDIS_PREFIX: `bench-${Date.now()}`,
    DESKHAND_ALLOW_PRIVATE_URLS: '1',
    LOG_LEVEL: 'warn',
  });
  await migrateLatest(databaseUrl);
  const container = createContainer(config);
  let receiver: { child: ChildProcess; port: number } | null = null;
  try {
    const { org } = await container.orgs.create('Bench org');
    receiver = await startReceiverProcess();
    const endpoint = await container.webhooks.update(org.org_id, { url: `http://127.0.0.1:${receiver.port}/hooks` }, { actor: null });
    await askReceiver(receiver.child, { secret: endpoint.secret! });

    const noop = await measureNoop(container);
    const deliveries = await measureDeliveries(container, org.org_id);
    const { received, badSignatures } = await askReceiver(receiver.child);
    if (received < EVENTS) throw new Error(`the receiver saw ${received} of ${EVENTS} deliveries`);
    if (badSignatures > 0) throw new Error(`${badSignatures} deliveries had a bad signature`);
    const attempts = await container.db('webhook_attempts')
      .join('webhook_deliveries', 'webhook_deliveries.id', 'webhook_attempts.delivery_id')
      .where('webhook_deliveries.org_id', org.org_id)
      .select(
        container.db.raw('percentile_cont(0.5) within group (order by duration_ms) as p50'),
        container.db.raw('percentile_cont(0.99) within group (order by duration_ms) as p99'),
      );

    const row = (name: string, perSecond: number) => `${name.padEnd(58)} ${perSecond.toFixed(0).padStart(7)} /s`;
    console.log(`webhooks: ${EVENTS} jobs per phase, worker concurrency ${WEBHOOKS_CONCURRENCY}, receiver in its own process, every signature verified`);
    console.log(row('BullMQ no-op jobs (baseline)', noop));
    console.log(row('webhook deliveries (event -> signed POST -> attempt row)', deliveries));
    console.log(`POST duration per attempt (under load, event-loop waits included): p50 ${Math.round(attempts[0].p50)} ms, p99 ${Math.round(attempts[0].p99)} ms`);
    console.log(`ratio: ${(deliveries / noop).toFixed(2)}x of baseline (target >= 1500 deliveries/s)`);
  } finally {
    receiver?.child.kill();
    await container.queues.queue(QUEUE_NAMES.webhooks).obliterate({ force: true }).catch(() => undefined);
    await container.close();
  }
}

if (ROLE === 'receiver') runReceiver();
