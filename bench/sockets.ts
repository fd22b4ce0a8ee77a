import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { loadConfig } from '../shared/config';
import { migrateLatest } from '../shared/db/knex';
import { dropRedisPrefix } from './support/redis-prefix';
import { benchFile, LOADER_FLAGS } from './support/processes';
import type { SocketProbeReply } from './servers/socket-probe';

/**
 * `npm run bench -- sockets`: how many idle desktop connections one web process holds, and what
 * each costs it in memory. The web process runs alone in a child process (web type only, the
 * Redis adapter, PostgreSQL); two client processes open BENCH_CONNECTIONS websocket connections,
 * each saying hello with the pairing code of its own waiting session, and hold them idle. The
 * server reports `process.memoryUsage()` after a forced GC, once before the connections (after a
 * short warm-up that came and went) and once with all of them held. Baseline in the same run: a
 * bare socket.io server with the same namespace and options, and the same number of hello-less
 * connections.
 */

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 5000);
const CLIENT_PROCESSES = 2;
const WARM_UP = 20;
const CONCURRENCY = 50;
const TARGET_HEAP_KB = 12;

type Message = { type: string; [key: string]: unknown };

/**
 * Starts a bench process under bash with a raised open-file limit (ulimit is per process tree),
 * with an IPC channel and a forced GC. `exec` keeps the IPC descriptor and the pid.
 */
