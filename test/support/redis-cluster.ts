import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePorts } from './ports';
import { waitFor } from './service';

/** One redis-server of the cluster. */
export interface ClusterNodeProcess {
  port: number;
  /** Its cluster bus port (`cluster-port`), chosen free like `port`. */
  busPort: number;
  child: ChildProcess;
}

/**
 * A Redis Cluster of a test's own (three masters, one replica each) from Debian's
 * `redis-server`, on free loopback ports, its files in a temporary folder: never the machine's
 * Redis. Nothing persists; `close` kills and reaps every node and removes the folder.
 */
export interface OwnRedisCluster {
  nodes: ClusterNodeProcess[];
  /** `DESKHAND_REDIS_CLUSTER_NODES`: every node, `127.0.0.1:port,…`. */
  seeds: string;
  /** The port of the master that serves `key`'s slot now (a hash tag counts, as in Redis). */
  masterOf(key: string): Promise<number>;
  /** The masters now, each with the ports of its replicas (a promoted replica has none). */
  masters(): Promise<Array<{ port: number; replicas: number[] }>>;
  /**
   * Kills the master on `port` (`kill -9`), calls `killed` at once (what a test does while the
   * shard has no master), and resolves once its replica has been promoted and every live node
   * reports the cluster `ok` again; answers the new master's port.
   */
  failOver(port: number, killed?: () => void): Promise<{ promoted: number; tookMs: number }>;
  close(): Promise<void>;
}

/** How long a node may be silent before the others count it failed (Redis' default is 15 s). */
const NODE_TIMEOUT_MS = 1000;

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await exited(child);
}

/** `redis-cli` with `args`; its output, or an error with it when it exits non-zero. */
async function redisCli(args: string[]): Promise<string> {
  const cli = spawn('redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  cli.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  cli.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await exited(cli);
  if (cli.exitCode !== 0) throw new Error(`redis-cli ${args.join(' ')} exited with ${cli.exitCode}: ${output}`);
  return output;
}

/** One command to one node, on a connection opened for it (the node may be any role). */
async function ask<T>(port: number, command: string, ...args: string[]): Promise<T> {
  const node = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  node.on('error', () => undefined);
  try {
    await node.connect();
    return (await node.call(command, ...args)) as T;
  } finally {
    node.disconnect();
  }
}

interface NodeEntry {
  id: string;
  port: number;
  /** The id of its master, for a replica. */
  masterId: string;
  myself: boolean;
  master: boolean;
  failed: boolean;
  slots: string[];
}

/** `CLUSTER NODES` as the node on `port` sees the cluster. */
async function clusterNodes(port: number): Promise<NodeEntry[]> {
  const text = await ask<string>(port, 'CLUSTER', 'NODES');
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, masterId, , , , , ...slots] = line.split(' ');
      const flagList = flags!.split(',');
      return { id: id!, port: Number(/:(\d+)@/.exec(address!)?.[1]), masterId: masterId!, myself: flagList.includes('myself'), master: flagList.includes('master'), failed: /fail/.test(flags!), slots };
    });
}

async function clusterOk(port: number): Promise<boolean> {
  try {
    return (await ask<string>(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok');
  } catch {
    return false;
  }
}

/** Whether the node on `port` is a master, or a replica whose link to its master is up. */
async function replicaInSync(port: number): Promise<boolean> {
  const info = await ask<string>(port, 'INFO', 'replication').catch(() => '');
  return info.includes('role:master') || info.includes('master_link_status:up');
}

/** Starts six nodes and joins them as three masters with a replica each. */
export async function startRedisCluster(): Promise<OwnRedisCluster> {
  const dir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-redis-cluster-'));
  const ports = await freePorts(12);
  const nodes: ClusterNodeProcess[] = [];
  const close = async () => {
    await Promise.all(nodes.map((node) => kill(node.child)));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 6; i++) {
      const port = ports[i]!;
      const busPort = ports[i + 6]!;
      const child = spawn(
        'redis-server',
        [
          '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-port', String(busPort),
          '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(NODE_TIMEOUT_MS), '--dir', dir,
          '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction', '--logfile', path.join(dir, `redis-${port}.log`),
          // A replica syncs at once (Redis waits 5 s for more replicas to share one transfer).
          '--repl-diskless-sync-delay', '0',
        ],
        { stdio: 'ignore' },
      );
      nodes.push({ port, busPort, child });
    }
    await Promise.all(nodes.map((node) => waitFor(async () => (await ask<string>(node.port, 'PING').catch(() => '')) === 'PONG', 10_000, `redis-server on port ${node.port}`)));
    await redisCli(['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '1', '--cluster-yes']);
    await waitFor(async () => (await Promise.all(nodes.map((node) => clusterOk(node.port)))).every(Boolean), 20_000, 'the cluster to be ok on every node');
    // A replica that never synced with its master cannot take over from it.
    await waitFor(async () => (await Promise.all(nodes.map((node) => replicaInSync(node.port)))).every(Boolean), 20_000, 'every replica to sync with its master');
  } catch (error) {
    await close();
    throw error;
  }

  const live = () => nodes.filter((node) => node.child.exitCode === null && node.child.signalCode === null);
  return {
    nodes,
    seeds: nodes.map((node) => `127.0.0.1:${node.port}`).join(','),
    async masterOf(key: string) {
      const slot = await ask<number>(live()[0]!.port, 'CLUSTER', 'KEYSLOT', key);
      const table = await ask<Array<[number, number, [string, number, string], ...unknown[]]>>(live()[0]!.port, 'CLUSTER', 'SLOTS');
      const range = table.find(([from, to]) => slot >= from && slot <= to);
      if (!range) throw new Error(`no master serves slot ${slot}`);
      return Number(range[2][1]);
    },
    async masters() {
      const view = (await clusterNodes(live()[0]!.port)).filter((entry) => !entry.failed);
      return view.filter((entry) => entry.master && entry.slots.length > 0).map((master) => ({ port: master.port, replicas: view.filter((entry) => entry.masterId === master.id).map((entry) => entry.port) }));
    },
    async failOver(port: number, killed?: () => void) {
      const node = nodes.find((each) => each.port === port);
      if (!node) throw new Error(`no node on port ${port}`);
      const view = await clusterNodes(port);
      const self = view.find((entry) => entry.myself);
      if (!self?.master) throw new Error(`the node on ${port} is not a master`);
      const replicas = view.filter((entry) => entry.masterId === self.id && !entry.failed).map((entry) => entry.port);
      if (!replicas.length) throw new Error(`the master on ${port} has no replica to promote`);
      const started = Date.now();
      await kill(node.child);
      killed?.();
      const promoted = await waitFor(
        async () => {
          const others = live();
          const views = await Promise.all(others.map((other) => clusterNodes(other.port).catch(() => null)));
          const ok = (await Promise.all(others.map((other) => clusterOk(other.port)))).every(Boolean);
          const view = views.find(Boolean);
          const master = view?.find((entry) => entry.master && !entry.failed && replicas.includes(entry.port) && entry.slots.length > 0);
          return ok && master ? master.port : null;
        },
        30_000,
        `a replica of ${port} to be promoted`,
      );
      return { promoted, tookMs: Date.now() - started };
    },
    close,
  };
}
