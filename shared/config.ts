/**
 * Configuration: read from the environment once, validated, frozen, and passed down from each
 * process's composition root. Nothing else in the code reads `process.env`.
 */
import { loadModelCatalog, ModelCatalogError } from './models/catalog';

export type DeskhandEnv = 'development' | 'production';

export interface VendorConfig {
  apiKey: string;
  baseUrl: string;
}

export interface Config {
  env: DeskhandEnv;
  port: number;
  baseUrl: string;
  databaseUrl: string;
  /**
   * What `DATABASE_URL` points at: PostgreSQL itself (`none`), a pooler in session mode
   * (`session`: nothing changes), or a pooler in transaction mode (`transaction`): then no
   * statement relies on its connection's session (no named prepared statements; docs/operations.md).
   */
  databasePooler: DatabasePooler;
  /** Where migrations run (`DATABASE_MIGRATION_URL`, straight to PostgreSQL past a pooler); `databaseUrl` unless set. */
  databaseMigrationUrl: string;
  /** A single Redis (`REDIS_URL`); not used when `redisClusterNodes` is set. */
  redisUrl: string;
  /**
   * A Redis Cluster's seed nodes (`DESKHAND_REDIS_CLUSTER_NODES`): when set, every Redis
   * connection is to the cluster and `REDIS_URL` is ignored. Null: the single Redis of `redisUrl`.
   */
  redisClusterNodes: readonly RedisNode[] | null;
  /** Prefix of every Redis key Deskhand writes (queues, rate limits, notifications). */
  redisPrefix: string;
  /**
   * How long a request-path Redis command or job enqueue may wait before it counts as failed
   * (a stalled or unreachable Redis): requests answer within about this, never hang.
   */
  redisCommandTimeoutMs: number;
  scriptedModels: boolean;
  allowPrivateUrls: boolean;
  vendors: { anthropic: VendorConfig | null; openai: VendorConfig | null; gemini: VendorConfig | null };
  /** Trust `X-Forwarded-For` for the client address (behind a proxy you run). */
  trustProxy: boolean;
  /** Credential for Bull Board at /admin/queues; the board is closed when unset. */
  adminToken: string | null;
  rateLimitPerHour: number;
  sessionsPerHour: number;
  shutdownTimeoutMs: number;
  logLevel: string;
  /** Waits before each webhook retry; its length is the number of retries (spec: 5 s, 20 s, 1 min, 2 min). */
  webhookRetryScheduleMs: readonly number[];
  /** Deadline of one webhook attempt (spec: 10 s). */
  webhookTimeoutMs: number;
  /** Deadline of one HTTP tool call (spec: 15 s). */
  toolTimeoutMs: number;
  /** BullMQ `lockDuration` of every worker: how long a job stays locked to a worker that stopped renewing it. */
  workerLockDurationMs: number;
  /** BullMQ `stalledInterval`: how often a worker looks for stalled jobs to hand to another. */
  workerStalledIntervalMs: number;
  /** How long a computer may take to answer one action before its task fails. */
  actTimeoutMs: number;
  /** How long a task waits for its computer to come back after the connection dropped (0: it fails at once). */
  reconnectGraceMs: number;
  /** How long one model turn may take. */
  modelTimeoutMs: number;
  /** How often a connected runner heartbeats (told in its hello reply). */
  runnerHeartbeatMs: number;
  /** Silence after which a connected runner reads `offline` (spec: within 30 s). */
  runnerOfflineAfterMs: number;
  /** How long a runner has to make a machine (boot it and connect it) before the make fails with `timeout`. */
  machineBootTimeoutMs: number;
  /** How long an open start state's machine stays open unless saved (its `view.expires_at`), when the request does not say. */
  openMachineMs: number;
  /** A console sign-in ends after this long without a request (idle expiry). */
  consoleIdleMs: number;
  /** A console sign-in ends this long after it began, however busy (absolute expiry). */
  consoleSessionMs: number;
  /** Console sign-in attempts one client address may make per 15 minutes. */
  signInsPerAddress: number;
  payments: PaymentsConfig | null;
  /** The plan a new org starts on (`DESKHAND_DEFAULT_PLAN`; unless set, `free` in production and the unlimited `internal` in development; docs/billing.md). */
  defaultPlanId: string;
}

