import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import Stripe from 'stripe';
import { verifySignature } from '../../shared/http';
import {
  createToolCall,
  enqueueToolCall,
  toolResultForModel,
  TOOL_REPLY_MAX_BYTES,
  type CreateToolCallInput,
  type ToolCallFinished,
} from '../../shared/tools/tool-calls.service';
import { getToolCall } from '../../shared/tools/tool-calls.repository';
import { startQueueWorker, type RunningWorker } from '../../workers/runtime';
import { toolCallsWiring } from '../../workers/tool-calls';
import { startTestService, waitFor, type TestService } from '../support/service';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver';

const stripe = new Stripe('sk_test_offline_only');
const TIMEOUT_MS = 500;

function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

describe('HTTP tools', () => {
  let service: TestService;
  let worker: RunningWorker;
  const finished: ToolCallFinished[] = [];
  const receivers: Receiver[] = [];
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };

  before(async () => {
    // Only the web process: this file runs the tool-calls worker itself, with a hook it can watch.
    service = await startTestService({ DESKHAND_ALLOW_PRIVATE_URLS: '1', DESKHAND_TOOL_TIMEOUT_MS: String(TIMEOUT_MS) }, ['web']);
    worker = startQueueWorker(service.running.container, toolCallsWiring({ toolCalls: service.running.container.toolCalls, finished: async (call) => { finished.push(call); } }));
  });
  after(async () => {
    await worker.close();
    await service.stop();
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  const signatureOf = (request: ReceivedRequest): string => request.headers['service-signature'] as string;

  /** Records a call the way the task loop does (in a transaction, enqueued after commit), and waits for its outcome. */
  async function call(orgId: string, url: string, overrides: Partial<CreateToolCallInput> = {}): Promise<ToolCallFinished> {
    const { db, queues } = service.running.container;
    const callId = await db.transaction((trx) =>
      createToolCall(trx, {
        orgId,
        taskId: 'task_7k2',
        sessionId: 'WXYZ-1234',
        agentId: 'support-bot',
        agentVersion: 3,
        step: 12,
        tool: { name: 'lookup_order', url },
        arguments: { order_id: 'A-1001', include: ['items', 'shipping'], note: 'naïve ✓' },
        ...overrides,
      }),
    );
    expect(callId).to.match(/^call_/);
    await enqueueToolCall(queues, callId);
    return waitFor(() => finished.find((outcome) => outcome.id === callId), 10_000, `tool call ${callId}`);
  }

  describe('GET /v1/tool_secret and POST /v1/tool_secret/rotate', () => {
    it('gives each org its own whsec_ secret, the same on every read', async () => {
      const a = await service.newOrg();
      const b = await service.newOrg();
      const first = await service.api(a.key, 'GET', '/v1/tool_secret');
      expect(first.status).to.equal(200);
      expect(first.body).to.include({ object: 'tool_secret', rotated_at: null });
      expect(first.body.secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);
      expect((await service.api(a.key, 'GET', '/v1/tool_secret')).body).to.deep.equal(first.body);
      expect((await service.api(b.key, 'GET', '/v1/tool_secret')).body.secret).to.not.equal(first.body.secret);
    });

    it('makes the secret on first read for an org that has none', async () => {
      const { orgId, key } = await service.newOrg();
      await service.running.container.db('org_tool_secrets').where({ org_id: orgId }).delete();
      const got = await service.api(key, 'GET', '/v1/tool_secret');
      expect(got.status).to.equal(200);
      expect(got.body.secret).to.match(/^whsec_/);
    });

    it('rotates: the new secret is returned and read back, the change is audited without it', async () => {
      const { key } = await service.newOrg();
      const before = (await service.api(key, 'GET', '/v1/tool_secret')).body;
      const rotated = await service.api(key, 'POST', '/v1/tool_secret/rotate');
      expect(rotated.status).to.equal(200);
      expect(rotated.body.secret).to.match(/^whsec_/).and.not.equal(before.secret);
      expect(rotated.body.rotated_at).to.be.a('string');
      expect((await service.api(key, 'GET', '/v1/tool_secret')).body.secret).to.equal(rotated.body.secret);
      const audit = await service.api(key, 'GET', '/v1/audit_log?action=tool_secret.rotated');
      expect(audit.body.data).to.have.length(1);
      expect(JSON.stringify(audit.body)).to.not.include(rotated.body.secret).and.not.include(before.secret);
    });
  });

  describe('a call', () => {
    it('POSTs the spec\'s body signed with the tool secret; a 2xx reply is the result', async () => {
      const { orgId, key } = await service.newOrg();
      const secret = (await service.api(key, 'GET', '/v1/tool_secret')).body.secret as string;
      const target = await receiver({ status: 200, body: '{"status":"shipped","eta":"2026-12-01"}' });
      const outcome = await call(orgId, target.url('/tools/orders?v=2'));

      expect(target.requests).to.have.length(1);
      const [request] = target.requests;
      expect(request!.method).to.equal('POST');
      expect(request!.path).to.equal('/tools/orders?v=2');
      expect(request!.headers['content-type']).to.equal('application/json');
      const body = JSON.parse(request!.body);
      expect(Object.keys(body)).to.deep.equal(['tool', 'arguments', 'task', 'org_id']);
      expect(body).to.deep.equal({
        tool: 'lookup_order',
        arguments: { order_id: 'A-1001', include: ['items', 'shipping'], note: 'naïve ✓' },
        task: { task_id: 'task_7k2', session_id: 'WXYZ-1234', agent_id: 'support-bot', agent_version: 3 },
        org_id: orgId,
      });
      expect(verifySignature(request!.rawBody, signatureOf(request!), secret)).to.equal(true);
      expect(stripe.webhooks.constructEvent(request!.rawBody, signatureOf(request!), secret)).to.deep.equal(body);

      expect(outcome).to.deep.include({
        task_id: 'task_7k2',
        step: 12,
        tool: 'lookup_order',
        ok: true,
        status: 200,
        reply_text: '{"status":"shipped","eta":"2026-12-01"}',
        truncated: false,
        error: null,
      });
      const row = await getToolCall(service.running.container.db, outcome.id);
      expect(row).to.include({ status: 'succeeded', http_status: 200, tool_name: 'lookup_order', step: 12 });
      expect(row!.finished_at).to.be.instanceOf(Date);
      expect(toolResultForModel(outcome)).to.deep.equal({ is_error: false, content: '{"status":"shipped","eta":"2026-12-01"}' });
    });

    it('tells the model a non-2xx call failed, with the reply text', async () => {
      const { orgId } = await service.newOrg();
      const target = await receiver({ status: 422, body: 'order A-1001 not found' });
      const outcome = await call(orgId, target.url());
      expect(outcome).to.include({ ok: false, status: 422, reply_text: 'order A-1001 not found', error: 'HTTP 422', error_code: 'http_status' });
      expect((await getToolCall(service.running.container.db, outcome.id))!.status).to.equal('failed');
      const forModel = toolResultForModel(outcome);
      expect(forModel.is_error).to.equal(true);
      expect(forModel.content).to.match(/lookup_order.*failed: HTTP 422/).and.include('order A-1001 not found');
    });

    it('does not follow a redirect', async () => {
      const { orgId } = await service.newOrg();
      const elsewhere = await receiver();
      const target = await receiver({ status: 307, headers: { location: elsewhere.url('/moved') } });
      const outcome = await call(orgId, target.url());
      expect(outcome).to.include({ ok: false, status: 307 });
      expect(outcome.error).to.match(/redirects are not followed/);
      expect(target.requests).to.have.length(1);
      expect(elsewhere.requests).to.have.length(0);
    });

    it('gives up at the deadline against a slow tool, after one attempt', async () => {
      const { orgId } = await service.newOrg();
      const target = await receiver({ status: 200, body: 'late', delayMs: 10_000 });
      const outcome = await call(orgId, target.url());
      expect(outcome).to.include({ ok: false, status: null, error_code: 'timeout' });
      expect(outcome.duration_ms).to.be.at.least(TIMEOUT_MS - 5).and.below(TIMEOUT_MS + 1000);
      expect(toolResultForModel(outcome).content).to.match(new RegExp(`failed: no complete reply within ${TIMEOUT_MS} ms`));
      // The job is finished: the one attempt is all there is.
      const job = await service.running.container.queues.queue('tool-calls').getJob(`call-${outcome.id}`);
      expect(await job!.getState()).to.equal('completed');
      expect(target.requests).to.have.length(1);
    });

    it('cuts a 10 MB reply at 64 KB without reading the rest or holding it in memory', async () => {
      const { orgId } = await service.newOrg();
      const total = 10 * 1024 * 1024;
      const chunk = Buffer.alloc(64 * 1024, 'r'); // one buffer, reused: the receiver stays small
      let written = 0;
      let finishedWriting = false;
      const target = await receiver((_request, res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(total) });
        const pump = (): void => {
          while (written < total) {
            written += chunk.length;
            if (!res.write(chunk)) {
              res.once('drain', pump);
              return;
            }
          }
          finishedWriting = true;
          res.end();
        };
        pump();
      });

      collectGarbage();
      const baseline = process.memoryUsage().arrayBuffers;
      let peak = baseline;
      const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().arrayBuffers); }, 1);
      let outcome: ToolCallFinished;
      try {
        outcome = await call(orgId, target.url());
      } finally {
        clearInterval(sampler);
      }
      expect(outcome).to.include({ ok: true, status: 200, truncated: true });
      expect(Buffer.byteLength(outcome.reply_text)).to.equal(TOOL_REPLY_MAX_BYTES);
      expect((await getToolCall(service.running.container.db, outcome.id))!.reply_text).to.have.length(TOOL_REPLY_MAX_BYTES);
      expect(peak - baseline, 'arrayBuffers growth').to.be.below(4 * 1024 * 1024);
      expect(finishedWriting, 'the tool finished writing 10 MB').to.equal(false);
      expect(written).to.be.below(total);
      expect(toolResultForModel(outcome).content).to.match(/longer than 64 KB and was cut\]$/);
    });

    it('signs the next call with a rotated secret', async () => {
      const { orgId, key } = await service.newOrg();
      const old = (await service.api(key, 'GET', '/v1/tool_secret')).body.secret as string;
      const rotated = (await service.api(key, 'POST', '/v1/tool_secret/rotate')).body.secret as string;
      const target = await receiver();
      await call(orgId, target.url());
      const [request] = target.requests;
      expect(verifySignature(request!.rawBody, signatureOf(request!), rotated)).to.equal(true);
      expect(verifySignature(request!.rawBody, signatureOf(request!), old)).to.equal(false);
    });

    it('stores a reply holding NUL characters as text', async () => {
      const { orgId } = await service.newOrg();
      const target = await receiver({ status: 200, body: 'a\u0000b' });
      const outcome = await call(orgId, target.url());
      expect(outcome).to.include({ ok: true, reply_text: 'a\uFFFDb' });
    });
  });

  describe('made once', () => {
    it('fails a call whose worker died after starting it, without sending it again', async () => {
      const { orgId } = await service.newOrg();
      const target = await receiver();
      const { db, queues } = service.running.container;
      const callId = await createToolCall(db, {
        orgId, taskId: 'task_dead', sessionId: 'WXYZ-1234', agentId: 'support-bot', agentVersion: 1, step: 4,
        tool: { name: 'refund', url: target.url() }, arguments: { amount: 10 },
      });
      // As left by a worker killed mid-POST: claimed, never finished.
      await db('tool_calls').where({ id: callId }).update({ started_at: db.fn.now() });
      await enqueueToolCall(queues, callId);
      const outcome = await waitFor(() => finished.find((c) => c.id === callId), 10_000, 'the interrupted call');
      expect(outcome).to.include({ ok: false, status: null, error_code: 'interrupted' });
      expect(target.requests).to.have.length(0);
    });

    it('reports a finished call again, as it was, when its job runs again', async () => {
      const { orgId } = await service.newOrg();
      const target = await receiver({ status: 200, body: 'done' });
      const outcome = await call(orgId, target.url());
      const again = await service.running.container.toolCalls.execute(outcome.id);
      expect(again).to.deep.equal(outcome);
      expect(target.requests).to.have.length(1);
    });

    it('enqueuing the same call twice makes one request', async () => {
      const { orgId } = await service.newOrg();
      const target = await receiver();
      const { db, queues } = service.running.container;
      const callId = await createToolCall(db, {
        orgId, taskId: 'task_twice', sessionId: 'WXYZ-1234', agentId: 'support-bot', agentVersion: 1, step: 1,
        tool: { name: 'ping', url: target.url() }, arguments: {},
      });
      await Promise.all([enqueueToolCall(queues, callId), enqueueToolCall(queues, callId)]);
      await waitFor(() => finished.find((c) => c.id === callId), 10_000, 'the call');
      expect(target.requests).to.have.length(1);
    });
  });
});
