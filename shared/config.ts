/**
 * Configuration: read from the environment once, validated, frozen, and passed down from each
 * process's composition root. Nothing else in the code reads `process.env`.
 */

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
  redisUrl: string;
  /** Prefix of every Redis key Deskhand writes (queues, rate limits, notifications). */
  redisPrefix: string;
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
  const config: Config = {
    env: deskhandEnv,
    port,
    baseUrl: url(env, 'BASE_URL', `http://localhost:${port}`, ['http:', 'https:']),
    databaseUrl: url(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/deskhand', ['postgres:', 'postgresql:']),
    redisUrl: url(env, 'REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    redisPrefix,
    scriptedModels: flag(env, 'DESKHAND_SCRIPTED_MODELS'),
    allowPrivateUrls,
    vendors: {
      anthropic: vendor(env, 'ANTHROPIC', 'https://api.anthropic.com'),
      openai: vendor(env, 'OPENAI', 'https://api.openai.com'),
      gemini: vendor(env, 'GEMINI', 'https://generativelanguage.googleapis.com'),
    },
    trustProxy: flag(env, 'DESKHAND_TRUST_PROXY'),
    adminToken: env.DESKHAND_ADMIN_TOKEN || null,
    rateLimitPerHour: integer(env, 'DESKHAND_RATE_LIMIT_PER_HOUR', 30000, 1, 10_000_000),
    sessionsPerHour: integer(env, 'DESKHAND_SESSIONS_PER_HOUR', 600, 1, 10_000_000),
    shutdownTimeoutMs: integer(env, 'DESKHAND_SHUTDOWN_TIMEOUT_MS', 25000, 100, 600_000),
    logLevel: env.LOG_LEVEL || (env.NODE_ENV === 'test' ? 'silent' : 'info'),
  };
  if (config.adminToken !== null && config.adminToken.length < 16) {
    throw new ConfigError('DESKHAND_ADMIN_TOKEN must be at least 16 characters');
  }
  return Object.freeze(config);
}
