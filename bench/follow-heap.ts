import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { loadConfig } from '../shared/config';
import { createContainer } from '../shared/container';
import { migrateLatest } from '../shared/db/knex';
import { nextMessage, seedTasks, stopChild } from './follow';
import { forkServer, procfileNodeFlags } from './support/processes';
import { dropRedisPrefix } from './support/redis-prefix';

/**
 * `npm run bench -- follow-heap`: how much heap a waiting long poll on
 * GET /v1/tasks/{task_id}/events keeps alive in the web process, beside the follow bench's
 * minimal Koa long-poll server and the same server on plain node:http (the floor). Everything a
 * poll keeps until it is answered is copied by V8's scavenger (twice: within the young
 * generation, then into the old), so it sets how long the web process pauses for garbage
 * collection while thousands of followers wait (docs/benchmarks.md, follow).
 *
 * POLLS connections each ask once without waiting (the server's code paths warm, the
 * connections idle in keep-alive), the server's heap is read after a full collection, then
 * each asks again with wait_ms=25000 and, with every poll waiting, the heap is read again. The
 * difference divided by POLLS is the heap per waiting poll. The servers run with the Procfile
 * web line's Node flags and --expose-gc.
 *
 * BENCH_PROFILE_DIR=DIR also writes heap snapshots of the web process at both moments, to diff
 * by constructor or retainer and see what a waiting poll keeps.
 */

const POLLS = Number(process.env.BENCH_POLLS ?? 2000);
const BATCH = 250;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends `{ type }` to the server and resolves with its answer of that type. */
function ask<T>(child: ChildProcess, type: string): Promise<T> {
  const answer = nextMessage<T>(child, (message) => message?.type === type);
  child.send({ type });
  return answer;
}

interface HeapFigures {
  idle: number;
  perConnection: number;
  perPoll: number;
}

async function measure(file: string, env: Record<string, string>, taskIds: string[], key: string | null, snapshots = false): Promise<HeapFigures> {
  const child = forkServer(file, env, [...procfileNodeFlags('web'), '--expose-gc']);
  try {
    const { port } = await nextMessage<{ port: number }>(child, (message) => typeof message?.port === 'number');
    const heap = async () => (await ask<{ heapUsed: number }>(child, 'heap')).heapUsed;
    const idle = await heap();
    let answers = 0;
    const sockets = taskIds.map(() => {
      const socket = net.connect(port, '127.0.0.1');
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (answers += chunk.split('HTTP/1.1 ').length - 1));
      return socket;
    });
    const askAll = async (waitMs: number) => {
      for (let n = 0; n < taskIds.length; n++) {
        sockets[n]!.write(`GET /v1/tasks/${taskIds[n]}/events?after=0&wait_ms=${waitMs} HTTP/1.1\r\nHost: bench\r\n${key ? `Authorization: Bearer ${key}\r\n` : ''}\r\n`);
        if ((n + 1) % BATCH === 0) await sleep(50);
      }
    };
    await askAll(0);
    while (answers < taskIds.length) await sleep(50);
    const snapshot = async () => {
      if (snapshots) process.stderr.write(`heap snapshot: ${(await ask<{ file: string }>(child, 'snapshot')).file}\n`);
    };
    const connected = await heap();
    await snapshot();
    await askAll(25_000);
    await sleep(2_000);
    const waiting = await heap();
    await snapshot();
    if (answers !== taskIds.length) throw new Error(`${answers - taskIds.length} polls were answered instead of waiting`);
    for (const socket of sockets) socket.destroy();
    return { idle, perConnection: (connected - idle) / taskIds.length, perPoll: (waiting - connected) / taskIds.length };
  } finally {
    await stopChild(child);
  }
}

export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const prefix = `bench-follow-heap-${Date.now()}`;
  const env = { DATABASE_URL: databaseUrl, DESKHAND_REDIS_PREFIX: prefix, BENCH_BASELINE_CHANNEL: `${prefix}:follow-baseline` };
  const config = loadConfig({ ...process.env, ...env, LOG_LEVEL: 'silent' });
  await migrateLatest(databaseUrl);
  const container = createContainer(config);
  const { org, secret } = await container.orgs.create('bench follow-heap');
  try {
    const taskIds = await seedTasks(container, org.org_id, POLLS);
    const floor = await measure('follow-baseline.ts', { ...env, BENCH_BASELINE_SERVER: 'node' }, taskIds, null);
    const baseline = await measure('follow-baseline.ts', env, taskIds, null);
    const full = await measure('deskhand-web-follow.ts', env, taskIds, secret, Boolean(process.env.BENCH_PROFILE_DIR));
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(2).padStart(6)} KB`;
    const row = (name: string, f: HeapFigures) =>
      `${name.padEnd(44)} heap per waiting poll ${kb(f.perPoll)}   per idle keep-alive connection ${kb(f.perConnection)}   idle heap ${(f.idle / 1e6).toFixed(1)} MB`;
    console.log(`follow-heap: ${POLLS} long polls waiting (wait_ms=25000), one keep-alive connection each; heap after a full collection; Node flags ${procfileNodeFlags('web').join(' ') || '(none)'}`);
    console.log(row('node:http long poll, no framework (floor)', floor));
    console.log(row('minimal Koa long poll, no database (baseline)', baseline));
    console.log(row('GET /v1/tasks/{id}/events (full stack)', full));
    console.log(`ratio: ${(full.perPoll / baseline.perPoll).toFixed(2)}x the baseline's heap per waiting poll`);
  } finally {
    await container.db('orgs').where({ id: org.org_id }).delete();
    await container.close();
    await dropRedisPrefix(config.redisUrl, prefix);
  }
}