/** The payment provider (Stripe); null without `STRIPE_SECRET_KEY`: the free plan works, paid features answer a clear error. */
export interface PaymentsConfig {
  secretKey: string;
  /** Verifies the provider's webhooks (`whsec_…`); null: they are refused. */
  webhookSecret: string | null;
  /** Where the provider's API is reached (a local stand-in in tests); null: the provider's own. */
  apiBase: { host: string; port: number; protocol: 'http' | 'https' } | null;
}

/** See `Config.databasePooler`. */
export type DatabasePooler = 'none' | 'session' | 'transaction';

/** One seed node of a Redis Cluster. */
export interface RedisNode {
  host: string;
  port: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function flag(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(`${name} must be 1 or 0, got "${raw}"`);
}

function millisecondsList(env: Env, name: string, fallback: number[], maxItems: number, max: number): number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.length > maxItems || parts.some((part) => !/^\d+$/.test(part))) {
    throw new ConfigError(`${name} must be up to ${maxItems} whole numbers of milliseconds separated by commas, got "${raw}"`);
  }
  const values = parts.map(Number);
  if (values.some((value) => value < 1 || value > max)) {
    throw new ConfigError(`${name} values must be between 1 and ${max}, got "${raw}"`);
  }
  return values;
}

function url(env: Env, name: string, fallback: string, protocols: string[]): string {
  const raw = env[name] || fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL: "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.map((p) => p + '//').join(' or ')}, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

/**
 * `STRIPE_SECRET_KEY` and its companions. Test-mode keys never take money in production, and
 * live keys never run in development: each is refused the other way round, at start-up.
 */
function payments(env: Env, deskhandEnv: DeskhandEnv): PaymentsConfig | null {
  const secretKey = env.STRIPE_SECRET_KEY;
  if (!secretKey) return null;
  if (!/^(sk|rk)_(test|live)_\S+$/.test(secretKey)) throw new ConfigError('STRIPE_SECRET_KEY must be a secret key (sk_test_… or sk_live_…)');
  const live = /^(sk|rk)_live_/.test(secretKey);
  if (live && deskhandEnv === 'development') throw new ConfigError('STRIPE_SECRET_KEY is a live key (sk_live_…); development takes test-mode keys (sk_test_…) only');
  if (!live && deskhandEnv === 'production') throw new ConfigError('STRIPE_SECRET_KEY is a test-mode key (sk_test_…); production takes live keys (sk_live_…) only');
  const webhookSecret = env.STRIPE_WEBHOOK_SECRET || null;
  if (webhookSecret !== null && !webhookSecret.startsWith('whsec_')) throw new ConfigError('STRIPE_WEBHOOK_SECRET must be the endpoint\'s signing secret (whsec_…)');
  let apiBase: PaymentsConfig['apiBase'] = null;
  if (env.STRIPE_API_BASE) {
    const base = new URL(url(env, 'STRIPE_API_BASE', '', ['http:', 'https:']));
    const protocol = base.protocol === 'http:' ? 'http' : 'https';
    apiBase = { host: base.hostname, port: base.port ? Number(base.port) : protocol === 'http' ? 80 : 443, protocol };
  }
  return { secretKey, webhookSecret, apiBase };
}

/**
 * `DESKHAND_REDIS_CLUSTER_NODES`: `host:port` pairs separated by commas (an IPv6 address in
 * brackets, `[::1]:7000`). Any node of the cluster will do; ioredis learns the rest from it.
 */
function redisClusterNodes(env: Env): RedisNode[] | null {
  const raw = env.DESKHAND_REDIS_CLUSTER_NODES?.trim();
  if (!raw) return null;
  const usage = `DESKHAND_REDIS_CLUSTER_NODES must be a Redis Cluster's nodes as host:port pairs separated by commas (e.g. 10.0.0.5:6379,10.0.0.6:6379), got "${raw}"`;
  const nodes = raw.split(',').map((part) => {
    const entry = part.trim();
    const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(entry);
    if (!match) throw new ConfigError(`${usage}: "${entry}" is not host:port`);
    const port = Number(match[2]);
    if (port < 1 || port > 65535) throw new ConfigError(`${usage}: "${entry}" has a port outside 1-65535`);
    return Object.freeze({ host: match[1]!.replace(/^\[|\]$/g, ''), port });
  });
  return Object.freeze(nodes) as RedisNode[];
}

function databasePooler(env: Env): DatabasePooler {
  const raw = env.DESKHAND_DATABASE_POOLER;
  if (raw === undefined || raw === '' || raw === 'none') return 'none';
  if (raw === 'session' || raw === 'transaction') return raw;
  throw new ConfigError(`DESKHAND_DATABASE_POOLER must be transaction (DATABASE_URL is a pooler such as PgBouncer in transaction mode), session or none, got "${raw}"`);
}

function vendor(env: Env, prefix: string, defaultBaseUrl: string): VendorConfig | null {
  const apiKey = env[`${prefix}_API_KEY`];
  if (!apiKey) return null;
  return { apiKey, baseUrl: url(env, `${prefix}_BASE_URL`, defaultBaseUrl, ['https:', 'http:']) };
}

/** Parses and validates the environment; throws `ConfigError` with a message naming the variable. */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  const deskhandEnv = env.DESKHAND_ENV || 'development';
  if (deskhandEnv !== 'development' && deskhandEnv !== 'production') {
    throw new ConfigError(`DESKHAND_ENV must be development or production, got "${deskhandEnv}"`);
  }
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const allowPrivateUrls = flag(env, 'DESKHAND_ALLOW_PRIVATE_URLS');
  if (allowPrivateUrls && deskhandEnv === 'production') {
    throw new ConfigError('DESKHAND_ALLOW_PRIVATE_URLS=1 is for development only and is refused in production');
  }
  const redisPrefix = env.DESKHAND_REDIS_PREFIX || 'deskhand';
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(redisPrefix)) {
    throw new ConfigError('DESKHAND_REDIS_PREFIX must be 1-64 letters, digits, dashes or underscores');
  }
  const databaseUrl = url(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/deskhand', ['postgres:', 'postgresql:']);
  const config: Config = {
    env: deskhandEnv,
    port,
    baseUrl: url(env, 'BASE_URL', `http://localhost:${port}`, ['http:', 'https:']),
    databaseUrl,
    databasePooler: databasePooler(env),
    databaseMigrationUrl: env.DATABASE_MIGRATION_URL ? url(env, 'DATABASE_MIGRATION_URL', '', ['postgres:', 'postgresql:']) : databaseUrl,
    redisUrl: url(env, 'REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    // Both set: the cluster wins (README, Configuration): platforms often set REDIS_URL on their own.
    redisClusterNodes: redisClusterNodes(env),
    redisPrefix,
    redisCommandTimeoutMs: integer(env, 'DESKHAND_REDIS_COMMAND_TIMEOUT_MS', 2000, 100, 60_000),
    scriptedModels: flag(env, 'DESKHAND_SCRIPTED_MODELS'),
    allowPrivateUrls,
    vendors: {
      anthropic: vendor(env, 'ANTHROPIC', 'https://api.anthropic.com'),
      // OpenAI's clients take the base with /v1 (requests go to {base}/responses).
      openai: vendor(env, 'OPENAI', 'https://api.openai.com/v1'),
      gemini: vendor(env, 'GEMINI', 'https://generativelanguage.googleapis.com'),
    },
    trustProxy: flag(env, 'DESKHAND_TRUST_PROXY'),
    adminToken: env.DESKHAND_ADMIN_TOKEN || null,
    rateLimitPerHour: integer(env, 'DESKHAND_RATE_LIMIT_PER_HOUR', 30000, 1, 10_000_000),
    sessionsPerHour: integer(env, 'DESKHAND_SESSIONS_PER_HOUR', 600, 1, 10_000_000),
    shutdownTimeoutMs: integer(env, 'DESKHAND_SHUTDOWN_TIMEOUT_MS', 25000, 100, 600_000),
    logLevel: env.LOG_LEVEL || (env.NODE_ENV === 'test' ? 'silent' : 'info'),
    webhookRetryScheduleMs: Object.freeze(
      millisecondsList(env, 'DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS', [5_000, 20_000, 60_000, 120_000], 10, 24 * 3600 * 1000),
    ),
    webhookTimeoutMs: integer(env, 'DESKHAND_WEBHOOK_TIMEOUT_MS', 10_000, 50, 120_000),
    toolTimeoutMs: integer(env, 'DESKHAND_TOOL_TIMEOUT_MS', 15_000, 50, 120_000),
    workerLockDurationMs: integer(env, 'DESKHAND_WORKER_LOCK_DURATION_MS', 30_000, 500, 600_000),
    workerStalledIntervalMs: integer(env, 'DESKHAND_WORKER_STALLED_INTERVAL_MS', 30_000, 250, 600_000),
    actTimeoutMs: integer(env, 'DESKHAND_ACT_TIMEOUT_MS', 60_000, 100, 3_600_000),
    reconnectGraceMs: integer(env, 'DESKHAND_RECONNECT_GRACE_MS', 30_000, 0, 3_600_000),
    modelTimeoutMs: integer(env, 'DESKHAND_MODEL_TIMEOUT_MS', 300_000, 1000, 3_600_000),
    runnerHeartbeatMs: integer(env, 'DESKHAND_RUNNER_HEARTBEAT_MS', 10_000, 100, 60_000),
    runnerOfflineAfterMs: integer(env, 'DESKHAND_RUNNER_OFFLINE_AFTER_MS', 30_000, 300, 300_000),
    machineBootTimeoutMs: integer(env, 'DESKHAND_MACHINE_BOOT_TIMEOUT_MS', 120_000, 1000, 3_600_000),
    openMachineMs: integer(env, 'DESKHAND_OPEN_MACHINE_MS', 3_600_000, 1000, 24 * 3_600_000),
    consoleIdleMs: integer(env, 'DESKHAND_CONSOLE_IDLE_MINUTES', 720, 1, 7 * 24 * 60) * 60_000,
    consoleSessionMs: integer(env, 'DESKHAND_CONSOLE_SESSION_HOURS', 168, 1, 90 * 24) * 3_600_000,
    signInsPerAddress: integer(env, 'DESKHAND_SIGN_INS_PER_ADDRESS', 30, 1, 100_000),
    payments: payments(env, deskhandEnv),
    defaultPlanId: env.DESKHAND_DEFAULT_PLAN || (deskhandEnv === 'production' ? 'free' : 'internal'),
  };
  if (!/^[a-z0-9_]{1,40}$/.test(config.defaultPlanId)) throw new ConfigError(`DESKHAND_DEFAULT_PLAN must be a plan id (free, pay_as_you_go, enterprise, internal, …), got "${config.defaultPlanId}"`);
  if (config.runnerOfflineAfterMs <= config.runnerHeartbeatMs) {
    throw new ConfigError('DESKHAND_RUNNER_OFFLINE_AFTER_MS must be longer than DESKHAND_RUNNER_HEARTBEAT_MS (a runner would read offline between two heartbeats)');
  }
  try {
    loadModelCatalog(env);
  } catch (error) {
    if (error instanceof ModelCatalogError) throw new ConfigError(error.message);
    throw error;
  }
  if (config.adminToken !== null && config.adminToken.length < 16) {
    throw new ConfigError('DESKHAND_ADMIN_TOKEN must be at least 16 characters');
  }
  return Object.freeze(config);
}
