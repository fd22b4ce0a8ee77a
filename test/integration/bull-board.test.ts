import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';

describe('Bull Board at /admin/queues', () => {
  it('is closed without DESKHAND_ADMIN_TOKEN', async () => {
    const service = await startTestService({}, ['web']);
    try {
      const response = await service.api(null, 'GET', '/admin/queues');
      expect(response.status).to.equal(403);
      expect(response.body.error.type).to.equal('permission');
    } finally {
      await service.stop();
    }
  });

  describe('with an admin token', () => {
    const token = 'support-token-0123456789';
    let service: TestService;
    before(async () => {
      service = await startTestService({ DESKHAND_ADMIN_TOKEN: token }, ['web']);
    });
    after(async () => service.stop());

    it('refuses an org API key and a wrong token with 401', async () => {
      const { key } = await service.newOrg();
      expect((await service.api(key, 'GET', '/admin/queues')).status).to.equal(401);
      expect((await service.api('wrong-token-000000000', 'GET', '/admin/queues')).status).to.equal(401);
    });

    it('serves the board and its queue list to the token, by Bearer or Basic', async () => {
      const page = await service.api(token, 'GET', '/admin/queues');
      expect(page.status).to.equal(200);
      expect(page.body).to.contain('<html');
      const basic = Buffer.from(`support:${token}`).toString('base64');
      const queues = await service.api(null, 'GET', '/admin/queues/api/queues', undefined, { authorization: `Basic ${basic}` });
      expect(queues.status).to.equal(200);
      const names = queues.body.queues.map((q: { name: string }) => q.name).sort();
      expect(names).to.deep.equal(['evals', 'guardrails', 'maintenance', 'task-steps', 'tool-calls', 'webhooks']);
    });
  });
});
