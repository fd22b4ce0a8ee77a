import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { loadConfig, type Config } from '../../shared/config';
import { migrateLatest } from '../../shared/db/knex';
import { createRedis, deleteKeysByPrefix } from '../../shared/redis';

/**
 * One isolated world per test run: a fresh PostgreSQL database and a Redis key prefix of its
 * own, both removed when the run ends. Tests read `testEnv()` for the variables that point at them.
 */
const runId = `${Date.now().toString(36)}_${process.pid}`;
const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const databaseName = `deskhand_test_${runId}`;
const databaseUrl = adminUrl.replace(/\/[^/]*$/, `/${databaseName}`);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redisPrefix = `test-${randomUUID().slice(0, 8)}`;

/** Environment variables of the test world; pass to child processes as well. */
export function testEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    DESKHAND_ENV: 'development',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    DESKHAND_REDIS_PREFIX: redisPrefix,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Orgs of tests run on the operator's own plan (no charge, no limit worth the name); the
    // billing tests choose their plans (test/integration/billing*.test.ts).
    DESKHAND_DEFAULT_PLAN: 'internal',
    PORT: '0',
    // Every test signs in from 127.0.0.1 within one run; one test lowers it to see the limit.
    DESKHAND_SIGN_INS_PER_ADDRESS: '100000',
    ...overrides,
  };
}

/** A validated config for the test world. */
export function testConfig(overrides: Record<string, string> = {}): Readonly<Config> {
  return loadConfig(testEnv(overrides));
}

async function dropStaleDatabases(client: pg.Client): Promise<void> {
  // Databases of runs that died more than six hours ago (their names carry the start time).
  const { rows } = await client.query<{ datname: string }>("select datname from pg_database where datname like 'deskhand_test_%'");
  for (const { datname } of rows) {
    const started = parseInt(datname.split('_')[2] ?? '', 36);
    if (Number.isFinite(started) && Date.now() - started > 6 * 3600 * 1000) {
      await client.query(`drop database if exists "${datname}" with (force)`);
    }
  }
}

export async function setUpTestWorld(): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await dropStaleDatabases(client);
  } finally {
    await client.end();
  }
  await migrateLatest(databaseUrl);
}

export async function tearDownTestWorld(): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists "${databaseName}" with (force)`);
  } finally {
    await client.end();
  }
  const redis = createRedis(redisUrl);
  try {
    await deleteKeysByPrefix(redis, redisPrefix);
  } finally {
    redis.disconnect();
  }
}
