import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { accepts, freePort } from './ports';
import { waitFor } from './service';

/**
 * A PgBouncer of a test's own (Debian's `pgbouncer`, installed by `scripts/setup.sh --test`) in
 * transaction pooling mode, in front of PostgreSQL, on a free port of the address it listens on,
 * its settings in a folder of its own. `close` ends and reaps it, and removes the folder unless
 * the caller named it.
 */
export interface OwnPgBouncer {
  port: number;
  /** Its process id, for a caller that keeps it to end a PgBouncer a crashed run left. */
  pid: number;
  /** `databaseUrl` (a PostgreSQL URL) with its host and port replaced by this PgBouncer's. */
  through(databaseUrl: string): string;
  /** What PgBouncer wrote (it logs to stderr), for a failing test's message. */
  log(): string;
  close(): Promise<void>;
}

export interface PgBouncerOptions {
  /** The address it listens on (`127.0.0.1` unless said). */
  listen?: string;
  /**
   * A folder to keep its settings in, made if missing and left in place by `close` (the caller
   * removes it). Unless said, a temporary folder that `close` removes.
   */
  dir?: string;
  /** PostgreSQL's host and port (`127.0.0.1:5432` unless said). */
  upstream?: { host: string; port: number };
  /** Server connections per database and user (`default_pool_size`; 20 unless said). */
  poolSize?: number;
  /** A file to write its process id to as soon as it starts, for ending a PgBouncer a crashed run left. */
  pidFile?: string;
}

const PGBOUNCER = '/usr/sbin/pgbouncer';

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

/** Starts PgBouncer in transaction mode on `options.listen`, in front of `options.upstream`. */
export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<OwnPgBouncer> {
  const { listen = '127.0.0.1', upstream = { host: '127.0.0.1', port: 5432 }, poolSize = 20 } = options;
  if (!fs.existsSync(PGBOUNCER)) throw new Error(`${PGBOUNCER} is missing: run scripts/setup.sh --test (it installs Debian's pgbouncer)`);
  const ownDir = options.dir === undefined;
  const dir = ownDir ? fs.mkdtempSync(path.join(tmpdir(), 'deskhand-pgbouncer-')) : options.dir!;
  if (!ownDir) fs.mkdirSync(dir, { recursive: true });
  // Read by PgBouncer's own user when it drops root.
  fs.chmodSync(dir, 0o755);
  const port = await freePort(listen);
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
      `listen_addr = ${listen}`,
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 1000',
      // node-postgres sends none of these, but a client that does should not be refused.
      'ignore_startup_parameters = extra_float_digits,search_path',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const user = runAsUser();
  const child: ChildProcess = spawn(PGBOUNCER, [...(user ? ['-u', user] : []), ini], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (options.pidFile) fs.writeFileSync(options.pidFile, String(child.pid));
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    if (ownDir) fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}: ${log}`);
      return accepts(listen, port);
    }, 10_000, `pgbouncer on ${listen}:${port}`);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    port,
    pid: child.pid!,
    through(databaseUrl: string) {
      const url = new URL(databaseUrl);
      url.hostname = listen;
      url.port = String(port);
      return url.toString();
    },
    log: () => log,
    close,
  };
}
