import { loadConfig, type Config } from '../../shared/config';
import { migrateLatest } from '../../shared/db/knex';

/**
 * The world a bench runs in: the bench database (`BENCH_DATABASE_URL`, migrated), a Redis key
 * prefix of its own (drop it at the end: ./redis-prefix.ts), the scripted models, and no rate
 * limits on the API or on sessions. `env` is what its server processes get; `config` the same as
 * the bench's own process reads it.
 */
export async function benchWorld(name: string): Promise<{ databaseUrl: string; prefix: string; env: Record<string, string>; config: Readonly<Config> }> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/deskhand_bench';
  const prefix = `bench-${name}-${Date.now()}`;
  const env = { DATABASE_URL: databaseUrl, DESKHAND_REDIS_PREFIX: prefix, DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_RATE_LIMIT_PER_HOUR: '10000000', DESKHAND_SESSIONS_PER_HOUR: '10000000' };
  await migrateLatest(databaseUrl);
  return { databaseUrl, prefix, env, config: loadConfig({ ...process.env, ...env }) };
}
