// The followers of `npm run bench -- follow`: one process holding many long polls on
// GET /v1/tasks/{task_id}/events, each on its own keep-alive TCP connection, each asking again
// with the returned cursor as soon as its answer arrives. It records when every event reached
// every follower; the bench matches that with publish times.
//
// The followers speak HTTP/1.1 on plain sockets rather than through an HTTP client library: this
// process is the measuring instrument, and its own pauses count as latency. With an undici
// `Client` per follower, each waiting request kept ~15 KB of client state alive for its whole
// wait; V8 copied that from the young generation about once a second, in 13–42 ms pauses, and
// every answer arriving meanwhile was counted late (a p99 of 15–55 ms for a server that answered
// in under 2 ms). Here a waiting follower holds nothing but its socket, and an answer's garbage
// dies young. The server answers with a Content-Length (both servers the bench measures do).
import net from 'node:net';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

export interface FollowLoadStart {
  type: 'start';
  origin: string;
  /** Bearer key; null for the baseline server. */
  key: string | null;
  taskIds: string[];
  followersPerTask: number;
  waitMs: number;
}

export interface FollowLoadResult {
  type: 'result';
  /** Flattened triples: task index, event cursor, arrival (ms since the epoch, sub-ms). */
  deliveries: number[];
  /** Arrival of every answer, events or not. */
  responses: number[];
  errors: number;
  repeats: number;
  empty: number;
  lastError: string | null;
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// Followers join 1,250 a second: faster, and the full stack's accept queue overflows while it
// answers the first polls (connections reset), which is a ramp problem, not what is measured.
const RAMP_BATCH = 250;
const RAMP_PAUSE_MS = 200;
const HEADER_END = Buffer.from('\r\n\r\n');
const RETRY_MS = 100;

let stopping = false;
const sockets = new Set<net.Socket>();
const deliveries: number[] = [];
const responses: number[] = [];
let errors = 0;
/** Events a follower was given again (it asks with the cursor it got, so this should stay 0). */
let repeats = 0;
/** Answers without events (a long poll that ran out, or woke for nothing). */
let empty = 0;
let lastError: string | null = null;

function failed(message: string): void {
  errors++;
  lastError = message;
}

/**
 * One follower: a keep-alive connection asking for the task's events after the cursor it last
 * got. A connection that fails is opened again after a pause (counted as an error).
 */
function follow(origin: URL, taskIndex: number, taskId: string, key: string | null, waitMs: number): void {
  const headers = `Host: ${origin.host}\r\n${key ? `Authorization: Bearer ${key}\r\n` : ''}\r\n`;
  let after = 0;
  let seen = 0;

  const connect = () => {
    const socket = net.connect(Number(origin.port), origin.hostname);
    sockets.add(socket);
    socket.setNoDelay(true);
    let pending: Buffer | null = null;
    const ask = () => socket.write(`GET /v1/tasks/${taskId}/events?after=${after}&wait_ms=${waitMs} HTTP/1.1\r\n${headers}`);

    socket.on('connect', ask);
    socket.on('data', (chunk: Buffer) => {
      const buffer = pending ? Buffer.concat([pending, chunk]) : chunk;
      pending = buffer;
      const end = buffer.indexOf(HEADER_END);
      if (end < 0) return;
      const head = buffer.toString('latin1', 0, end);
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1]);
      if (!Number.isInteger(length)) return void socket.destroy(new Error(`no Content-Length in ${head.split('\r\n')[0]}`));
      const bodyEnd = end + HEADER_END.length + length;
      if (buffer.length < bodyEnd) return;
      pending = null;
      const arrival = now();
      const body = buffer.toString('utf8', end + HEADER_END.length, bodyEnd);
      if (!head.startsWith('HTTP/1.1 200 ')) {
        failed(`${head.split('\r\n')[0]}: ${body.slice(0, 200)}`);
        return void setTimeout(ask, RETRY_MS);
      }
      const answer = JSON.parse(body) as { data: Array<{ cursor: number }>; cursor: number };
      responses.push(arrival);
      if (answer.data.length === 0) empty++;
      for (const event of answer.data) {
        if (event.cursor <= seen) repeats++;
        seen = Math.max(seen, event.cursor);
        deliveries.push(taskIndex, event.cursor, arrival);
      }
      after = answer.cursor;
      if (!stopping) ask();
    });
    socket.on('error', (error) => {
      if (!stopping) failed(error.message);
    });
    socket.on('close', () => {
      sockets.delete(socket);
      if (stopping) return;
      failed(`connection of a follower of ${taskId} closed`);
      setTimeout(connect, RETRY_MS);
    });
  };
  connect();
}

async function start(message: FollowLoadStart): Promise<void> {
  const origin = new URL(message.origin);
  const total = message.taskIds.length * message.followersPerTask;
  for (let n = 0; n < total; n++) {
    // Follower n follows task n mod tasks, so the followers of one task are spread over the ramp.
    const taskIndex = n % message.taskIds.length;
    follow(origin, taskIndex, message.taskIds[taskIndex]!, message.key, message.waitMs);
    if ((n + 1) % RAMP_BATCH === 0) await sleep(RAMP_PAUSE_MS);
  }
  process.send!({ type: 'started' });
}

function stop(): void {
  stopping = true;
  for (const socket of [...sockets]) socket.destroy();
  const result: FollowLoadResult = { type: 'result', deliveries, responses, errors, repeats, empty, lastError };
  process.send!(result, () => process.exit(0));
}

/** BENCH_TRACE=1: once a second on stderr, this process's event-loop delay and GC pauses. */
function trace(): void {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let pauses: number[] = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) pauses.push(entry.duration);
  }).observe({ entryTypes: ['gc'] });
  const ms = (ns: number) => `${(ns / 1e6).toFixed(1)} ms`;
  setInterval(() => {
    process.stderr.write(`[followers] event-loop delay p99 ${ms(delay.percentile(99))} max ${ms(delay.max)}  gc ${pauses.length}x max ${Math.max(0, ...pauses).toFixed(1)} ms\n`);
    delay.reset();
    pauses = [];
  }, 1000).unref();
}
if (process.env.BENCH_TRACE) trace();

process.on('message', (message: FollowLoadStart | { type: 'stop' | 'collect' }) => {
  if (message.type === 'start') void start(message);
  else if (message.type === 'stop') stop();
  // Just before the measured window (the bench runs this process with --expose-gc).
  else if (message.type === 'collect') (globalThis as { gc?: () => void }).gc?.();
});
