// The measured side of `npm run bench -- http`: the real web process (every middleware, the
// rate limiter in Redis, API-key authentication, validation, a PostgreSQL query).
import { loadConfig } from '../../shared/config';
import { startDeskhand } from '../../bin/start';

startDeskhand(loadConfig({ ...process.env, PORT: '0', LOG_LEVEL: 'silent', DESKHAND_RATE_LIMIT_PER_HOUR: '10000000' }), ['web']).then(
  async (running) => {
    const { secret } = await running.container.orgs.create('bench');
    process.send?.({ port: running.web!.port, key: secret });
  },
);
process.on('SIGINT', () => process.exit(0));
