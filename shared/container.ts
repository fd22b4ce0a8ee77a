import type { Config } from './config';
import { createLogger, type Logger } from './logger';
import { createKnex, type Knex } from './db/knex';
import { createRedis, type Redis } from './redis';
import { JobQueues } from './queues/job-queues';
import { Notifier } from './notifier';
import { ApiKeyService } from './api-keys/api-keys.service';
import { OrgService } from './orgs/orgs.service';

/**
 * Everything a process needs, built once by its composition root and passed down. There are no
 * module-level singletons: two containers in one process (as in tests) do not share state.
 */
export interface Container {
  config: Readonly<Config>;
  logger: Logger;
  db: Knex;
  /** Commands (non-blocking, fails fast). */
  redis: Redis;
  /** Pub/sub subscriber. */
  subscriber: Redis;
  queues: JobQueues;
  notifier: Notifier;
  apiKeys: ApiKeyService;
  orgs: OrgService;
  /** Closes queues, Redis and the database pool, in that order. */
  close(): Promise<void>;
}

export function createContainer(config: Readonly<Config>, options: { logger?: Logger; dbPoolMax?: number } = {}): Container {
  const logger = options.logger ?? createLogger(config.logLevel, { service: 'deskhand' });
  const db = createKnex(config.databaseUrl, { min: 0, max: options.dbPoolMax ?? 10 });
  const redis = createRedis(config.redisUrl, { name: 'deskhand-commands' });
  const subscriber = createRedis(config.redisUrl, { name: 'deskhand-subscriber', blocking: true });
  const queues = new JobQueues(redis, config.redisPrefix);
  const notifier = new Notifier(redis, subscriber, config.redisPrefix);
  const apiKeys = new ApiKeyService({ db, env: config.env, notifier, logger: logger.child({ scope: 'api-keys' }) });
  const orgs = new OrgService({ db, apiKeys });

  return {
    config,
    logger,
    db,
    redis,
    subscriber,
    queues,
    notifier,
    apiKeys,
    orgs,
    async close() {
      await queues.close();
      subscriber.disconnect();
      await redis.quit().catch(() => redis.disconnect());
      await db.destroy();
    },
  };
}
