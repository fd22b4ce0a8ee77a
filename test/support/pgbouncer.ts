import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitFor } from './service';

/**
 * A PgBouncer of a test's own (Debian's `pgbouncer`, installed by `scripts/setup.sh --test`) in
 * transaction pooling mode, in front of the local PostgreSQL, on a free loopback port, its
 * settings in a temporary folder. `close` ends and reaps it and removes the folder.
 */
export interface OwnPgBouncer {
  port: number;
  /** `databaseUrl` (a PostgreSQL URL) with its host and port replaced by this PgBouncer's. */
  through(databaseUrl: string): string;
  /** What PgBouncer wrote (it logs to stderr), for a failing test's message. */
  log(): string;
  close(): Promise<void>;
}

const PGBOUNCER = '/usr/sbin/pgbouncer';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** PgBouncer refuses to run as root: as root, it runs as PostgreSQL's system user (or nobody). */
function runAsUser(): string | null {
  if (process.getuid?.() !== 0) return null;
  try {
    execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    return 'postgres';
  } catch {
    return 'nobody';
  }
}

/** Starts PgBouncer in transaction mode in front of `upstream` (PostgreSQL's host and port). */
export async function startPgBouncer(upstream: { host: string; port: number } = { host: '127.0.0.1', port: 5432 }, options: { poolSize?: number } = {}): Promise<OwnPgBouncer> {
  if (!fs.existsSync(PGBOUNCER)) throw new Error(`${PGBOUNCER} is missing: run scripts/setup.sh --test (it installs Debian's pgbouncer)`);
  const dir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-pgbouncer-'));
  // Read by PgBouncer's own user when it drops root.
  fs.chmodSync(dir, 0o755);
  const port = await freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  const users = path.join(dir, 'users.txt');
  // The local PostgreSQL trusts loopback connections (scripts/setup.sh): PgBouncer does too, for
  // the users listed; any database name goes through to the same one upstream.
  fs.writeFileSync(users, '"postgres" ""\n', { mode: 0o644 });
  fs.writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${upstream.host} port=${upstream.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 20}`,
      'max_client_conn = 1000',
      // node-postgres sends none of these, but a client that does should not be refused.
      'ignore_startup_parameters = extra_float_digits,search_path',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const user = runAsUser();
  const child: ChildProcess = spawn(PGBOUNCER, [...(user ? ['-u', user] : []), ini], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}: ${log}`);
      return accepts(port);
    }, 10_000, `pgbouncer on port ${port}`);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    port,
    through(databaseUrl: string) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    log: () => log,
    close,
  };
}
