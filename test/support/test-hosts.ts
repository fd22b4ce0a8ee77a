import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { startPgBouncer, type OwnPgBouncer } from './pgbouncer';
import { waitFor } from './service';

/**
 * Test hosts on one machine: each host is a network namespace with its own loopback and one
 * address on a bridge in the root namespace (`10.77.0.N/24`; the bridge is `10.77.0.1`), made
 * with iproute2 (root only). A process started on a host sees that host's network only, so
 * `localhost` there is the host itself, and it gets a `/tmp` of its own (a tmpfs mounted in the
 * process's own mount namespace): what one process writes there no other process sees. The rest
 * of the file system and the process ids are shared (namespaces separate the network, not the
 * disk). Everything made is named `dhsh-<tag>-…`, the tag being the owning test process's pid in
 * base 36, so that a later run can tell and remove what a crashed run left behind.
 */

const run = promisify(execFile);
const PREFIX = 'dhsh';
export const SUBNET = '10.77.0';
/** The bridge's address: the root namespace (PostgreSQL's machine, and the test itself) seen from the hosts. */
export const GATEWAY = `${SUBNET}.1`;
const REPO = path.join(__dirname, '..', '..');

async function ip(...args: string[]): Promise<string> {
  try {
    return (await run('ip', args)).stdout;
  } catch (error) {
    const failed = error as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(' ')}: ${failed.stderr?.trim() || failed.message}`);
  }
}

const quietly = (promise: Promise<unknown>) => promise.then(() => undefined, () => undefined);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The owning test process of a `dhsh-<tag>…` name, or null for a name not of this kind. */
function ownerOf(name: string): number | null {
  const match = /^dhsh-([0-9a-z]+)(?:-|$)/.exec(name);
  return match ? parseInt(match[1]!, 36) : null;
}

/** The pids whose network namespace is `netns`. */
async function pidsIn(netns: string): Promise<number[]> {
  const out = await ip('netns', 'pids', netns).catch(() => '');
  return out.split('\n').map((line) => Number(line.trim())).filter((pid) => pid > 0);
}

/** SIGKILLs every process in `netns` (all started by the host's owner) and waits until none is left. */
async function killAllIn(netns: string): Promise<number[]> {
  const killed = new Set<number>();
  await waitFor(async () => {
    const pids = await pidsIn(netns);
    for (const pid of pids) {
      killed.add(pid);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    return pids.length === 0;
  }, 10_000, `every process on ${netns} to end`);
  return [...killed];
}

/**
 * Removes what crashed earlier runs of this file left: processes in their namespaces, the
 * namespaces, links, a PgBouncer in the root namespace (its pid kept in the run's folder), the
 * run's folder. A run whose owner still lives is left alone.
 */
export async function removeStale(): Promise<void> {
  const stale = (name: string) => {
    const owner = ownerOf(name);
    return owner !== null && owner !== process.pid && !alive(owner);
  };
  const namespaces = (await ip('netns', 'list').catch(() => '')).split('\n').map((line) => line.split(' ')[0]!).filter((name) => name.startsWith(`${PREFIX}-`));
  for (const netns of namespaces.filter(stale)) {
    await killAllIn(netns);
    await quietly(ip('netns', 'del', netns));
  }
  const links = (await ip('-o', 'link', 'show')).split('\n').map((line) => /^\d+:\s+([^:@\s]+)/.exec(line)?.[1]).filter((name): name is string => !!name?.startsWith(`${PREFIX}-`));
  for (const link of links.filter(stale)) await quietly(ip('link', 'del', link));
  for (const entry of fs.readdirSync(tmpdir()).filter((name) => name.startsWith(`${PREFIX}-`) && stale(name))) {
    const dir = path.join(tmpdir(), entry);
    const pidFile = path.join(dir, 'pgbouncer.pid');
    if (fs.existsSync(pidFile)) {
      const pid = Number(fs.readFileSync(pidFile, 'utf8'));
      // Only the PgBouncer that run started: its command line names the run's folder.
      let cmdline = '';
      try {
        cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        // gone already
      }
      if (pid > 0 && cmdline.includes(dir)) process.kill(pid, 'SIGKILL');
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** One process on a test host. */
export interface HostProcess {
  name: string;
  child: ChildProcess;
  /** What it wrote on stdout and stderr (the last 200 kB), for a failing test's message. */
  output(): string;
  /** Its stdout lines as they come. */
  onLine(listener: (line: string) => void): void;
  exited: Promise<void>;
}

export interface RunOptions {
  env?: Record<string, string>;
  /** A Node IPC channel (for `process.send`), as `fork` gives. */
  ipc?: boolean;
}

export class TestHost {
  private readonly processes: HostProcess[] = [];

  constructor(
    readonly label: string,
    readonly netns: string,
    readonly address: string,
    /** The root namespace's end of the host's veth: down means the host is cut off. */
    private readonly link: string,
  ) {}

  /** The host's temporary folder (`TMPDIR` of its processes); a tmpfs of each process's own inside. */
  get tmp(): string {
    return path.join(tmpdir(), `${this.netns}-tmp`);
  }

  /**
   * Starts `argv` on this host, with a temporary folder of its own (`TMPDIR`: a tmpfs mounted in
   * the process's own mount namespace, which `ip netns exec` makes; not over `/tmp` itself, where
   * the checkout under test may live), the repository as its working folder. Its output is kept
   * (and copied to this process's stderr with `TEST_CHILD_LOGS=1`).
   */
  run(name: string, argv: string[], options: RunOptions = {}): HostProcess {
    fs.mkdirSync(this.tmp, { recursive: true });
    const child = spawn(
      'ip',
      ['netns', 'exec', this.netns, 'sh', '-c', 'mount -t tmpfs -o mode=1777,size=512m dhsh-tmp "$TMPDIR" && exec "$@"', name, ...argv],
      { cwd: REPO, env: { ...process.env, ...options.env, TMPDIR: this.tmp }, stdio: ['ignore', 'pipe', 'pipe', ...(options.ipc ? (['ipc'] as const) : [])] },
    );
    let output = '';
    let partial = '';
    const listeners: Array<(line: string) => void> = [];
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-200_000);
      if (process.env.TEST_CHILD_LOGS) process.stderr.write(`[${this.label}/${name}] ${chunk.toString()}`);
    };
    child.stdout!.on('data', (chunk: Buffer) => {
      keep(chunk);
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      for (const line of lines) for (const listener of listeners) listener(line);
    });
    child.stderr!.on('data', keep);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const started: HostProcess = { name, child, output: () => output, onLine: (listener) => listeners.push(listener), exited };
    this.processes.push(started);
    return started;
  }

  /** Every process started here, with the last `tail` characters each wrote; for a failing test's message. */
  outputs(tail = 4000): string {
    return this.processes.map((each) => `--- ${this.label}/${each.name} (pid ${each.child.pid}, exit ${each.child.exitCode ?? each.child.signalCode ?? 'running'})\n${each.output().slice(-tail)}`).join('\n');
  }

  /** Kills every process on the host (`kill -9`), waits until none is left, and answers their pids. */
  killAll(): Promise<number[]> {
    return killAllIn(this.netns);
  }

  /** Takes the host's link down: from now on nothing reaches it and it reaches nothing. */
  async unplug(): Promise<void> {
    await ip('link', 'set', this.link, 'down');
  }
}

/** A bridge with test hosts on it. `close` kills every process on them and removes all of it. */
export class TestNetwork {
  readonly hosts: TestHost[] = [];
  /** A folder of this run's own in the root namespace (PgBouncer's settings). */
  readonly dir: string;
  private readonly tag: string;
  private readonly bridge: string;

  private constructor(tag: string) {
    this.tag = tag;
    this.bridge = `${PREFIX}-${tag}-br`;
    this.dir = path.join(tmpdir(), `${PREFIX}-${tag}`);
  }

  /** Removes what crashed runs left, then makes the bridge (`10.77.0.1/24`). */
  static async create(): Promise<TestNetwork> {
    if (process.getuid?.() !== 0) throw new Error('test hosts need root (network namespaces)');
    await removeStale();
    const taken = (await ip('-4', '-o', 'addr', 'show')).split('\n').find((line) => line.includes(` ${SUBNET}.`));
    if (taken) throw new Error(`${SUBNET}.0/24 is in use on this machine (another run of a several-hosts test?): ${taken.trim()}`);
    const network = new TestNetwork(process.pid.toString(36));
    fs.mkdirSync(network.dir, { recursive: true, mode: 0o755 });
    try {
      await ip('link', 'add', network.bridge, 'type', 'bridge');
      await ip('addr', 'add', `${GATEWAY}/24`, 'dev', network.bridge);
      await ip('link', 'set', network.bridge, 'up');
    } catch (error) {
      await network.close();
      throw error;
    }
    return network;
  }

  /** A host named `label` at `10.77.0.<octet>` (2 to 254). */
  async addHost(label: string, octet: number): Promise<TestHost> {
    const netns = `${PREFIX}-${this.tag}-${label}`;
    const link = `${PREFIX}-${this.tag}-v${octet}`;
    const peer = `${PREFIX}-${this.tag}-p${octet}`;
    const address = `${SUBNET}.${octet}`;
    await ip('netns', 'add', netns);
    const host = new TestHost(label, netns, address, link);
    this.hosts.push(host);
    await ip('link', 'add', link, 'type', 'veth', 'peer', 'name', peer);
    await ip('link', 'set', peer, 'netns', netns);
    await ip('link', 'set', link, 'master', this.bridge, 'up');
    await ip('-n', netns, 'link', 'set', peer, 'name', 'eth0');
    await ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    await ip('-n', netns, 'link', 'set', 'eth0', 'up');
    await ip('-n', netns, 'link', 'set', 'lo', 'up');
    return host;
  }

  /**
   * `host` is lost: every process on it killed, then its link taken down, so that whoever tries
   * it again waits for an answer that never comes. In between, the kernel closes the processes'
   * connections, and the link goes down only once no peer (the root namespace or another host)
   * still counts a connection to it as established: taken down at once, a close (a FIN, or the
   * RST of a socket with unread data) can be dropped with the link's queue, and the peers would
   * only find out by their own timeouts, as when a machine loses power (docs/operations.md,
   * "Several hosts").
   */
  async cutOff(host: TestHost): Promise<number[]> {
    const killed = await host.killAll();
    const peers = [null, ...this.hosts.filter((other) => other !== host).map((other) => other.netns)];
    const stillOpen = async (netns: string | null) => {
      const ss = ['ss', '-Htan', 'state', 'established', 'dst', host.address];
      return (await (netns ? run('ip', ['netns', 'exec', netns, ...ss]) : run(ss[0]!, ss.slice(1)))).stdout.trim() !== '';
    };
    await waitFor(async () => !(await Promise.all(peers.map(stillOpen))).some(Boolean), 5_000, `every peer of ${host.label} to see its connections close`).catch(() => undefined);
    await host.unplug();
    return killed;
  }

  /** What every host's processes wrote (the last `tail` characters of each), for a failing test's message. */
  outputs(tail?: number): string {
    return this.hosts.map((host) => host.outputs(tail)).join('\n');
  }

  async close(): Promise<void> {
    for (const host of this.hosts) {
      await quietly(host.killAll());
      await quietly(ip('netns', 'del', host.netns));
      fs.rmSync(host.tmp, { recursive: true, force: true });
    }
    // A veth goes with its namespace; one left half-made does not.
    const links = (await ip('-o', 'link', 'show').catch(() => '')).split('\n').map((line) => /^\d+:\s+([^:@\s]+)/.exec(line)?.[1]).filter((name): name is string => !!name?.startsWith(`${PREFIX}-${this.tag}-`));
    for (const link of links) await quietly(ip('link', 'del', link));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Redis Cluster whose nodes all run on one test host, announcing the host's address. */
export interface HostRedisCluster {
  /** `DESKHAND_REDIS_CLUSTER_NODES`: every node, `10.77.0.N:port,…`. */
  seeds: string;
  ports: number[];
  close(): Promise<void>;
}

async function askNode<T>(host: string, port: number, ...command: string[]): Promise<T> {
  const node = new Redis({ host, port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  node.on('error', () => undefined);
  try {
    await node.connect();
    return (await node.call(command[0]!, ...command.slice(1))) as T;
  } finally {
    node.disconnect();
  }
}

/**
 * Three masters with a replica each (Debian's `redis-server`) on `host`, ports 7000 to 7005 (the
 * host's own: nothing else listens there), each announcing the host's address to the cluster
 * and to clients (`cluster-announce-ip`), so that what clients learn from `CLUSTER SLOTS` can be
 * reached from other hosts. Nothing persists.
 */
export async function startRedisClusterOn(host: TestHost): Promise<HostRedisCluster> {
  const ports = [7000, 7001, 7002, 7003, 7004, 7005];
  const nodes = ports.map((port) =>
    host.run(`redis-${port}`, [
      'redis-server', '--port', String(port), '--bind', host.address, '--protected-mode', 'no', '--cluster-enabled', 'yes',
      '--cluster-announce-ip', host.address, '--cluster-config-file', path.join(host.tmp, `nodes-${port}.conf`), '--cluster-node-timeout', '2000',
      '--dir', host.tmp, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction', '--repl-diskless-sync-delay', '0',
    ]),
  );
  const close = async () => {
    for (const node of nodes) if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGKILL');
    await Promise.all(nodes.map((node) => node.exited));
  };
  try {
    await Promise.all(ports.map((port) => waitFor(async () => (await askNode<string>(host.address, port, 'PING').catch(() => '')) === 'PONG', 10_000, `redis-server on ${host.address}:${port}`)));
    await run('redis-cli', ['--cluster', 'create', ...ports.map((port) => `${host.address}:${port}`), '--cluster-replicas', '1', '--cluster-yes']);
    const ok = async (port: number) => (await askNode<string>(host.address, port, 'CLUSTER', 'INFO').catch(() => '')).includes('cluster_state:ok');
    await waitFor(async () => (await Promise.all(ports.map(ok))).every(Boolean), 20_000, 'the cluster to be ok on every node');
  } catch (error) {
    await close();
    throw new Error(`${(error as Error).message}\n${host.outputs()}`);
  }
  return { seeds: ports.map((port) => `${host.address}:${port}`).join(','), ports, close };
}

/**
 * PgBouncer (test/support/pgbouncer.ts) on the database's machine (the root namespace),
 * listening on `GATEWAY` only and passing every database to PostgreSQL on `127.0.0.1:5432`:
 * the hosts reach the record through it, and PostgreSQL's own settings stay as they are. Its
 * settings and its pid file are in the run's folder, where `removeStale` finds them after a crash.
 */
export async function startPgBouncerOnGateway(network: TestNetwork): Promise<OwnPgBouncer> {
  return startPgBouncer({ listen: GATEWAY, dir: path.join(network.dir, 'pgbouncer'), pidFile: path.join(network.dir, 'pgbouncer.pid') });
}

/**
 * The address desktops and runners use, as a load balancer in front of the web processes gives
 * it: a TCP front on the bridge's address that sends each new connection to the first of its
 * backends that takes it within `connectTimeoutMs` (a web host cut off answers nothing), in
 * order. A connection lives and dies with the backend it went to.
 */
export class FailoverFront {
  /** Connections made, by backend (`host:port`). */
  readonly connections = new Map<string, number>();
  private readonly server: net.Server;
  private readonly open = new Set<net.Socket>();

  constructor(private readonly backends: Array<{ host: string; port: number }>, private readonly connectTimeoutMs = 1000) {
    this.server = net.createServer((client) => this.route(client, 0));
  }

  async listen(address = GATEWAY): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, address, resolve));
    return `http://${address}:${(this.server.address() as net.AddressInfo).port}`;
  }

  private route(client: net.Socket, tried: number): void {
    if (tried === 0) {
      this.open.add(client);
      client.once('close', () => this.open.delete(client));
      client.on('error', () => undefined);
      client.pause();
    }
    const backend = this.backends[tried];
    if (!backend || client.destroyed) {
      client.destroy();
      return;
    }
    const upstream = net.connect({ host: backend.host, port: backend.port });
    let connected = false;
    const timer = setTimeout(() => upstream.destroy(new Error('connect timeout')), this.connectTimeoutMs);
    upstream.on('error', () => {
      clearTimeout(timer);
      if (connected) client.destroy();
      else this.route(client, tried + 1);
    });
    upstream.once('connect', () => {
      clearTimeout(timer);
      connected = true;
      const name = `${backend.host}:${backend.port}`;
      this.connections.set(name, (this.connections.get(name) ?? 0) + 1);
      this.open.add(upstream);
      upstream.once('close', () => {
        this.open.delete(upstream);
        client.destroy();
      });
      client.once('close', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  }

  async close(): Promise<void> {
    for (const socket of this.open) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A request that reached a host's webhook receiver. */
export interface HostDelivery {
  path: string;
  /** The envelope's `id` and `type`. */
  id: string | null;
  type: string | null;
  at: number;
}

/** A webhook receiver on a test host of its own: records each request, answers 200. */
export interface HostReceiver {
  url(pathname?: string): string;
  deliveries: HostDelivery[];
  withId(id: string): HostDelivery[];
}

const RECEIVER_SCRIPT = `
const http = require('node:http');
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let envelope = {};
    try { envelope = JSON.parse(Buffer.concat(chunks).toString()); } catch {}
    process.stdout.write(JSON.stringify({ path: req.url, id: envelope.id ?? null, type: envelope.type ?? null, at: Date.now() }) + '\\n');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"received":true}');
  });
}).listen(8080, process.env.HOST_ADDRESS, () => process.stdout.write('{"listening":true}\\n'));
`;

/** Starts a plain Node HTTP server on `host`, port 8080, that prints one JSON line per request. */
export async function startReceiverOn(host: TestHost): Promise<HostReceiver> {
  const deliveries: HostDelivery[] = [];
  let listening = false;
  const started = host.run('receiver', [process.execPath, '-e', RECEIVER_SCRIPT], { env: { HOST_ADDRESS: host.address } });
  started.onLine((line) => {
    const parsed = JSON.parse(line) as HostDelivery & { listening?: boolean };
    if (parsed.listening) listening = true;
    else deliveries.push(parsed);
  });
  await waitFor(() => {
    if (started.child.exitCode !== null) throw new Error(`the receiver exited: ${started.output()}`);
    return listening;
  }, 10_000, `the receiver on ${host.address}`);
  return {
    url: (pathname = '/hooks') => `http://${host.address}:8080${pathname}`,
    deliveries,
    withId: (id) => deliveries.filter((delivery) => delivery.id === id),
  };
}
