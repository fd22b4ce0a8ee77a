/**
 * The wire defects of issue 18, each against a local stand-in that refuses what the vendor
 * refuses (test/support/vendor-schemas.ts): a refused or failed Anthropic step, safety checks
 * acknowledged only when a person approved them, held keys, the vendors' retry signals
 * (`x-should-retry`, `insufficient_quota`, Gemini's `RetryInfo`), retired models, the scope
 * judges without the computer tool, and the configurable catalog.
 */
import { expect } from 'chai';
import { AnthropicBackend } from '../../shared/models/anthropic';
import { BUILT_IN_CATALOG, loadModelCatalog, ModelCatalogError } from '../../shared/models/catalog';
import { createModelRegistry } from '../../shared/models/registry';
import { GeminiBackend } from '../../shared/models/gemini';
import { type ModelTurnInput, type TurnOutcome } from '../../shared/models/model.types';
import { OpenAIBackend } from '../../shared/models/openai';
import { startStub, type Stub } from '../support/vendor-stub';
import { FAST_RETRY, rejection, solidPng, turnInput } from '../support/model-turns';
import type { Vendor } from '../support/vendor-schemas';

const AFTER = solidPng(1440, 900, '#cc3366');
const FAST = FAST_RETRY;

/** A turn without the agent's own instructions or tools (the defects here are about the computer). */
function input(overrides: Partial<ModelTurnInput>): ModelTurnInput {
  return turnInput({ system: 'Service rules.', tools: { http: [], files: { enabled: false, read_only: true } }, ...overrides });
}

