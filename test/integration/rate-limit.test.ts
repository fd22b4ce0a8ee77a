import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';

describe('rate limit on /v1 per client address', () => {
  describe('without a trusted proxy', () => {
    let service: TestService;
    before(async () => {
      service = await startTestService({ DESKHAND_RATE_LIMIT_PER_HOUR: '5', DESKHAND_REDIS_PREFIX: `rl-${Date.now()}` }, ['web']);
    });
    after(async () => service.stop());

    it('answers 429 rate_limit with Retry-After past the hourly budget, ignoring X-Forwarded-For', async () => {
      const { key } = await service.newOrg();
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        // A client cannot buy a fresh budget by inventing forwarded addresses.
        statuses.push((await service.api(key, 'GET', '/v1/audit_log', undefined, { 'x-forwarded-for': `203.0.113.${i}` })).status);
      }
      expect(statuses).to.deep.equal([200, 200, 200, 200, 200, 429]);
      const refused = await service.api(key, 'GET', '/v1/audit_log');
      expect(refused.body.error.type).to.equal('rate_limit');
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 3600);
    });

    it('does not count health checks', async () => {
      expect((await service.api(null, 'GET', '/healthz')).status).to.equal(200);
    });
  });

  describe('with DESKHAND_TRUST_PROXY=1', () => {
    let service: TestService;
    before(async () => {
      service = await startTestService({ DESKHAND_RATE_LIMIT_PER_HOUR: '2', DESKHAND_TRUST_PROXY: '1', DESKHAND_REDIS_PREFIX: `rlp-${Date.now()}` }, ['web']);
    });
    after(async () => service.stop());

    it('counts each forwarded client address separately', async () => {
      const { key } = await service.newOrg();
      const as = (ip: string) => service.api(key, 'GET', '/v1/audit_log', undefined, { 'x-forwarded-for': ip });
      expect([(await as('198.51.100.1')).status, (await as('198.51.100.1')).status, (await as('198.51.100.1')).status]).to.deep.equal([200, 200, 429]);
      expect((await as('198.51.100.2')).status).to.equal(200);
    });
  });

  describe('with many requests of one address at once', () => {
    it('lets exactly the hourly budget through when requests arrive 50 at a time', async () => {
      const service = await startTestService({ DESKHAND_RATE_LIMIT_PER_HOUR: '130', DESKHAND_REDIS_PREFIX: `rlc-${Date.now()}` }, ['web']);
      try {
        const { key } = await service.newOrg();
        const statuses: number[] = [];
        for (let wave = 0; wave < 3; wave++) {
          const answers = await Promise.all(Array.from({ length: 50 }, () => service.api(key, 'GET', '/v1/me')));
          statuses.push(...answers.map((answer) => answer.status));
        }
        expect(statuses.filter((status) => status === 200)).to.have.length(130);
        expect(statuses.filter((status) => status === 429)).to.have.length(20);
      } finally {
        await service.stop();
      }
    });
  });

  describe('shared by several web processes', () => {
    it('lets exactly the hourly budget through, however the requests are spread', async () => {
      const env = { DESKHAND_RATE_LIMIT_PER_HOUR: '130', DESKHAND_REDIS_PREFIX: `rls-${Date.now()}` };
      const first = await startTestService(env, ['web']);
      const second = await startTestService(env, ['web']);
      try {
        const { key } = await first.newOrg();
        let allowed = 0;
        for (let i = 0; i < 150; i++) {
          const response = await (i % 3 === 0 ? second : first).api(key, 'GET', '/v1/me');
          if (response.status === 200) allowed++;
          else expect(response.status).to.equal(429);
        }
        expect(allowed).to.equal(130);
        expect((await first.api(key, 'GET', '/v1/me')).status).to.equal(429);
        expect((await second.api(key, 'GET', '/v1/me')).status).to.equal(429);
      } finally {
        await first.stop();
        await second.stop();
      }
    });
  });
});
