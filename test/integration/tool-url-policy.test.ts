import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { tableResolver } from '../support/table-resolver';

const PUBLIC_IP = '93.184.216.34';

/**
 * An agent's HTTP tool URL is checked when saved exactly as a webhook URL is: the name is
 * resolved, and a name with any private, loopback or reserved answer (or none) is refused. The
 * production policy (no DESKHAND_ALLOW_PRIVATE_URLS), with DNS under the test's control (the
 * machine has no network; every name that resolves offline is a single label or under
 * `localhost`, which the shape check already refuses without resolving).
 */
describe('HTTP tool URLs: resolved when saved, like webhook URLs', () => {
  const dns: Record<string, string[]> = {
    'loopback.customer-example.com': ['127.0.0.1'],
    'loopback6.customer-example.com': ['::1'],
    'mapped.customer-example.com': ['::ffff:127.0.0.1'],
    'mixed.customer-example.com': [PUBLIC_IP, '127.0.0.2'],
    'private.customer-example.com': ['10.0.0.7'],
    'tools.customer-example.com': [PUBLIC_IP],
  };
  const resolver = tableResolver(dns);
  let service: TestService;
  let key: string;

  before(async () => {
    service = await startTestService({}, ['web'], { hostResolver: resolver });
    expect(service.running.container.config.allowPrivateUrls).to.equal(false);
    ({ key } = await service.newOrg());
    expect((await service.api(key, 'POST', '/v1/agents', { agent_id: 'tooled' })).status).to.equal(200);
  });
  after(async () => service.stop());

  const tools = (url: string) => ({
    tools: { http: [{ name: 'ok', description: 'A public tool', url: 'https://tools.customer-example.com/ok' }, { name: 'lookup', description: 'Finds an order', url }] },
  });

  for (const host of ['loopback.customer-example.com', 'loopback6.customer-example.com', 'mapped.customer-example.com', 'mixed.customer-example.com', 'private.customer-example.com', 'nowhere.customer-example.com']) {
    it(`refuses a tool URL on ${host} when the agent is created, patched or its draft saved, with the webhook's reason`, async () => {
      const url = `https://${host}/orders`;
      const webhook = await service.api(key, 'PUT', '/v1/webhook', { url });
      expect(webhook.status).to.equal(400);
      const reason = (webhook.body.error.message as string).replace(/^url is not allowed: /, '');
      const attempts = [
        await service.api(key, 'POST', '/v1/agents', { agent_id: `tool-${host.split('.')[0]}`, ...tools(url) }),
        await service.api(key, 'PATCH', '/v1/agents/tooled', tools(url)),
        await service.api(key, 'PATCH', '/v1/agents/tooled/draft', tools(url)),
      ];
      for (const response of attempts) {
        expect(response.status, JSON.stringify(response.body)).to.equal(400);
        expect(response.body.error).to.deep.equal({ type: 'invalid_request', message: `tools.http[1].url is refused: ${reason}` });
      }
      expect(resolver.asked).to.include(host);
      // Nothing was saved.
      expect((await service.api(key, 'GET', '/v1/agents/tooled')).body.tools.http).to.deep.equal([]);
      expect((await service.api(key, 'GET', `/v1/agents/tool-${host.split('.')[0]}`)).status).to.equal(404);
    });
  }

  it('accepts a tool URL whose name resolves to public addresses only', async () => {
    const saved = await service.api(key, 'PATCH', '/v1/agents/tooled/draft', tools('https://tools.customer-example.com/orders'));
    expect(saved.status, JSON.stringify(saved.body)).to.equal(200);
    expect(saved.body.tools.http.map((tool: { url: string }) => tool.url)).to.deep.equal(['https://tools.customer-example.com/ok', 'https://tools.customer-example.com/orders']);
  });
});