describe('vendor wire defects (issue 18)', function () {
  let stub: Stub;
  let opened: Stub | null = null;
  const open = async (vendor: Vendor) => {
    stub = opened = await startStub(vendor);
  };
  afterEach(async () => {
    if (!opened) return;
    const violations = [...opened.violations];
    await opened.close();
    opened = null;
    expect(violations, 'requests the vendor would refuse').to.deep.equal([]);
  });

  describe('Anthropic', () => {
    const backend = () => new AnthropicBackend({ apiKey: 'sk-ant', baseUrl: stub.url, retry: FAST });
    const message = (content: unknown[], stop_reason = 'tool_use') => ({
      id: 'msg',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-6',
      content,
      stop_reason,
      usage: { input_tokens: 10, output_tokens: 5 },
    });
    beforeEach(() => open('anthropic'));

    const steps: Array<[string, TurnOutcome]> = [
      ['refused by the guardrails', { kind: 'refused', reason: 'Buying is blocked for this agent', results: [] }],
      ['failed on the computer', { kind: 'actions', results: [{ ok: false, error: 'No such button' }] }],
    ];
    for (const [what, outcome] of steps) {
      it(`answers a step ${what} with an is_error tool_result of text only, and the screenshot after it`, async () => {
        stub.reply(
          { body: message([{ type: 'tool_use', id: 'toolu_1', name: 'computer', input: { action: 'left_click', coordinate: [640, 400] } }]) },
          { body: message([{ type: 'text', text: 'I will stop here.' }], 'end_turn') },
        );
        const first = await backend().turn(input({}));
        const second = await backend().turn(input({ state: first.state, screenshot: AFTER, lastOutcome: outcome }));
        expect(second.move).to.deep.equal({ kind: 'done', summary: 'I will stop here.' });
        const answer = stub.requests[1]!.body.messages[2].content;
        expect(answer[0]).to.deep.include({ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true });
        expect(answer[0].content.map((c: any) => c.type)).to.deep.equal(['text']);
        expect(answer[0].content[0].text).to.match(what.startsWith('refused') ? /Buying is blocked/ : /No such button/);
        expect(answer.slice(1).map((b: any) => b.type)).to.deep.equal(['text', 'image']);
      });
    }

    it('refuses a click with held keys instead of dropping them, and scrolls sideways with Shift held', async () => {
      stub.reply(
        { body: message([{ type: 'tool_use', id: 't1', name: 'computer', input: { action: 'left_click', coordinate: [100, 100], text: 'cmd' } }]) },
        { body: message([{ type: 'tool_use', id: 't2', name: 'computer', input: { action: 'scroll', coordinate: [640, 400], scroll_direction: 'down', scroll_amount: 2, text: 'shift' } }]) },
      );
      const out = await backend().turn(input({}));
      const feedback = stub.requests[1]!.body.messages[2].content[0];
      expect(feedback).to.deep.include({ type: 'tool_result', tool_use_id: 't1', is_error: true });
      expect(feedback.content[0].text).to.match(/Holding keys .* not available .*\(asked to hold cmd\)/);
      expect(out.move.kind === 'actions' && out.move.actions).to.deep.equal([{ type: 'scroll', x: 720, y: 450, dx: 200, dy: 0 }]);
    });

    it('maps effort to output_config.effort on Claude 4.6 and to a thinking budget on Haiku 4.5', async () => {
      for (const effort of ['low', 'medium', 'high'] as const) {
        for (const model of ['claude-opus-4-6', 'claude-haiku-4-5-20251001']) {
          stub.reply({ body: message([{ type: 'text', text: 'ok' }], 'end_turn') });
          await backend().turn(input({ model, effort }));
        }
      }
      const sent = stub.requests.map((r) => ({ model: r.body.model, thinking: r.body.thinking ?? null, effort: r.body.output_config?.effort ?? null, beta: r.headers['anthropic-beta'] }));
      expect(sent).to.deep.equal([
        { model: 'claude-opus-4-6', thinking: { type: 'adaptive' }, effort: 'low', beta: 'computer-use-2025-11-24' },
        { model: 'claude-haiku-4-5-20251001', thinking: null, effort: null, beta: 'computer-use-2025-01-24' },
        { model: 'claude-opus-4-6', thinking: { type: 'adaptive' }, effort: 'medium', beta: 'computer-use-2025-11-24' },
        { model: 'claude-haiku-4-5-20251001', thinking: { type: 'enabled', budget_tokens: 4096 }, effort: null, beta: 'computer-use-2025-01-24' },
        { model: 'claude-opus-4-6', thinking: { type: 'adaptive' }, effort: 'high', beta: 'computer-use-2025-11-24' },
        { model: 'claude-haiku-4-5-20251001', thinking: { type: 'enabled', budget_tokens: 12000 }, effort: null, beta: 'computer-use-2025-01-24' },
      ]);
    });

    it('honours x-should-retry: a 500 marked false is not retried, a 400 marked true is', async () => {
      stub.reply({ status: 500, headers: { 'x-should-retry': 'false' }, body: { type: 'error', error: { type: 'api_error', message: 'Do not retry' } } });
      const error = await rejection(backend().turn(input({})));
      expect(stub.requests).to.have.length(1);
      expect(error.message).to.equal('Anthropic API answered 500: Do not retry');

      stub.reply(
        { status: 400, headers: { 'x-should-retry': 'true', 'retry-after-ms': '5' }, body: { type: 'error', error: { type: 'invalid_request_error', message: 'try again' } } },
        { body: message([{ type: 'text', text: 'Fine.' }], 'end_turn') },
      );
      const out = await backend().turn(input({}));
      expect(stub.requests).to.have.length(3);
      expect(out.move).to.deep.equal({ kind: 'done', summary: 'Fine.' });
    });

    it('reports a retired model (404) with its id, not retryable', async () => {
      stub.reply({ status: 404, body: { type: 'error', error: { type: 'not_found_error', message: 'model: claude-opus-4-1-20250805' } } });
      const error = await rejection(backend().turn(input({ model: 'claude-opus-4-1-20250805' })));
      expect(error).to.include({ code: 'not_found', retryable: false, status: 404 });
      expect(error.message).to.contain('the model claude-opus-4-1-20250805 may have been retired by Anthropic');
    });
  });

  describe('OpenAI', () => {
    const backend = () => new OpenAIBackend({ apiKey: 'sk-o', baseUrl: `${stub.url}/v1`, retry: FAST });
    const response = (id: string, output: unknown[]) => ({ id, object: 'response', status: 'completed', output, usage: { input_tokens: 9, output_tokens: 3 } });
    const clickWithCheck = response('resp_1', [
      {
        type: 'computer_call',
        id: 'cu_1',
        call_id: 'call_1',
        status: 'completed',
        actions: [{ type: 'click', button: 'left', x: 10, y: 20 }],
        pending_safety_checks: [{ id: 'sc_1', code: 'irrelevant_domain', message: 'This site is not the task\'s.' }],
      },
    ]);
    const done = response('resp_2', [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] }]);
    beforeEach(() => open('openai'));

    const cases: Array<[string, boolean, TurnOutcome, boolean]> = [
      ['a person approved the check and the step ran', true, { kind: 'actions', results: [{ ok: true }] }, true],
      ['the guardrails refused the step after the approval', true, { kind: 'refused', reason: 'Blocked site', results: [] }, false],
      ['nobody approved the check', false, { kind: 'actions', results: [{ ok: true }] }, false],
    ];
    for (const [what, approved, outcome, acknowledged] of cases) {
      it(`${acknowledged ? 'acknowledges' : 'does not acknowledge'} the safety check when ${what}`, async () => {
        stub.reply({ body: clickWithCheck }, { body: done });
        const first = await backend().turn(input({ model: 'gpt-5.4' }));
        expect(first.safety).to.equal("This site is not the task's.");
        await backend().turn(input({ model: 'gpt-5.4', state: first.state, safetyApproved: approved, lastOutcome: outcome }));
        const [output] = stub.requests[1]!.body.input;
        expect(output).to.deep.include({ type: 'computer_call_output', call_id: 'call_1' });
        expect(output.output.type).to.equal('computer_screenshot');
        if (acknowledged) expect(output.acknowledged_safety_checks).to.deep.equal([{ id: 'sc_1', code: 'irrelevant_domain', message: "This site is not the task's." }]);
        else expect(output).not.to.have.property('acknowledged_safety_checks');
      });
    }

    it('does not retry an insufficient_quota 429, and says what to do', async () => {
      stub.reply({ status: 429, body: { error: { message: 'You exceeded your current quota.', type: 'insufficient_quota', code: 'insufficient_quota' } } });
      const error = await rejection(backend().turn(input({ model: 'gpt-5.4' })));
      expect(stub.requests).to.have.length(1);
      expect(error).to.include({ code: 'quota_exhausted', retryable: false, status: 429 });
      expect(error.message).to.match(/^OpenAI API answered 429: You exceeded your current quota\. \(the account has no quota left/);
    });

    it('sends the task\'s effort as reasoning.effort and the GA tool without display or environment', async () => {
      for (const effort of ['low', 'medium', 'high'] as const) {
        stub.reply({ body: done });
        await backend().turn(input({ model: 'gpt-5.4-mini', effort }));
      }
      expect(stub.requests.map((r) => r.body.reasoning.effort)).to.deep.equal(['low', 'medium', 'high']);
      expect(stub.requests.every((r) => JSON.stringify(r.body.tools[0]) === '{"type":"computer"}')).to.equal(true);
    });

    it('refuses a click with held keys instead of dropping them', async () => {
      stub.reply(
        { body: response('resp_1', [{ type: 'computer_call', id: 'cu', call_id: 'c1', status: 'completed', actions: [{ type: 'click', button: 'left', x: 1, y: 2, keys: ['CTRL'] }], pending_safety_checks: [] }]) },
        { body: done },
      );
      const out = await backend().turn(input({ model: 'gpt-5.4' }));
      expect(out.move).to.deep.equal({ kind: 'done', summary: 'Done.' });
      const note = stub.requests[1]!.body.input.find((i: any) => i.type === 'message');
      expect(note.content[0].text).to.match(/Holding keys .* \(asked to hold ctrl\)/);
    });

    it('reports a retired model (404) with its id', async () => {
      stub.reply({ status: 404, body: { error: { message: 'The model `computer-use-preview` does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' } } });
      const error = await rejection(backend().turn(input({ model: 'computer-use-preview' })));
      expect(error).to.include({ code: 'not_found', retryable: false });
      expect(error.message).to.contain('the model computer-use-preview may have been retired by OpenAI');
    });

    it('judges scope without declaring the computer tool, and asks again when the answer is an action', async () => {
      stub.reply(
        { body: response('resp_j1', [{ type: 'computer_call', id: 'cu', call_id: 'c1', status: 'completed', actions: [{ type: 'screenshot' }], pending_safety_checks: [] }]) },
        { body: response('resp_j2', [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: '{"verdict":"in_scope","reason":"Shopping."}' }] }]) },
      );
      const verdict = await backend().judgeScope({ scope: 'Shopping', prompt: 'Buy a shirt', model: 'gpt-5.4' });
      expect(verdict.verdict).to.equal('in_scope');
      expect(stub.requests.map((r) => r.body.tools ?? null)).to.deep.equal([null, null]);
    });
  });

  describe('Gemini', () => {
    const MODEL = 'gemini-3.6-flash';
    const backend = (retry = FAST) => new GeminiBackend({ apiKey: 'gm', baseUrl: stub.url, retry });
    const answer = (parts: unknown[]) => ({ candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 2 } });
    const confirmClick = answer([{ functionCall: { name: 'click_at', args: { x: 500, y: 500, safety_decision: { decision: 'require_confirmation', explanation: 'Buys something.' } } } }]);
    const retryInfo = (delay: string) => ({
      error: {
        code: 429,
        message: 'Resource has been exhausted (e.g. check quota).',
        status: 'RESOURCE_EXHAUSTED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: delay }],
      },
    });
    beforeEach(() => open('gemini'));

    const cases: Array<[string, boolean, TurnOutcome, boolean]> = [
      ['a person approved it and the step ran', true, { kind: 'actions', results: [{ ok: true }] }, true],
      ['the guardrails refused the step', true, { kind: 'refused', reason: 'Blocked', results: [] }, false],
      ['nobody approved it', false, { kind: 'actions', results: [{ ok: true }] }, false],
    ];
    for (const [what, approved, outcome, acknowledged] of cases) {
      it(`${acknowledged ? 'sends' : 'does not send'} safety_acknowledgement when ${what}`, async () => {
        stub.reply({ body: confirmClick }, { body: answer([{ text: 'Done.' }]) });
        const first = await backend().turn(input({ model: MODEL }));
        expect(first.safety).to.equal('Buys something.');
        await backend().turn(input({ model: MODEL, state: first.state, safetyApproved: approved, lastOutcome: outcome }));
        const response = stub.requests[1]!.body.contents[2].parts[0].functionResponse.response;
        if (acknowledged) expect(response.safety_acknowledgement).to.equal('true');
        else expect(response).not.to.have.property('safety_acknowledgement');
      });
    }

    it('waits the RetryInfo delay of the error body before retrying', async () => {
      stub.reply({ status: 429, body: retryInfo('0.3s') }, { body: answer([{ text: 'Done.' }]) });
      const started = Date.now();
      const out = await backend({ retries: 2, baseDelayMs: 1, maxDelayMs: 5000 }).turn(input({ model: MODEL }));
      expect(Date.now() - started).to.be.at.least(290);
      expect(stub.requests).to.have.length(2);
      expect(out.move).to.deep.equal({ kind: 'done', summary: 'Done.' });
    });

    it('ends the call with a retryable error when RetryInfo asks for longer than one call may wait', async () => {
      stub.reply({ status: 429, body: retryInfo('60s') });
      const error = await rejection(backend().turn(input({ model: MODEL })));
      expect(stub.requests).to.have.length(1);
      expect(error).to.include({ code: 'rate_limited', retryable: true, retryAfterMs: 60_000 });
      expect(error.message).to.equal('Gemini API answered 429: Resource has been exhausted (e.g. check quota).');
    });

    it('retries a 429 with Retry-After', async () => {
      stub.reply({ status: 429, headers: { 'retry-after': '0' }, body: { error: { code: 429, message: 'slow down', status: 'RESOURCE_EXHAUSTED' } } }, { body: answer([{ text: 'ok' }]) });
      await backend().turn(input({ model: MODEL }));
      expect(stub.requests).to.have.length(2);
    });

    it('reports a retired model (404) with its id', async () => {
      stub.reply({ status: 404, body: { error: { code: 404, message: `models/${MODEL} is not found for API version v1beta`, status: 'NOT_FOUND' } } });
      const error = await rejection(backend().turn(input({ model: MODEL })));
      expect(error).to.include({ code: 'not_found', retryable: false });
      expect(error.message).to.contain(`the model ${MODEL} may have been retired by Gemini`);
    });

    it('judges scope without tools, and asks again when the answer is an action', async () => {
      stub.reply({ body: answer([{ functionCall: { name: 'open_web_browser', args: {} } }]) }, { body: answer([{ text: '{"verdict":"off_scope","reason":"Taxes."}' }]) });
      const verdict = await backend().judgeScope({ scope: 'Shopping', prompt: 'File my taxes', model: MODEL });
      expect(verdict.verdict).to.equal('off_scope');
      expect(stub.requests.map((r) => [r.body.tools ?? null, r.body.toolConfig ?? null])).to.deep.equal([
        [null, null],
        [null, null],
      ]);
    });

    it('judges scope on the 2.5 computer-use preview with its tool declared but function calling off', async () => {
      stub.reply({ body: answer([{ text: '{"verdict":"in_scope","reason":"Shopping."}' }]) });
      const verdict = await backend().judgeScope({ scope: 'Shopping', prompt: 'Buy a shirt', model: 'gemini-2.5-computer-use-preview-10-2025' });
      expect(verdict.verdict).to.equal('in_scope');
      expect(stub.requests[0]!.body.tools).to.deep.equal([{ computerUse: { environment: 'ENVIRONMENT_BROWSER' } }]);
      expect(stub.requests[0]!.body.toolConfig).to.deep.equal({ functionCallingConfig: { mode: 'NONE' } });
    });
  });

  describe('the catalog', () => {
    it('holds three Anthropic, two OpenAI and one Gemini model, the default the second OpenAI one', () => {
      const catalog = loadModelCatalog({});
      expect(catalog.entries.map((m) => `${m.slot}:${m.vendor}`)).to.deep.equal(['A1:anthropic', 'A2:anthropic', 'A3:anthropic', 'B1:openai', 'B2:openai', 'C1:gemini']);
      expect(catalog.entries.map((m) => m.id)).to.deep.equal(BUILT_IN_CATALOG.map((m) => m.id));
      for (const retired of ['computer-use-preview', 'computer-use-preview-2025-03-11', 'claude-opus-4-1-20250805']) expect(catalog.retired.get(retired)).to.equal(null);
    });

    it('takes new ids and retirements from configuration', () => {
      const catalog = loadModelCatalog({ DESKHAND_MODELS: 'B2=gpt-5.5, A2=claude-opus-4-8', DESKHAND_RETIRED_MODELS: 'gpt-5.4=gpt-5.5,claude-opus-4-6' });
      expect(catalog.entries.find((m) => m.slot === 'B2')).to.deep.include({ id: 'gpt-5.5', vendor: 'openai' });
      expect(catalog.retired.get('gpt-5.4')).to.equal('gpt-5.5');
      expect(catalog.retired.get('claude-opus-4-6')).to.equal(null);
      const registry = createModelRegistry({ scripted: true, catalog });
      expect(registry.resolve('gpt-5.4')).to.equal('gpt-5.5');
      expect(registry.resolve(null)).to.equal('gpt-5.5');
      expect(registry.isAvailable('gpt-5.4')).to.equal(true);
      expect(registry.isAvailable('claude-opus-4-6')).to.equal(false);
      expect(registry.unavailableReason('claude-opus-4-6')).to.match(/^The model claude-opus-4-6 has been retired by its vendor and can no longer run; set the agent's model to one of .*claude-opus-4-8/);
    });

    it('refuses configuration mistakes at start, naming the variable', () => {
      expect(() => loadModelCatalog({ DESKHAND_MODELS: 'D1=x' })).to.throw(ModelCatalogError, /^DESKHAND_MODELS: "D1=x" must be SLOT=id/);
      expect(() => loadModelCatalog({ DESKHAND_RETIRED_MODELS: 'gpt-5.4' })).to.throw(ModelCatalogError, /gpt-5.4 is still in the catalog/);
      expect(() => loadModelCatalog({ DESKHAND_RETIRED_MODELS: 'old=nowhere' })).to.throw(ModelCatalogError, /the successor of old, nowhere, is not one of the catalog's ids/);
      expect(() => loadModelCatalog({ DESKHAND_MODELS: 'B1=gpt-5.4' })).to.throw(ModelCatalogError, /six different ids/);
    });

    it('says why a model cannot run: retired, unknown, or no key', () => {
      const registry = createModelRegistry({ scripted: false, openai: { apiKey: 'k' } });
      expect(registry.unavailableReason('computer-use-preview')).to.match(/^The model computer-use-preview has been retired by its vendor/);
      expect(registry.unavailableReason('gpt-2')).to.match(/^The model gpt-2 is not one of this server's models/);
      expect(registry.unavailableReason('claude-sonnet-4-6')).to.equal('The model claude-sonnet-4-6 cannot run on this server: no API key is configured for anthropic; set ANTHROPIC_API_KEY (or run with DESKHAND_SCRIPTED_MODELS=1 for the scripted model)');
      expect(registry.unavailableReason(null)).to.equal(null);
    });
  });
});
