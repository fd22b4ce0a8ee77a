// The baselines of `npm run bench -- follow`: the least a long-poll server can do. It holds each
// GET /v1/tasks/{task_id}/events?after=N&wait_ms=M in memory and answers it when an in-process
// EventEmitter says the task has a new event. The writer sends events over one Redis pub/sub
// channel; the events live in this process's memory. No database, no auth, no rate limit.
// BENCH_BASELINE_SERVER=koa (the default) serves it with a one-middleware Koa app; =node with a
// plain node:http handler, the floor of what Node itself costs on this machine.
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

const answer = (data: BaselineEvent[], after: number) => ({ data, cursor: data.length ? data[data.length - 1]!.cursor : after });

/** The task's events after `after`, once it has any or `waitMs` has passed (no async frame kept while waiting). */
function eventsFor(taskId: string, after: number, waitMs: number): Promise<{ data: BaselineEvent[]; cursor: number }> {
  const data = eventsAfter(taskId, after);
  if (data.length > 0 || waitMs <= 0) return Promise.resolve(answer(data, after));
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      advanced.off(taskId, done);
      resolve(answer(eventsAfter(taskId, after), after));
    };
    const timer = setTimeout(done, waitMs);
    advanced.on(taskId, done);
  });
}

function koaApp(): http.RequestListener {
  const app = new Koa();
  app.use(async (ctx) => {
    const match = PATH.exec(ctx.path);
    if (!match) return ctx.throw(404);
    ctx.body = await eventsFor(match[1]!, Number(ctx.query.after ?? 0), Number(ctx.query.wait_ms ?? 0));
  });
  return app.callback();
}

/** Chains on `eventsFor` rather than awaiting it, so that a waiting poll keeps no frame of ours (a floor). */
function nodeHandler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url!, 'http://baseline');
  const match = PATH.exec(url.pathname);
  if (!match) {
    res.writeHead(404).end();
    return;
  }
  void eventsFor(match[1]!, Number(url.searchParams.get('after') ?? 0), Number(url.searchParams.get('wait_ms') ?? 0)).then((answered) => {
    const body = JSON.stringify(answered);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
  });
}

const server = http.createServer(process.env.BENCH_BASELINE_SERVER === 'node' ? nodeHandler : koaApp());
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
