import { expect } from 'chai';
import { DEFAULT_MODEL } from '../../shared/models/catalog';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { startTestService, type TestService } from '../support/service';
import { connectDesktop, followDecidingApprovals } from '../support/tasks';
import { startVendorStubs, type Reply, type Stub } from '../support/vendor-stub';

/**
 * Whole tasks on each vendor's model: the service runs with the three vendors' keys pointing at
 * local stand-ins that refuse what the vendor would refuse (test/support/vendor-schemas.ts), and
 * the reference desktop client carries the actions out. Each vendor's scripted run covers a
 * normal turn, a failed action, a step the guardrails refuse (typing a card number), a safety
 * check a person approves (and, in another task, denies), a 429 retried after `Retry-After` and
 * one after a delay in the body (Gemini's `RetryInfo`; Anthropic's and OpenAI's `retry-after-ms`),
 * and a retired model.
 */

const CARD = '4111 1111 1111 1111';
const retryAfterMs = { 'retry-after-ms': '20' };

describe('tasks on vendor models (local stand-ins)', function () {
  this.timeout(90_000);
  let service: TestService;
  let key: string;
  let anthropic: Stub;
  let openai: Stub;
  let gemini: Stub;
  const clients: DesktopClient[] = [];

  before(async () => {
    let env: Record<string, string>;
    ({ anthropic, openai, gemini, env } = await startVendorStubs());
    service = await startTestService(env);
    ({ key } = await service.newOrg());
    const agents: Record<string, unknown> = {
      'on-default': { model: null, effort: 'high' },
      'on-claude': { model: 'claude-sonnet-4-6', effort: 'medium' },
      'on-haiku': { model: 'claude-haiku-4-5-20251001', effort: 'high' },
      'on-gemini': { model: 'gemini-3.6-flash', effort: 'low' },
    };
    for (const [agentId, fields] of Object.entries(agents)) {
      const created = await service.api(key, 'POST', '/v1/agents', { agent_id: agentId, ...(fields as object), guardrails: { confirm: [] } });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
    }
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
    for (const stub of [anthropic, openai, gemini]) {
      const violations = stub.violations.splice(0);
      stub.requests.splice(0);
      expect(violations, 'requests the vendor would refuse').to.deep.equal([]);
    }
  });
  after(async () => {
    await service.stop();
    await Promise.all([anthropic, openai, gemini].map((stub) => stub.close()));
  });

  /** Runs a task with `agent`, deciding each approval with `decide`, until it ends. */
  async function run(agent: string, decide: 'approve' | 'deny' = 'approve') {
    const { code, client } = await connectDesktop(service, key, {}, { agent_id: agent });
    clients.push(client);
    const started = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: 'Buy the blue shirt on shop.example.com' });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    const { task, events } = await followDecidingApprovals(service, key, started.body.task_id, decide, 60_000);
    return { task, events, types: events.map((e) => e.type) };
  }

  describe('OpenAI (the default model, GA computer tool)', () => {
    const response = (id: string, output: unknown[]): Reply => ({ body: { id, object: 'response', status: 'completed', output, usage: { input_tokens: 10, output_tokens: 5 } } });
    const call = (callId: string, actions: unknown[], checks: unknown[] = []) => ({ type: 'computer_call', id: `cu_${callId}`, call_id: callId, status: 'completed', actions, pending_safety_checks: checks });

    it('runs a task: a batched look, a failed action, a refused step, an approved safety check, two retried 429s', async () => {
      openai.reply(
        { status: 429, headers: { 'retry-after': '0' }, body: { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } } },
        response('r1', [call('c1', [{ type: 'screenshot' }, { type: 'move', x: 700, y: 400 }])]),
        response('r2', [call('c2', [{ type: 'type', text: 'hello' }])]),
        { status: 429, headers: retryAfterMs, body: { error: { message: 'Rate limit reached', type: 'tokens' } } },
        response('r3', [call('c3', [{ type: 'screenshot' }], [{ id: 'sc_1', code: 'irrelevant_domain', message: 'Leaving the shop' }])]),
        response('r4', [call('c4', [{ type: 'type', text: CARD }], [{ id: 'sc_2', code: 'sensitive_data', message: 'A card number' }])]),
        response('r5', [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'I could not buy it.' }] }]),
      );
      const { task, events, types } = await run('on-default');
      expect(task).to.include({ status: 'completed', result: 'I could not buy it.' });
      const requests = openai.requests.filter((r) => r.path === '/v1/responses');
      expect(requests).to.have.length(7);
      // Speaking the GA tool format with the default model.
      for (const r of requests) {
        expect(r.body.model).to.equal(DEFAULT_MODEL);
        expect(r.body.tools[0]).to.deep.equal({ type: 'computer' });
        expect(r.body.reasoning.effort).to.equal('high');
      }
      const outputs = requests.slice(2).map((r) => r.body.input.find((i: any) => i.type === 'computer_call_output'));
      expect(outputs.every((o: any) => o.output.type === 'computer_screenshot' && o.output.image_url.startsWith('data:image/png;base64,'))).to.equal(true);
      // The type with nothing focused failed: the model is told.
      const failedNote = requests[3]!.body.input.find((i: any) => i.type === 'message');
      expect(failedNote.content[0].text).to.match(/^The last action did not work: action 1 failed/);
      // The approved check whose step ran is acknowledged; the one whose step the guardrails refused is not.
      expect(outputs[3]).to.deep.include({ call_id: 'c3', acknowledged_safety_checks: [{ id: 'sc_1', code: 'irrelevant_domain', message: 'Leaving the shop' }] });
      expect(outputs[4]).to.include({ call_id: 'c4' });
      expect(outputs[4]).not.to.have.property('acknowledged_safety_checks');
      expect(requests[6]!.body.input.find((i: any) => i.type === 'message').content[0].text).to.match(/card|secret|type it/i);
      expect(types.filter((t) => t === 'safety_check')).to.have.length(2);
      expect(events.filter((e) => e.type === 'guardrail').map((e) => e.data.verdict)).to.deep.equal(['person_types']);
    });

    it('a denied safety check stops the task, and nothing is acknowledged', async () => {
      openai.reply(response('r1', [call('c1', [{ type: 'screenshot' }], [{ id: 'sc_9', code: 'malicious_instructions', message: 'The page gives orders' }])]));
      const { task } = await run('on-default', 'deny');
      expect(task).to.include({ status: 'failed', error: 'Stopped by a safety check that was denied: The page gives orders' });
      expect(openai.requests).to.have.length(1);
    });

    it('a model the vendor retired (404) fails the task with a message naming it', async () => {
      openai.reply({ status: 404, body: { error: { message: `The model \`${DEFAULT_MODEL}\` does not exist or you do not have access to it.`, type: 'invalid_request_error', code: 'model_not_found' } } });
      const { task } = await run('on-default');
      expect(task.status).to.equal('failed');
      expect(task.error).to.contain(`The model failed: OpenAI API answered 404: The model \`${DEFAULT_MODEL}\` does not exist`);
      expect(task.error).to.contain(`the model ${DEFAULT_MODEL} may have been retired by OpenAI`);
    });

    it('an account without quota fails the turn at once with what to do', async () => {
      openai.reply({ status: 429, body: { error: { message: 'You exceeded your current quota.', type: 'insufficient_quota', code: 'insufficient_quota' } } });
      const { task } = await run('on-default');
      expect(task.status).to.equal('failed');
      expect(task.error).to.match(/^The model failed: OpenAI API answered 429: You exceeded your current quota\. \(the account has no quota left/);
      expect(openai.requests).to.have.length(1);
    });
  });

  describe('Anthropic', () => {
    const message = (content: unknown[], stop = 'tool_use'): Reply => ({
      body: { id: 'msg', type: 'message', role: 'assistant', model: 'claude-sonnet-4-6', content, stop_reason: stop, usage: { input_tokens: 10, output_tokens: 5 } },
    });
    const use = (id: string, input: unknown) => ({ type: 'tool_use', id, name: 'computer', input });

    it('runs a task: a click, a failed action and a refused step answered with text-only errors, two retried 429s, effort', async () => {
      anthropic.reply(
        { status: 429, headers: { 'retry-after': '0' }, body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } } },
        message([use('t1', { action: 'mouse_move', coordinate: [640, 400] })]),
        message([use('t2', { action: 'type', text: 'hello' })]),
        { status: 529, headers: retryAfterMs, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
        message([use('t3', { action: 'type', text: CARD })]),
        message([{ type: 'text', text: 'I stopped before paying.' }], 'end_turn'),
      );
      const { task } = await run('on-claude');
      expect(task).to.include({ status: 'completed', result: 'I stopped before paying.' });
      const requests = anthropic.requests;
      expect(requests).to.have.length(6);
      for (const r of requests) {
        expect(r.headers['anthropic-beta']).to.equal('computer-use-2025-11-24');
        expect(r.body.output_config).to.deep.equal({ effort: 'medium' });
        expect(r.body.tools[0].type).to.equal('computer_20251124');
      }
      const last = (i: number) => requests[i]!.body.messages[requests[i]!.body.messages.length - 1].content;
      expect(last(2)[0]).to.deep.include({ tool_use_id: 't1', is_error: false });
      expect(last(2)[0].content[0].type).to.equal('image');
      // Failed, then refused: the errors are text only; the screenshot follows them.
      for (const [i, id] of [[4, 't2'], [5, 't3']] as const) {
        expect(last(i)[0]).to.deep.include({ tool_use_id: id, is_error: true });
        expect(last(i)[0].content.map((c: any) => c.type)).to.deep.equal(['text']);
        expect(last(i).slice(1).map((b: any) => b.type)).to.deep.equal(['text', 'image']);
      }
    });

    it('Haiku 4.5 keeps the January 2025 tool with a thinking budget for its effort', async () => {
      anthropic.reply(message([{ type: 'text', text: 'Nothing to do.' }], 'end_turn'));
      const { task } = await run('on-haiku');
      expect(task.status).to.equal('completed');
      expect(anthropic.requests[0]!.headers['anthropic-beta']).to.equal('computer-use-2025-01-24');
      expect(anthropic.requests[0]!.body.thinking).to.deep.equal({ type: 'enabled', budget_tokens: 12000 });
    });

    it('a retired model (404) fails the task with a message naming it', async () => {
      anthropic.reply({ status: 404, body: { type: 'error', error: { type: 'not_found_error', message: 'model: claude-sonnet-4-6' } } });
      const { task } = await run('on-claude');
      expect(task).to.include({ status: 'failed' });
      expect(task.error).to.contain('the model claude-sonnet-4-6 may have been retired by Anthropic');
    });
  });

  describe('Gemini', () => {
    const MODEL = 'gemini-3.6-flash';
    const answer = (parts: unknown[]): Reply => ({ body: { candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5 } } });
    const fn = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });
    const confirm = { decision: 'require_confirmation', explanation: 'This leaves the shop.' };

    it('runs a task: opening the browser, a failed action, a refused step, an approved safety check, RetryInfo and Retry-After', async () => {
      gemini.reply(
        { status: 429, headers: { 'retry-after': '0' }, body: { error: { code: 429, message: 'Quota', status: 'RESOURCE_EXHAUSTED' } } },
        answer([fn('open_web_browser', {})]),
        answer([fn('key_combination', { keys: 'F99' })]),
        {
          status: 429,
          body: { error: { code: 429, message: 'Resource exhausted', status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '0.05s' }] } },
        },
        answer([fn('go_back', { safety_decision: confirm })]),
        // Typing a card number into the address bar: the guardrails let the person type it.
        answer([fn('navigate', { url: CARD, safety_decision: confirm })]),
        answer([{ text: 'Stopped before paying.' }]),
      );
      const { task, events } = await run('on-gemini');
      expect(task).to.include({ status: 'completed', result: 'Stopped before paying.' }, JSON.stringify(events.slice(-6)));
      const requests = gemini.requests;
      expect(requests.map((r) => r.path)).to.deep.equal(Array(7).fill(`/v1beta/models/${MODEL}:generateContent`));
      for (const r of requests) expect(r.body.generationConfig).to.deep.equal({ thinkingConfig: { thinkingLevel: 'LOW' } });
      const responses = (i: number) => requests[i]!.body.contents[requests[i]!.body.contents.length - 1].parts.map((p: any) => p.functionResponse);
      expect(responses(2)[0].response).to.have.keys(['url']);
      expect(responses(2)[0].parts[0].inlineData.mimeType).to.equal('image/png');
      expect(responses(4)[0].response.error).to.match(/^Failed: action 1 failed/);
      expect(responses(5)[0].response).to.include({ safety_acknowledgement: 'true' });
      expect(responses(6)[0].response).not.to.have.property('safety_acknowledgement');
      expect(responses(6)[0].response.error).to.be.a('string');
      expect(events.filter((e) => e.type === 'guardrail').map((e) => e.data.verdict)).to.deep.equal(['person_types']);
    });

    it('a retired model (404) fails the task with a message naming it', async () => {
      gemini.reply({ status: 404, body: { error: { code: 404, message: `models/${MODEL} is not found for API version v1beta`, status: 'NOT_FOUND' } } });
      const { task } = await run('on-gemini');
      expect(task.status).to.equal('failed');
      expect(task.error).to.contain(`the model ${MODEL} may have been retired by Gemini`);
    });
  });

  it('an agent that still holds a retired id reads fine, and starting a task answers 503 model_unavailable naming it', async () => {
    const created = await service.api(key, 'POST', '/v1/agents', { agent_id: 'from-2025', model: 'gpt-5.4' });
    expect(created.status).to.equal(200);
    // Saved before the upgrade: the stored config still names the preview model.
    await service.running.container.db.raw(
      `update agent_versions set config = jsonb_set(config, '{model}', '"computer-use-preview"') where agent_id = 'from-2025'`,
    );
    const read = await service.api(key, 'GET', '/v1/agents/from-2025');
    expect(read.status, JSON.stringify(read.body)).to.equal(200);
    expect(read.body.model).to.equal('computer-use-preview');
    const { code, client } = await connectDesktop(service, key, {}, { agent_id: 'from-2025' });
    clients.push(client);
    const started = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: 'Buy a shirt' });
    expect(started.status).to.equal(503);
    expect(started.body.error).to.deep.include({ code: 'model_unavailable' });
    expect(started.body.error.message).to.match(/^The model computer-use-preview has been retired by its vendor and can no longer run; set the agent's model to one of /);
  });
});
