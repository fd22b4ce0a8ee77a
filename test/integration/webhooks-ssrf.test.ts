import { expect } from 'chai';
import { createContainer, type Container } from '../../shared/container';
import { startWeb, type WebServer } from '../../api/server';
import { startQueueWorker, type RunningWorker } from '../../workers/runtime';
import { webhooksWiring } from '../../workers/webhooks';
import { toolCallsWiring } from '../../workers/tool-calls';
import { createToolCall, enqueueToolCall, type ToolCallFinished } from '../../shared/tools/tool-calls.service';
import { testConfig } from '../support/environment';
import { request, waitFor, type ApiResponse } from '../support/service';
import { startReceiver, type Receiver } from '../support/receiver';
import { emitEvent } from '../support/org-event-fixtures';
import { tableResolver } from '../support/table-resolver';

const PUBLIC_IP = '93.184.216.34';
const HOST = 'hooks.customer-example.com';

/**
 * The production policy (no DESKHAND_ALLOW_PRIVATE_URLS), with DNS under the test's control:
 * refusals at registration, and again at every delivery and tool call on the addresses the
 * connection would use.
 */
describe('webhooks and HTTP tools: SSRF policy', () => {
  const dns: Record<string, string[]> = {};
  const resolver = tableResolver(dns);
  let container: Container;
  let web: WebServer;
  let workers: RunningWorker[];
  let baseUrl: string;
  const finishedCalls: ToolCallFinished[] = [];
  let target: Receiver;

  const api = (key: string, method: string, path: string, body?: unknown): Promise<ApiResponse> => request(baseUrl, key, method, path, body);

  async function newOrg() {
    const { org, secret } = await container.orgs.create('SSRF org');
    return { orgId: org.org_id, key: secret };
  }

  before(async () => {
    container = createContainer(testConfig({ DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS: '50,50', DESKHAND_WEBHOOK_TIMEOUT_MS: '1000' }), { hostResolver: resolver });
    expect(container.config.allowPrivateUrls).to.equal(false);
    web = await startWeb(container, { port: 0, validateResponses: true });
    baseUrl = `http://127.0.0.1:${web.port}`;
    workers = [
      startQueueWorker(container, webhooksWiring(container)),
      startQueueWorker(container, toolCallsWiring({ toolCalls: container.toolCalls, finished: async (call) => { finishedCalls.push(call); } })),
    ];
    target = await startReceiver();
  });
  after(async () => {
    await Promise.all(workers.map((worker) => worker.close()));
    await web.close();
    await target.close();
    await container.close();
  });
  beforeEach(() => {
    for (const name of Object.keys(dns)) delete dns[name];
  });

  describe('at registration (PUT /v1/webhook)', () => {
    const refused = [
      'http://hooks.customer-example.com/hook',
      'https://localhost/hook',
      'https://127.0.0.1/hook',
      'https://10.1.2.3/hook',
      'https://172.16.5.4/hook',
      'https://172.31.255.1/hook',
      'https://192.168.1.10/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://2130706433/hook',
      'https://printer.local/hook',
      'https://api.internal/hook',
      'https://metadata/hook',
      'https://user:pass@hooks.customer-example.com/hook',
    ];
    for (const url of refused) {
      it(`refuses ${url} with 400 invalid_request`, async () => {
        dns[HOST] = [PUBLIC_IP];
        const { key } = await newOrg();
        const put = await api(key, 'PUT', '/v1/webhook', { url });
        expect(put.status).to.equal(400);
        expect(put.body.error.type).to.equal('invalid_request');
        expect(put.body.error.message).to.match(/^url is not allowed/);
        expect((await api(key, 'GET', '/v1/webhook')).body.url).to.equal(null);
      });
    }

    it('refuses a name that resolves to a private address, or to any private address among public ones, or not at all', async () => {
      dns['private.customer-example.com'] = ['10.0.0.7'];
      dns['mixed.customer-example.com'] = [PUBLIC_IP, '192.168.0.1'];
      dns['v6.customer-example.com'] = ['fd00::1'];
      const { key } = await newOrg();
      for (const host of ['private.customer-example.com', 'mixed.customer-example.com', 'v6.customer-example.com', 'nowhere.customer-example.com']) {
        const put = await api(key, 'PUT', '/v1/webhook', { url: `https://${host}/hook` });
        expect(put.status, host).to.equal(400);
        expect(put.body.error.type).to.equal('invalid_request');
        expect(put.body.error.message).to.not.include('10.0.0.7');
      }
    });

    it('accepts an https name that resolves to public addresses only', async () => {
      dns[HOST] = [PUBLIC_IP, '2606:2800:220:1:248:1893:25c8:1946'];
      const { key } = await newOrg();
      const put = await api(key, 'PUT', '/v1/webhook', { url: `https://${HOST}/hook` });
      expect(put.status).to.equal(200);
      expect(put.body.secret).to.match(/^whsec_/);
    });
  });

  describe('at delivery', () => {
    async function registered() {
      dns[HOST] = [PUBLIC_IP];
      const org = await newOrg();
      // The receiver's port is in the URL: a connection that got through would be counted there.
      const put = await api(org.key, 'PUT', '/v1/webhook', { url: `https://${HOST}:${target.port}/hook` });
      expect(put.status).to.equal(200);
      return org;
    }

    async function failedDelivery(key: string, eventId: string) {
      return waitFor(async () => {
        const list = await api(key, 'GET', `/v1/webhook/deliveries?event_id=${eventId}`);
        return list.body.data[0]?.status === 'failed' ? list.body.data[0] : null;
      }, 10_000, 'the delivery to fail');
    }

    it('refuses a name whose DNS answer changed to 127.0.0.1 since registration, before connecting', async () => {
      const { orgId, key } = await registered();
      dns[HOST] = ['127.0.0.1'];
      const connectionsBefore = target.connections;
      const asked = resolver.asked.length;
      const eventId = await emitEvent(container, orgId);
      const delivery = await failedDelivery(key, eventId);
      expect(delivery.attempt_count).to.equal(3);
      for (const attempt of delivery.attempts) {
        expect(attempt).to.include({ ok: false, status_code: null });
        expect(attempt.error).to.match(/private, local or reserved/);
      }
      expect(resolver.asked.slice(asked)).to.include(HOST);
      expect(target.connections - connectionsBefore).to.equal(0);
      expect(target.withId(eventId)).to.have.length(0);
    });

    it('refuses a name with any private address among its answers', async () => {
      const { orgId, key } = await registered();
      dns[HOST] = [PUBLIC_IP, '10.20.30.40'];
      const connectionsBefore = target.connections;
      const eventId = await emitEvent(container, orgId);
      const delivery = await failedDelivery(key, eventId);
      expect(delivery.attempts[0].error).to.match(/private, local or reserved/);
      expect(target.connections - connectionsBefore).to.equal(0);
    });

    it('refuses an HTTP tool whose name resolves to a private address, without connecting, once', async () => {
      const { orgId } = await newOrg();
      dns['tools.customer-example.com'] = ['127.0.0.1'];
      const connectionsBefore = target.connections;
      const callId = await createToolCall(container.db, {
        orgId,
        taskId: 'task_ssrf',
        sessionId: 'ABCD-EFGH',
        agentId: 'default',
        agentVersion: 1,
        step: 3,
        tool: { name: 'lookup_order', url: `https://tools.customer-example.com:${target.port}/orders` },
        arguments: { order_id: 'A-1' },
      });
      await enqueueToolCall(container.queues, callId);
      const finished = await waitFor(() => finishedCalls.find((call) => call.id === callId), 10_000, 'the tool call');
      expect(finished).to.include({ ok: false, status: null, error_code: 'refused', task_id: 'task_ssrf', step: 3 });
      expect(target.connections - connectionsBefore).to.equal(0);
      const asked = resolver.asked.filter((name) => name === 'tools.customer-example.com');
      expect(asked).to.have.length(1);
    });

    it('refuses a tool URL with a literal private address or plain http without resolving', async () => {
      const { orgId } = await newOrg();
      dns[HOST] = [PUBLIC_IP];
      const asked = resolver.asked.length;
      for (const url of [`https://127.0.0.1:${target.port}/t`, `http://${HOST}:${target.port}/t`]) {
        const callId = await createToolCall(container.db, {
          orgId, taskId: 'task_lit', sessionId: 'ABCD-EFGH', agentId: 'default', agentVersion: 2, step: 1,
          tool: { name: 't', url }, arguments: {},
        });
        await enqueueToolCall(container.queues, callId);
        const finished = await waitFor(() => finishedCalls.find((call) => call.id === callId), 10_000, 'the tool call');
        expect(finished, url).to.include({ ok: false, error_code: 'refused' });
      }
      expect(target.requests).to.have.length(0);
      expect(resolver.asked.length).to.equal(asked);
    });
  });
});
