import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';

describe('health endpoints', () => {
  it('GET /healthz and /readyz answer 200 when PostgreSQL and Redis are up', async () => {
    const service = await startTestService({}, ['web']);
    try {
      expect((await service.api(null, 'GET', '/healthz')).body).to.deep.equal({ status: 'ok' });
      const ready = await service.api(null, 'GET', '/readyz');
      expect(ready.status).to.equal(200);
      expect(ready.body.checks).to.deep.equal({ postgres: 'ok', redis: 'ok' });
    } finally {
      await service.stop();
    }
  });

  it('GET /readyz answers 503 naming PostgreSQL when the database is unreachable', async () => {
    const service = await startTestService({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' }, ['web']);
    try {
      const ready = await service.api(null, 'GET', '/readyz');
      expect(ready.status).to.equal(503);
      expect(ready.body.error.type).to.equal('server_error');
      expect(ready.body.error.checks.postgres).to.match(/^unreachable/);
      expect(ready.body.error.checks.redis).to.equal('ok');
      expect((await service.api(null, 'GET', '/healthz')).status).to.equal(200);
    } finally {
      await service.stop();
    }
  });
});
