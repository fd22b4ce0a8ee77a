// The followers of `npm run bench -- follow`: one process holding many long polls on
// GET /v1/tasks/{task_id}/events, each on its own keep-alive connection (an undici Client with no
// pipelining), each asking again with the returned cursor as soon as its answer arrives. It
// records when every event reached every follower; the bench matches that with publish times.
import { Client } from 'undici';

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

let stopping = false;
const clients: Client[] = [];
const loops: Promise<void>[] = [];
const deliveries: number[] = [];
const responses: number[] = [];
let errors = 0;
/** Events a follower was given again (it asks with the cursor it got, so this should stay 0). */
let repeats = 0;
/** Answers without events (a long poll that ran out, or woke for nothing). */
let empty = 0;
let lastError: string | null = null;

async function follow(client: Client, taskIndex: number, taskId: string, key: string | null, waitMs: number): Promise<void> {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  let after = 0;
  let seen = 0;
  while (!stopping) {
    try {
      const { statusCode, body } = await client.request({ method: 'GET', path: `/v1/tasks/${taskId}/events?after=${after}&wait_ms=${waitMs}`, headers });
      const text = await body.text();
      const arrival = now();
      if (statusCode !== 200) throw new Error(`HTTP ${statusCode}: ${text.slice(0, 200)}`);
      const answer = JSON.parse(text) as { data: Array<{ cursor: number }>; cursor: number };
      responses.push(arrival);
      if (answer.data.length === 0) empty++;
      for (const event of answer.data) {
        if (event.cursor <= seen) repeats++;
        seen = Math.max(seen, event.cursor);
        deliveries.push(taskIndex, event.cursor, arrival);
      }
      after = answer.cursor;
    } catch (error) {
      if (stopping) return;
      errors++;
      lastError = (error as Error).message;
      await sleep(100);
    }
  }
}

async function start(message: FollowLoadStart): Promise<void> {
  const total = message.taskIds.length * message.followersPerTask;
  for (let n = 0; n < total; n++) {
    // Follower n follows task n mod tasks, so the followers of one task are spread over the ramp.
    const taskIndex = n % message.taskIds.length;
    const client = new Client(message.origin, {
      pipelining: 1,
      keepAliveTimeout: 60_000,
      keepAliveMaxTimeout: 60_000,
      headersTimeout: message.waitMs + 30_000,
      bodyTimeout: message.waitMs + 30_000,
    });
    clients.push(client);
    loops.push(follow(client, taskIndex, message.taskIds[taskIndex]!, message.key, message.waitMs));
    if ((n + 1) % RAMP_BATCH === 0) await sleep(RAMP_PAUSE_MS);
  }
  process.send!({ type: 'started' });
}

async function stop(): Promise<void> {
  stopping = true;
  await Promise.all(clients.map((client) => client.destroy().catch(() => undefined)));
  await Promise.all(loops);
  const result: FollowLoadResult = { type: 'result', deliveries, responses, errors, repeats, empty, lastError };
  process.send!(result, () => process.exit(0));
}

process.on('message', (message: FollowLoadStart | { type: 'stop' }) => {
  if (message.type === 'start') void start(message);
  else if (message.type === 'stop') void stop();
});
