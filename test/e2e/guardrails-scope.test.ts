import { expect } from 'chai';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { SCOPE_JUDGE_INSTRUCTIONS } from '../../shared/models/scope-judge';
import { startTestService, type TestService } from '../support/service';
import { connectDesktop, follow } from '../support/tasks';
import { startVendorStubs, type Stub } from '../support/vendor-stub';

/**
 * The scope check with vendor models: the service runs with vendor keys pointing at local
 * stand-ins of the three vendors' HTTP APIs, and the judge is the task's own model.
 */

const SCOPE = 'Shopping for clothes on shop.example.com';
const anthropicAnswer = (text: string) => ({ body: { id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'text', text }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 5 } } });
const openaiAnswer = (text: string) => ({ body: { id: 'resp_1', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }], usage: { input_tokens: 10, output_tokens: 5 } } });
const geminiAnswer = (text: string) => ({ body: { candidates: [{ content: { role: 'model', parts: [{ text }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5 } } });

describe('the scope check with vendor models (local stand-ins)', function () {
  this.timeout(60_000);
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
    const agents = { 'scoped-claude': 'claude-sonnet-4-6', 'scoped-openai': 'gpt-5.4', 'scoped-gemini': 'gemini-3.6-flash' };
    for (const [agentId, model] of Object.entries(agents)) {
      const created = await service.api(key, 'POST', '/v1/agents', { agent_id: agentId, model, guardrails: { confirm: [], scope: SCOPE } });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
    }
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
    for (const stub of [anthropic, openai, gemini]) {
      stub.requests.splice(0);
      expect(stub.violations.splice(0), 'requests the vendor would refuse').to.deep.equal([]);
    }
  });
  after(async () => {
    await service.stop();
    await Promise.all([anthropic, openai, gemini].map((stub) => stub.close()));
  });

  async function start(agent: string, prompt: string) {
    const { code, client, lines } = await connectDesktop(service, key, {}, { agent_id: agent });
    clients.push(client);
    const started = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    const { task, events } = await follow(service, key, started.body.task_id);
    return { task, events, lines, client };
  }

  it('Anthropic: the task\'s own model judges it off scope; the task fails with the judge\'s reason and never starts', async () => {
    anthropic.reply(anthropicAnswer('{"verdict": "off_scope", "reason": "The task is about filing a tax return"}'));
    const { task, events, lines } = await start('scoped-claude', 'File my tax return for 2024.');
    expect(task).to.include({ status: 'failed', error: `The task is not about what this agent is for (${SCOPE}): The task is about filing a tax return.` });
    expect(events.map((event) => event.type)).to.deep.equal(['guardrail', 'failed']);
    expect(events[0].data).to.deep.equal({ verdict: 'block', rule: 'scope', category: null, scope: 'off_scope' });
    expect(lines.filter((line: any) => line.event === 'act')).to.deep.equal([]);
    // One plain request: the instructions, the scope and the prompt as data, no tools.
    expect(anthropic.requests).to.have.length(1);
    const [judged] = anthropic.requests;
    expect(judged!.path).to.equal('/v1/messages');
    expect(judged!.headers.authorization).to.equal('Bearer sk-ant-test');
    expect(judged!.body).to.include({ model: 'claude-sonnet-4-6', system: SCOPE_JUDGE_INSTRUCTIONS });
    expect(judged!.body.tools).to.equal(undefined);
    expect(judged!.body.messages).to.deep.equal([{ role: 'user', content: `The agent's scope:\n<scope>\n${SCOPE}\n</scope>\n\nThe task prompt:\n<task>\nFile my tax return for 2024.\n</task>` }]);
  });

  it('Gemini: a task in scope begins, and its model then takes the first turn', async () => {
    gemini.reply(geminiAnswer('```json\n{"verdict":"in_scope","reason":"Buying a shirt is shopping for clothes."}\n```'), geminiAnswer('I bought nothing; the shop is open.'));
    const { task, events } = await start('scoped-gemini', 'Find a blue T-shirt on shop.example.com.');
    expect(task).to.include({ status: 'completed', result: 'I bought nothing; the shop is open.' });
    expect(events.slice(0, 2).map((event) => event.type)).to.deep.equal(['guardrail', 'started']);
    expect(events[0].message).to.equal("The task fits the agent's scope: Buying a shirt is shopping for clothes.");
    expect(gemini.requests.map((request) => request.path)).to.deep.equal([
      '/v1beta/models/gemini-3.6-flash:generateContent',
      '/v1beta/models/gemini-3.6-flash:generateContent',
    ]);
    expect(gemini.requests[0]!.body.systemInstruction).to.deep.include({ parts: [{ text: SCOPE_JUDGE_INSTRUCTIONS }] });
    expect(gemini.requests[0]!.body).not.to.have.property('tools');
  });

  it('OpenAI: a judge that cannot tell, or whose answer cannot be read, fails the task as undecided', async () => {
    openai.reply(openaiAnswer('{"verdict":"undecidable","reason":"The prompt is a single word"}'));
    const undecided = await start('scoped-openai', 'Hello');
    expect(undecided.task).to.include({ status: 'failed', error: "The scope check could not decide whether the task fits the agent's scope: The prompt is a single word." });
    expect(openai.requests[0]!.path).to.equal('/v1/responses');
    expect(openai.requests[0]!.body).to.include({ model: 'gpt-5.4', instructions: SCOPE_JUDGE_INSTRUCTIONS });
    // The judge declares no tools.
    expect(openai.requests[0]!.body).not.to.have.property('tools');

    openai.reply(openaiAnswer('I cannot say.'));
    const unreadable = await start('scoped-openai', 'Buy a shirt');
    expect(unreadable.task).to.include({ status: 'failed', error: "The scope check could not decide whether the task fits the agent's scope: the judge's answer could not be read." });
  });

  it('OpenAI: a judge answering with an action is asked again, and its verdict then counts', async () => {
    const action = { body: { id: 'resp_a', object: 'response', status: 'completed', output: [{ type: 'computer_call', id: 'cu', call_id: 'c1', status: 'completed', actions: [{ type: 'screenshot' }], pending_safety_checks: [] }] } };
    openai.reply(action, openaiAnswer('{"verdict":"in_scope","reason":"A shirt is clothing."}'), openaiAnswer('Nothing to buy today.'));
    const { task, events } = await start('scoped-openai', 'Buy a shirt');
    expect(task, task.error).to.include({ status: 'completed', result: 'Nothing to buy today.' });
    expect(events[0].message).to.equal("The task fits the agent's scope: A shirt is clothing.");
    expect(openai.requests).to.have.length(3);
  });

  it('a judge that refuses the request leaves the task undecided, with the vendor\'s reason', async () => {
    anthropic.reply({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens is too large' } } });
    const { task } = await start('scoped-claude', 'Buy a shirt');
    expect(task.status).to.equal('failed');
    expect(task.error).to.equal("The scope check could not decide whether the task fits the agent's scope: the judge failed (Anthropic API answered 400: max_tokens is too large).");
  });
});