function startChild(file: string, env: Record<string, string | undefined>): ChildProcess {
  const child = spawn(
    'bash',
    ['-c', 'ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"', process.execPath, '--expose-gc', ...LOADER_FLAGS, benchFile(`servers/${file}`)],
    { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  child.on('exit', (code, signal) => {
    if (code !== 0 && signal === null) process.stderr.write(`bench/servers/${file} exited with ${code}\n`);
  });
  return child;
}

/** The next message of `type` from the child (a `failed` message or an exit rejects). */
function next<T extends Message>(child: ChildProcess, type: string, timeoutMs = 300_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no ${type} within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: Message) => {
      if (message.type === type) done(null, message as T);
      else if (message.type === 'failed') done(new Error(String(message.message)));
    };
    const onExit = (code: number | null) => done(new Error(`the child exited (${code}) before ${type}`));
    function done(error: Error | null, message?: T) {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(message!);
    }
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

async function ask<T extends Message>(child: ChildProcess, message: Message, replyType: string): Promise<T> {
  const reply = next<T>(child, replyType);
  child.send(message);
  return reply;
}

async function measure(server: ChildProcess): Promise<SocketProbeReply> {
  // Twice: the second reading is the settled one (timers and promises of the last connects done).
  await ask(server, { type: 'measure' }, 'memory');
  return ask<SocketProbeReply & Message>(server, { type: 'measure' }, 'memory');
}

interface Figures {
  held: number;
  connectSeconds: number;
  heapPerConnection: number;
  externalPerConnection: number;
  rssPerConnection: number;
  before: NodeJS.MemoryUsage;
  after: NodeJS.MemoryUsage;
}

/** One side of the bench: warm up, take the baseline, connect everything, measure, let go. */
async function bench(serverFile: string, env: Record<string, string | undefined>, hello: boolean): Promise<Figures> {
  const server = startChild(serverFile, { ...env, BENCH_SESSIONS: String(hello ? CONNECTIONS + WARM_UP : 0) });
  const clients = Array.from({ length: CLIENT_PROCESSES }, () => startChild('socket-clients.ts', env));
  try {
    const [ready] = await Promise.all([next<Message & { port: number; codes: string[] }>(server, 'ready'), ...clients.map((client) => next(client, 'ready'))]);
    const url = `http://127.0.0.1:${ready.port}`;
    const codes = hello ? ready.codes : null;
    const waitSockets = async (count: number) => {
      const deadline = Date.now() + 120_000;
      for (let sleep = 10, held = await countSockets(server); held !== count; held = await countSockets(server), sleep = Math.min(sleep * 2, 500)) {
        if (Date.now() > deadline) throw new Error(`the server holds ${held} sockets, expected ${count}`);
        await new Promise((resolve) => setTimeout(resolve, sleep));
      }
    };

    // Warm-up: code that runs on the first connections (and the hello path) is loaded and compiled.
    await ask(clients[0]!, { type: 'connect', url, count: WARM_UP, codes: codes?.slice(CONNECTIONS) ?? null, concurrency: 5 }, 'connected');
    await ask(clients[0]!, { type: 'disconnect' }, 'disconnected');
    await waitSockets(0);
    const before = await measure(server);
    await snapshot(server, serverFile, 'before');

    const share = Math.ceil(CONNECTIONS / CLIENT_PROCESSES);
    const started = performance.now();
    await Promise.all(
      clients.map((client, i) => {
        const from = i * share;
        const count = Math.max(0, Math.min(share, CONNECTIONS - from));
        return ask(client, { type: 'connect', url, count, codes: codes?.slice(from, from + count) ?? null, concurrency: CONCURRENCY }, 'connected');
      }),
    );
    const connectSeconds = (performance.now() - started) / 1000;
    await waitSockets(CONNECTIONS);
    const after = await measure(server);
    if (after.sockets !== CONNECTIONS) throw new Error(`the server holds ${after.sockets} sockets, expected ${CONNECTIONS}`);
    await snapshot(server, serverFile, 'after');
    const per = (key: keyof NodeJS.MemoryUsage) => (after.usage[key] - before.usage[key]) / CONNECTIONS / 1024;
    return {
      held: after.sockets,
      connectSeconds,
      heapPerConnection: per('heapUsed'),
      externalPerConnection: per('external'),
      rssPerConnection: per('rss'),
      before: before.usage,
      after: after.usage,
    };
  } finally {
    for (const child of [...clients, server]) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }
}

/**
 * With BENCH_HEAP_SNAPSHOT=PATH-PREFIX, writes the server's heap before and after the
 * connections (compare the two in Chrome DevTools to see what one connection holds).
 */
async function snapshot(server: ChildProcess, serverFile: string, when: 'before' | 'after'): Promise<void> {
  if (!process.env.BENCH_HEAP_SNAPSHOT) return;
  const file = `${process.env.BENCH_HEAP_SNAPSHOT}-${serverFile.replace(/\.ts$/, '')}-${when}.heapsnapshot`;
  const written = await ask<Message & { path: string }>(server, { type: 'snapshot', path: file }, 'snapshot');
  console.log(`heap snapshot: ${written.path}`);
}

async function countSockets(server: ChildProcess): Promise<number> {
  // Counting needs no GC, but one message type keeps the probe simple; it takes milliseconds here.
  return (await ask<SocketProbeReply & Message>(server, { type: 'measure' }, 'memory')).sockets;
}

export async function run(): Promise<void> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const prefix = `bench-sockets-${Date.now()}`;
  const env = { ...process.env, DATABASE_URL: databaseUrl, DESKHAND_REDIS_PREFIX: prefix, LOG_LEVEL: 'silent' };
  const config = loadConfig(env);
  await migrateLatest(databaseUrl);

  let bare: Figures;
  let deskhand: Figures;
  try {
    bare = await bench('bare-socketio.ts', env, false);
    deskhand = await bench('deskhand-web-sockets.ts', env, true);
  } finally {
    await dropRedisPrefix(config.redisUrl, prefix);
  }

  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  const row = (name: string, f: Figures) =>
    `${name.padEnd(44)} ${String(f.held).padStart(6)} held   heap ${f.heapPerConnection.toFixed(2).padStart(6)} KB/conn   external ${f.externalPerConnection.toFixed(2).padStart(5)} KB/conn   RSS ${f.rssPerConnection.toFixed(1).padStart(5)} KB/conn   (heap ${mb(f.before.heapUsed)} -> ${mb(f.after.heapUsed)}, RSS ${mb(f.before.rss)} -> ${mb(f.after.rss)}; connected in ${f.connectSeconds.toFixed(1)} s)`;
  console.log(`sockets: ${CONNECTIONS} idle websocket connections from ${CLIENT_PROCESSES} client processes, server in its own process, memory after a forced GC minus before any connection`);
  console.log(row('bare socket.io, no hello (baseline)', bare));
  console.log(row('Deskhand web: hello, session room, Redis', deskhand));
  console.log(
    `ratio: ${(deskhand.heapPerConnection / bare.heapPerConnection).toFixed(2)}x the baseline's heap per connection; ` +
      `Deskhand's own share ${(deskhand.heapPerConnection - bare.heapPerConnection).toFixed(2)} KB (target: <= ${TARGET_HEAP_KB} KB heap per idle connection at 5,000 — ${deskhand.heapPerConnection <= TARGET_HEAP_KB ? 'met' : 'missed'})`,
  );
}
