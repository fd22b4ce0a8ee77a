// The baseline of `npm run bench -- follow`: the least a long-poll server can do. Koa holds each
// GET /v1/tasks/{task_id}/events?after=N&wait_ms=M in memory and answers it when an in-process
// EventEmitter says the task has a new event. The writer sends events over one Redis pub/sub
// channel; the events live in this process's memory. No database, no auth, no rate limit.
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { createRedis } from '../../shared/redis';
import { heapAfterFullGc } from '../support/processes';

interface BaselineEvent {
  cursor: number;
  type: string;
  message: string;
  ts: string;
  data: Record<string, unknown>;
}

const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
// The bench's baseline writer publishes `{ task_id, event }` here.
const channel = process.env.BENCH_BASELINE_CHANNEL || 'follow-baseline';
const logs = new Map<string, BaselineEvent[]>();
const advanced = new EventEmitter();
advanced.setMaxListeners(0);

const subscriber = createRedis(redisUrl, { name: 'follow-baseline', blocking: true });
subscriber.on('message', (_channel: string, message: string) => {
  const { task_id: taskId, event } = JSON.parse(message) as { task_id: string; event: BaselineEvent };
  let log = logs.get(taskId);
  if (!log) logs.set(taskId, (log = []));
  log.push(event);
  advanced.emit(taskId);
});

const eventsAfter = (taskId: string, after: number) => (logs.get(taskId) ?? []).filter((event) => event.cursor > after);
const PATH = /^\/v1\/tasks\/([^/]+)\/events$/;

const app = new Koa();
app.use(async (ctx) => {
  const match = PATH.exec(ctx.path);
  if (!match) return ctx.throw(404);
  const taskId = match[1]!;
  const after = Number(ctx.query.after ?? 0);
  const waitMs = Number(ctx.query.wait_ms ?? 0);
  let data = eventsAfter(taskId, after);
  if (data.length === 0 && waitMs > 0) {
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        advanced.off(taskId, done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      advanced.on(taskId, done);
    });
    data = eventsAfter(taskId, after);
  }
  ctx.body = { data, cursor: data.length ? data[data.length - 1]!.cursor : after };
});

const server = http.createServer(app.callback());
// As the real web process: long polls outlive Node's default keep-alive.
server.requestTimeout = 120_000;
server.headersTimeout = 65_000;
server.keepAliveTimeout = 65_000;

subscriber.subscribe(channel).then(() => {
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
});

function stop(): void {
  server.close(() => {
    subscriber.disconnect();
    process.exit(0);
  });
  server.closeAllConnections();
}
process.on('message', (message: { type?: string }) => {
  if (message.type === 'stop') stop();
  // The bench reads this process's CPU time at the start and end of the measured window.
  if (message.type === 'cpu') process.send?.({ type: 'cpu', usage: process.cpuUsage() });
  // `npm run bench -- follow-heap` reads this process's heap.
  if (message.type === 'heap') process.send?.(heapAfterFullGc());
});
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
