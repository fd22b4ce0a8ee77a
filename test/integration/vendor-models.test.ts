/**
 * The vendor backends against local stand-ins of the vendors' HTTP APIs: a real node:http server
 * on 127.0.0.1 per test that records each request, refuses one the vendor would refuse
 * (test/support/vendor-schemas.ts; none may be refused), and answers from a queue of canned
 * replies in the vendor's documented wire format. The defects of issue 18 have their own tests
 * in vendor-wire.test.ts.
 */
import { expect } from 'chai';
import { loadImage } from '@napi-rs/canvas';
import { AnthropicBackend } from '../../shared/models/anthropic';
import { createModelRegistry } from '../../shared/models/registry';
import { GeminiBackend } from '../../shared/models/gemini';
import { OpenAIBackend } from '../../shared/models/openai';
import { startStub, type Stub } from '../support/vendor-stub';
import { FAST_RETRY, rejection, SCREEN, shopObservation, solidPng, turnInput } from '../support/model-turns';


async function pngSize(base64: string): Promise<{ width: number; height: number }> {
  const image = await loadImage(Buffer.from(base64, 'base64'));
  return { width: image.width, height: image.height };
}

describe('vendor model backends against local stand-ins', function () {
  let stub: Stub;
  beforeEach(async function () {
    const title = this.currentTest?.parent?.title ?? '';
    stub = await startStub(title.startsWith('Anthropic') ? 'anthropic' : title.startsWith('OpenAI') ? 'openai' : title.startsWith('Gemini') ? 'gemini' : undefined);
  });
  afterEach(async () => {
    expect(stub.violations, 'requests the vendor would refuse').to.deep.equal([]);
    await stub.close();
  });

  describe('Anthropic Messages API', () => {
    const backend = () => new AnthropicBackend({ apiKey: 'sk-ant-test', baseUrl: stub.url, retry: FAST_RETRY });
    const message = (content: unknown[], stop_reason = 'tool_use') => ({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-6',
      content,
      stop_reason,
      usage: { input_tokens: 1200, output_tokens: 40 },
    });

    it('sends the computer tool, custom tools and a scaled screenshot, and reads a click', async () => {
      stub.reply({
        body: message([
          { type: 'text', text: 'I will click the shirt.' },
          { type: 'tool_use', id: 'toolu_1', name: 'computer', input: { action: 'left_click', coordinate: [640, 400] } },
        ]),
      });
      const out = await backend().turn(turnInput());

      const [req] = stub.requests;
      expect(req.method).to.equal('POST');
      expect(req.path).to.equal('/v1/messages');
      // Anthropic's SDK: a bearer key and the API version it was built for.
      expect(req.headers.authorization).to.equal('Bearer sk-ant-test');
      expect(req.headers['anthropic-version']).to.equal('2026-10-21');
      expect(req.headers['anthropic-beta']).to.equal('computer-use-2025-11-24');
      expect(req.headers['content-type']).to.equal('application/json');
      expect(req.body.model).to.equal('claude-sonnet-4-6');
      expect(req.body.system).to.equal('Service rules.\n\nAgent instructions.');
      expect(req.body.max_tokens).to.equal(4096);
      // Claude 4.6: adaptive thinking, the task's effort as output_config.effort.
      expect(req.body.thinking).to.deep.equal({ type: 'adaptive' });
      expect(req.body.output_config).to.deep.equal({ effort: 'low' });
      expect(req.body).not.to.have.property('betas');
      expect(req.body.tools[0]).to.deep.equal({
        type: 'computer_20251124',
        name: 'computer',
        display_width_px: 1280,
        display_height_px: 800,
      });
      expect(req.body.tools.slice(1).map((t: any) => t.name)).to.deep.equal([
        'ask_person',
        'request_approval',
        'finish',
        'give_up',
        'call_tool',
        'list_files',
        'read_file',
        'search_files',
        'write_file',
        'delete_file',
      ]);
      const callTool = req.body.tools.find((t: any) => t.name === 'call_tool');
      expect(callTool.input_schema.properties.name.enum).to.deep.equal(['lookup_order']);
      expect(callTool.description).to.contain('lookup_order: Finds an order by id');
      expect(req.body.messages).to.have.length(1);
      const [prompt, image] = req.body.messages[0].content;
      expect(prompt).to.deep.equal({ type: 'text', text: 'Buy the blue shirt on shop.example.com' });
      expect(image.type).to.equal('image');
      expect(image.source.type).to.equal('base64');
      expect(image.source.media_type).to.equal('image/png');
      expect(await pngSize(image.source.data)).to.deep.equal({ width: 1280, height: 800 });

      // 640,400 on the 1280×800 picture is 720,450 on the 1440×900 screen.
      expect(out.move).to.deep.equal({ kind: 'actions', actions: [{ type: 'click', x: 720, y: 450 }], step: 'Click at 720, 450' });
      expect(out.thought).to.equal('I will click the shirt.');
      expect(out.safety).to.equal(null);
      expect(out.usage).to.deep.equal({ input_tokens: 1200, output_tokens: 40 });
      expect(JSON.stringify(out.state)).not.to.contain(image.source.data.slice(0, 50));
    });

    it('answers the tool use with the outcome and the new screenshot, maps effort to thinking, and finishes on end_turn', async () => {
      stub.reply(
        { body: message([{ type: 'tool_use', id: 'toolu_1', name: 'computer', input: { action: 'screenshot' } }]) },
        { body: message([{ type: 'thinking', thinking: 'done', signature: 'sig' }, { type: 'text', text: 'The shirt is in the cart.' }], 'end_turn') },
      );
      const first = await backend().turn(turnInput({ model: 'claude-haiku-4-5-20251001', effort: 'high' }));
      expect(first.move).to.deep.equal({ kind: 'actions', actions: [{ type: 'screenshot' }], step: 'Look at the screen' });
      const second = await backend().turn(
        turnInput({ model: 'claude-haiku-4-5-20251001', effort: 'high', state: JSON.parse(JSON.stringify(first.state)), lastOutcome: { kind: 'actions', results: [{ ok: true }] } }),
      );

      // Haiku 4.5 keeps the January 2025 tool, its beta and a thinking budget.
      expect(stub.requests[0].headers['anthropic-beta']).to.equal('computer-use-2025-01-24');
      expect(stub.requests[0].body.tools[0].type).to.equal('computer_20250124');
      expect(stub.requests[0].body.thinking).to.deep.equal({ type: 'enabled', budget_tokens: 12000 });
      expect(stub.requests[0].body.max_tokens).to.equal(20000);
      const messages = stub.requests[1].body.messages;
      expect(messages.map((m: any) => m.role)).to.deep.equal(['user', 'assistant', 'user']);
      // The first screenshot is not kept in state; only the current one is sent.
      expect(messages[0].content[1]).to.deep.equal({ type: 'text', text: '[screenshot omitted]' });
      const [result] = messages[2].content;
      expect(result.type).to.equal('tool_result');
      expect(result.tool_use_id).to.equal('toolu_1');
      expect(result.is_error).to.equal(false);
      expect(result.content[0].type).to.equal('image');
      expect(await pngSize(result.content[0].source.data)).to.deep.equal({ width: 1280, height: 800 });
      expect(second.move).to.deep.equal({ kind: 'done', summary: 'The shirt is in the cart.' });
    });

    it('maps the computer actions and key names, several tool uses making one move', async () => {
      stub.reply({
        body: message([
          { type: 'tool_use', id: 't1', name: 'computer', input: { action: 'key', text: 'cmd+space' } },
          { type: 'tool_use', id: 't2', name: 'computer', input: { action: 'type', text: 'Mail' } },
          { type: 'tool_use', id: 't3', name: 'computer', input: { action: 'key', text: 'Return' } },
          { type: 'tool_use', id: 't4', name: 'computer', input: { action: 'double_click', coordinate: [128, 80] } },
          { type: 'tool_use', id: 't5', name: 'computer', input: { action: 'left_click_drag', start_coordinate: [0, 0], coordinate: [1280, 800] } },
          { type: 'tool_use', id: 't6', name: 'computer', input: { action: 'scroll', coordinate: [640, 400], scroll_direction: 'down', scroll_amount: 5 } },
          { type: 'tool_use', id: 't7', name: 'computer', input: { action: 'wait', duration: 2 } },
          { type: 'tool_use', id: 't8', name: 'computer', input: { action: 'mouse_move', coordinate: [10, 10] } },
          { type: 'tool_use', id: 't9', name: 'computer', input: { action: 'left_click' } },
        ]),
      });
      const out = await backend().turn(turnInput());
      expect(out.move.kind === 'actions' && out.move.actions).to.deep.equal([
        { type: 'key', keys: 'cmd+space' },
        { type: 'type', text: 'Mail' },
        { type: 'key', keys: 'enter' },
        { type: 'click', x: 144, y: 90, double: true },
        { type: 'drag', from: { x: 0, y: 0 }, to: { x: 1439, y: 899 } },
        { type: 'scroll', x: 720, y: 450, dx: 0, dy: 500 },
        { type: 'wait', ms: 2000 },
        { type: 'screenshot' },
        // A click without a coordinate lands where the mouse was moved.
        { type: 'click', x: 11, y: 11 },
      ]);
    });

    it('turns custom tools into questions and answers them with the outcome', async () => {
      stub.reply(
        { body: message([{ type: 'tool_use', id: 'toolu_q', name: 'ask_person', input: { question: 'Which size?', options: ['S', 'M'] } }]) },
        { body: message([{ type: 'tool_use', id: 'toolu_t', name: 'call_tool', input: { name: 'lookup_order', arguments: { id: 7 } } }]) },
        { body: message([{ type: 'tool_use', id: 'toolu_f', name: 'finish', input: { summary: 'Ordered size M' } }]) },
      );
      const first = await backend().turn(turnInput());
      expect(first.move).to.deep.equal({ kind: 'ask', question: 'Which size?', options: ['S', 'M'] });
      const second = await backend().turn(turnInput({ state: first.state, lastOutcome: { kind: 'answer', answer: 'M' } }));
      expect(second.move).to.deep.equal({ kind: 'tool', name: 'lookup_order', arguments: { id: 7 } });
      expect(stub.requests[1].body.messages[2].content).to.deep.equal([
        { type: 'tool_result', tool_use_id: 'toolu_q', is_error: false, content: [{ type: 'text', text: 'The answer: M' }] },
      ]);
      const third = await backend().turn(turnInput({ state: second.state, lastOutcome: { kind: 'tool', ok: false, text: 'HTTP 500' } }));
      expect(stub.requests[2].body.messages[4].content[0]).to.deep.include({ tool_use_id: 'toolu_t', is_error: true });
      expect(stub.requests[2].body.messages[4].content[0].content[0].text).to.equal('The call failed: HTTP 500');
      expect(third.move).to.deep.equal({ kind: 'done', summary: 'Ordered size M' });
    });

    it('tells the model at once about an action it cannot take and asks again within the turn', async () => {
      stub.reply(
        { body: message([{ type: 'tool_use', id: 'toolu_x', name: 'computer', input: { action: 'triple_click', coordinate: [1, 1] } }]) },
        { body: message([{ type: 'tool_use', id: 'toolu_y', name: 'computer', input: { action: 'left_click', coordinate: [1, 1] } }]) },
      );
      const out = await backend().turn(turnInput());
      expect(stub.requests).to.have.length(2);
      const [feedback] = stub.requests[1].body.messages[2].content;
      expect(feedback).to.deep.include({ type: 'tool_result', tool_use_id: 'toolu_x', is_error: true });
      expect(feedback.content[0].text).to.match(/triple_click/);
      expect(out.move).to.deep.include({ kind: 'actions' });
      expect(out.usage).to.deep.equal({ input_tokens: 2400, output_tokens: 80 });
    });

    it('retries a 429 honouring retry-after, and a 529', async () => {
      stub.reply(
        { status: 429, headers: { 'retry-after-ms': '5' }, body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } } },
        { status: 529, headers: { 'retry-after-ms': '5' }, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
        { body: message([{ type: 'text', text: 'Nothing to do.' }], 'end_turn') },
      );
      const out = await backend().turn(turnInput());
      expect(stub.requests).to.have.length(3);
      expect(out.move).to.deep.equal({ kind: 'done', summary: 'Nothing to do.' });
    });

    it('gives up after two retries with a retryable error', async () => {
      const overloaded = { status: 500, headers: { 'retry-after-ms': '5' }, body: { type: 'error', error: { type: 'api_error', message: 'Internal error' } } };
      stub.reply(overloaded, overloaded, overloaded);
      const error = await rejection(backend().turn(turnInput()));
      expect(stub.requests).to.have.length(3);
      expect(error).to.include({ code: 'server_error', retryable: true, status: 500, backend: 'anthropic' });
      expect(error.message).to.equal('Anthropic API answered 500: Internal error');
    });

    it('does not retry a 400 and says why', async () => {
      stub.reply({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'messages: bad' } } });
      const error = await rejection(backend().turn(turnInput()));
      expect(stub.requests).to.have.length(1);
      expect(error).to.include({ code: 'bad_request', retryable: false, status: 400 });
      expect(error.message).to.equal('Anthropic API answered 400: messages: bad');
    });

    it('times out a call that is never answered', async () => {
      stub.reply({ hang: true, body: null });
      const error = await rejection(new AnthropicBackend({ apiKey: 'k', baseUrl: stub.url, timeoutMs: 200, retry: { retries: 0 } }).turn(turnInput()));
      expect(error).to.include({ code: 'timeout', retryable: true });
    });

    it('stops when the caller aborts', async () => {
      stub.reply({ hang: true, body: null });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      const error = await rejection(backend().turn(turnInput(), controller.signal));
      expect(error).to.include({ code: 'aborted', retryable: false });
    });
  });

  describe('OpenAI Responses API', () => {
    const backend = () => new OpenAIBackend({ apiKey: 'sk-test', baseUrl: `${stub.url}/v1`, retry: FAST_RETRY });
    const response = (id: string, output: unknown[], status = 'completed') => ({
      id,
      object: 'response',
      status,
      output,
      usage: { input_tokens: 900, output_tokens: 30, total_tokens: 930 },
    });

    it('sends the GA computer tool, function tools and the screenshot, and reads a batched computer call with a safety check', async () => {
      stub.reply({
        body: response('resp_1', [
          { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Clicking Buy now.' }] },
          {
            type: 'computer_call',
            id: 'cu_1',
            call_id: 'call_1',
            actions: [
              { type: 'click', button: 'left', x: 100, y: 200 },
              { type: 'type', text: 'blue shirt' },
              { type: 'keypress', keys: ['ENTER'] },
            ],
            pending_safety_checks: [{ id: 'sc_1', code: 'malicious_instructions', message: 'The page may hold instructions.' }],
            status: 'completed',
          },
        ]),
      });
      const out = await backend().turn(turnInput({ model: 'gpt-5.4', effort: 'medium' }));

      const [req] = stub.requests;
      expect(req.path).to.equal('/v1/responses');
      expect(req.headers.authorization).to.equal('Bearer sk-test');
      expect(req.body.model).to.equal('gpt-5.4');
      expect(req.body.instructions).to.equal('Service rules.\n\nAgent instructions.');
      expect(req.body.reasoning).to.deep.equal({ effort: 'medium', summary: 'concise' });
      expect(req.body.truncation).to.equal('auto');
      expect(req.body).not.to.have.property('previous_response_id');
      expect(req.body.tools[0]).to.deep.equal({ type: 'computer' });
      expect(req.body.tools[1]).to.deep.include({ type: 'function', name: 'ask_person', strict: false });
      expect(req.body.tools[1].parameters.required).to.deep.equal(['question']);
      const [msg] = req.body.input;
      expect(msg).to.deep.include({ role: 'user', type: 'message' });
      expect(msg.content[0]).to.deep.equal({ type: 'input_text', text: 'Buy the blue shirt on shop.example.com' });
      expect(msg.content[1].type).to.equal('input_image');
      expect(msg.content[1].image_url).to.equal(`data:image/png;base64,${SCREEN.toString('base64')}`);

      expect(out.move).to.deep.equal({
        kind: 'actions',
        actions: [{ type: 'click', x: 100, y: 200 }, { type: 'type', text: 'blue shirt' }, { type: 'key', keys: 'enter' }],
        step: 'Click at 100, 200, Type 10 characters, Press enter',
      });
      expect(out.safety).to.equal('The page may hold instructions.');
      expect(out.thought).to.equal('Clicking Buy now.');
      expect(out.usage).to.deep.equal({ input_tokens: 900, output_tokens: 30 });
    });

    it('answers with computer_call_output (a computer_screenshot), acknowledges the safety check a person approved, and chains previous_response_id', async () => {
      stub.reply(
        {
          body: response('resp_1', [
            { type: 'computer_call', call_id: 'call_1', action: { type: 'type', text: 'hello' }, pending_safety_checks: [{ id: 'sc_1', code: 'x', message: 'm' }] },
          ]),
        },
        { body: response('resp_2', [{ type: 'function_call', call_id: 'call_2', name: 'ask_person', arguments: '{"question":"Send it?","options":["yes","no"]}' }]) },
        { body: response('resp_3', [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Sent.' }] }]) },
      );
      const first = await backend().turn(turnInput({ model: 'gpt-5.4' }));
      const after = solidPng(1440, 900);
      const second = await backend().turn(
        turnInput({ model: 'gpt-5.4', state: first.state, screenshot: after, safetyApproved: true, lastOutcome: { kind: 'actions', results: [{ ok: false, error: 'No text field is focused' }] } }),
      );
      expect(stub.requests[1].body.previous_response_id).to.equal('resp_1');
      expect(stub.requests[1].body.input).to.deep.equal([
        {
          type: 'computer_call_output',
          call_id: 'call_1',
          output: { type: 'computer_screenshot', image_url: `data:image/png;base64,${after.toString('base64')}` },
          acknowledged_safety_checks: [{ id: 'sc_1', code: 'x', message: 'm' }],
        },
        { role: 'user', type: 'message', content: [{ type: 'input_text', text: 'The last action did not work: action 1 failed: No text field is focused.' }] },
      ]);
      expect(second.move).to.deep.equal({ kind: 'ask', question: 'Send it?', options: ['yes', 'no'] });
      const third = await backend().turn(turnInput({ model: 'gpt-5.4', state: second.state, lastOutcome: { kind: 'answer', answer: 'yes' } }));
      expect(stub.requests[2].body.previous_response_id).to.equal('resp_2');
      expect(stub.requests[2].body.input).to.deep.equal([{ type: 'function_call_output', call_id: 'call_2', output: 'The answer: yes' }]);
      expect(third.move).to.deep.equal({ kind: 'done', summary: 'Sent.' });
    });

    it('maps keypress, drag, scroll, double click and wait, with Windows names', async () => {
      const calls = [
        { type: 'keypress', keys: ['CTRL', 'L'] },
        { type: 'keypress', keys: ['ENTER'] },
        { type: 'drag', path: [{ x: 10, y: 10 }, { x: 50, y: 50 }, { x: 90, y: 95 }] },
        { type: 'scroll', x: 300, y: 400, scroll_x: 0, scroll_y: -250 },
        { type: 'double_click', x: 5, y: 6 },
        { type: 'wait' },
      ];
      for (const [i, action] of calls.entries()) stub.reply({ body: response(`r${i}`, [{ type: 'computer_call', call_id: `c${i}`, action, pending_safety_checks: [] }]) });
      const moves = [];
      for (const _ of calls) {
        const out = await backend().turn(turnInput({ model: 'gpt-5.4-mini', display: { width: 1440, height: 900, os: 'windows' } }));
        moves.push(out.move.kind === 'actions' ? out.move.actions[0] : null);
        expect(out.safety).to.equal(null);
      }
      expect(moves).to.deep.equal([
        { type: 'key', keys: 'ctrl+l' },
        { type: 'key', keys: 'enter' },
        { type: 'drag', from: { x: 10, y: 10 }, to: { x: 90, y: 95 } },
        { type: 'scroll', x: 300, y: 400, dx: 0, dy: -250 },
        { type: 'click', x: 5, y: 6, double: true },
        { type: 'wait', ms: 2000 },
      ]);
    });

    it('sends a Retina-size screenshot at the display size it declares', async () => {
      stub.reply({ body: response('resp_1', [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] }]) });
      await backend().turn(turnInput({ model: 'gpt-5.4', screenshot: solidPng(2880, 1800) }));
      const url: string = stub.requests[0].body.input[0].content[1].image_url;
      expect(await pngSize(url.replace('data:image/png;base64,', ''))).to.deep.equal({ width: 1440, height: 900 });
    });

    it('retries a 429 and then a 503, and does not retry a 401', async () => {
      stub.reply(
        { status: 429, headers: { 'retry-after-ms': '10' }, body: { error: { message: 'Rate limit reached', type: 'requests' } } },
        { status: 503, headers: { 'retry-after-ms': '5' }, body: { error: { message: 'Service unavailable' } } },
        { body: response('resp_ok', [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hi' }] }]) },
      );
      const out = await backend().turn(turnInput({ model: 'gpt-5.4' }));
      expect(stub.requests).to.have.length(3);
      expect(out.move).to.deep.equal({ kind: 'done', summary: 'Hi' });

      stub.reply({ status: 401, body: { error: { message: 'Incorrect API key provided' } } });
      const error = await rejection(backend().turn(turnInput({ model: 'gpt-5.4' })));
      expect(stub.requests).to.have.length(4);
      expect(error).to.include({ code: 'unauthorized', retryable: false, status: 401 });
      expect(error.message).to.equal('OpenAI API answered 401: Incorrect API key provided');
    });

    it('ends the call with a retryable error when retry-after asks for longer than one call may wait', async () => {
      stub.reply({ status: 429, headers: { 'retry-after': '60' }, body: { error: { message: 'Rate limit reached' } } });
      const error = await rejection(backend().turn(turnInput({ model: 'gpt-5.4' })));
      expect(stub.requests).to.have.length(1);
      expect(error).to.include({ code: 'rate_limited', retryable: true, retryAfterMs: 60000 });
    });

    it('reports an unreachable API as a retryable network error', async () => {
      await stub.close();
      const error = await rejection(new OpenAIBackend({ apiKey: 'k', baseUrl: `${stub.url}/v1`, retry: { retries: 1, baseDelayMs: 1 } }).turn(turnInput()));
      expect(error).to.include({ code: 'network', retryable: true });
      stub = await startStub();
    });
  });

  describe('Gemini generateContent', () => {
    const MODEL = 'gemini-3.6-flash';
    const backend = () => new GeminiBackend({ apiKey: 'gm-test', baseUrl: stub.url, retry: FAST_RETRY });
    const answer = (parts: unknown[], finishReason = 'STOP') => ({
      candidates: [{ content: { role: 'model', parts }, finishReason }],
      usageMetadata: { promptTokenCount: 700, candidatesTokenCount: 20, thoughtsTokenCount: 100 },
    });

    it('sends the computerUse tool, declarations, thinking level and screenshot, and scales a click', async () => {
      stub.reply({
        body: answer([
          { text: 'Looking at the cart.', thought: true },
          { text: 'I will press Buy now.' },
          { functionCall: { name: 'click_at', args: { x: 500, y: 500, safety_decision: { decision: 'require_confirmation', explanation: 'This buys something.' } } } },
        ]),
      });
      const out = await backend().turn(turnInput({ model: MODEL, effort: 'medium' }));

      const [req] = stub.requests;
      expect(req.path).to.equal(`/v1beta/models/${MODEL}:generateContent`);
      expect(req.headers['x-goog-api-key']).to.equal('gm-test');
      expect(req.body.tools[0]).to.deep.equal({ computerUse: { environment: 'ENVIRONMENT_BROWSER' } });
      const declarations = req.body.tools[1].functionDeclarations;
      expect(declarations.map((d: any) => d.name)).to.include.members(['ask_person', 'finish', 'call_tool', 'write_file']);
      expect(declarations.find((d: any) => d.name === 'call_tool').parameters).to.deep.equal({
        type: 'OBJECT',
        properties: {
          name: { type: 'STRING', description: 'The function to call.', enum: ['lookup_order'] },
          arguments_json: { type: 'STRING', description: 'The arguments as a JSON object, like {"id": 1}.' },
        },
        required: ['name'],
      });
      expect(req.body.generationConfig).to.deep.equal({ thinkingConfig: { thinkingLevel: 'MEDIUM' } });
      expect(req.body.systemInstruction).to.deep.include({ parts: [{ text: 'Service rules.\n\nAgent instructions.' }] });
      expect(req.body.contents).to.deep.equal([
        {
          role: 'user',
          parts: [{ text: 'Buy the blue shirt on shop.example.com' }, { inlineData: { mimeType: 'image/png', data: SCREEN.toString('base64') } }],
        },
      ]);

      expect(out.move).to.deep.equal({ kind: 'actions', actions: [{ type: 'click', x: 720, y: 450 }], step: 'Click at 720, 450' });
      expect(out.safety).to.equal('This buys something.');
      expect(out.thought).to.equal('I will press Buy now.');
      expect(out.usage).to.deep.equal({ input_tokens: 700, output_tokens: 120 });
    });

    it('answers every call with a function response, the screenshot on the last, and acknowledges the safety check', async () => {
      stub.reply(
        { body: answer([{ functionCall: { name: 'click_at', args: { x: 100, y: 100, safety_decision: { decision: 'require_confirmation', explanation: 'e' } } } }]) },
        {
          body: answer([
            { functionCall: { name: 'type_text_at', args: { x: 250, y: 100, text: 'blue shirt', press_enter: true } } },
            { functionCall: { name: 'key_combination', args: { keys: 'Control+A' } } },
          ]),
        },
        { body: answer([{ text: 'The shirt is ordered.' }]) },
      );
      const first = await backend().turn(turnInput({ model: MODEL }));
      const second = await backend().turn(turnInput({ model: MODEL, state: first.state, safetyApproved: true, lastOutcome: { kind: 'actions', results: [{ ok: true }] } }));
      const contents = stub.requests[1].body.contents;
      expect(contents.map((c: any) => c.role)).to.deep.equal(['user', 'model', 'user']);
      expect(contents[0].parts).to.deep.equal([{ text: 'Buy the blue shirt on shop.example.com' }]);
      expect(contents[2].parts).to.deep.equal([
        {
          functionResponse: {
            name: 'click_at',
            response: { url: 'https://shop.example.com/', safety_acknowledgement: 'true' },
            parts: [{ inlineData: { mimeType: 'image/png', data: SCREEN.toString('base64') } }],
          },
        },
      ]);
      expect(second.move.kind === 'actions' && second.move.actions).to.deep.equal([
        { type: 'click', x: 360, y: 90 },
        { type: 'key', keys: 'cmd+a' },
        { type: 'key', keys: 'backspace' },
        { type: 'type', text: 'blue shirt' },
        { type: 'key', keys: 'enter' },
        { type: 'key', keys: 'ctrl+a' },
      ]);
      const third = await backend().turn(
        turnInput({ model: MODEL, state: second.state, lastOutcome: { kind: 'actions', results: [{ ok: true }, { ok: true }, { ok: true }, { ok: true }, { ok: true }, { ok: false, error: 'nope' }] } }),
      );
      const responses = stub.requests[2].body.contents[4].parts;
      expect(responses[0]).to.deep.equal({ functionResponse: { name: 'type_text_at', response: { url: 'https://shop.example.com/' } } });
      expect(responses[1].functionResponse.response).to.deep.equal({ url: 'https://shop.example.com/', error: 'Failed: action 1 failed: nope.' });
      expect(responses[1].functionResponse.parts[0].inlineData.mimeType).to.equal('image/png');
      expect(third.move).to.deep.equal({ kind: 'done', summary: 'The shirt is ordered.' });
    });

    it('navigates through the address bar it sees, and calls HTTP tools with JSON arguments', async () => {
      stub.reply(
        { body: answer([{ functionCall: { name: 'navigate', args: { url: 'https://mail.example.com' } } }]) },
        { body: answer([{ functionCall: { name: 'call_tool', args: { name: 'lookup_order', arguments_json: '{"id": 3}' } } }]) },
      );
      const withBar = shopObservation({ visible_labels: [{ label: 'Address bar', bounds: { x: 100, y: 30, width: 400, height: 20 } }] });
      const first = await backend().turn(turnInput({ model: MODEL, observation: withBar }));
      expect(first.move.kind === 'actions' && first.move.actions).to.deep.equal([
        { type: 'click', x: 300, y: 40 },
        { type: 'type', text: 'https://mail.example.com' },
        { type: 'key', keys: 'enter' },
      ]);
      const second = await backend().turn(turnInput({ model: MODEL, state: first.state, lastOutcome: { kind: 'actions', results: [{ ok: true }, { ok: true }, { ok: true }] } }));
      expect(second.move).to.deep.equal({ kind: 'tool', name: 'lookup_order', arguments: { id: 3 } });
    });

    it('maps effort to thinkingLevel on Gemini 3, and sends no thinking settings to the 2.5 computer-use preview', async () => {
      for (const model of [MODEL, 'gemini-2.5-computer-use-preview-10-2025']) {
        for (const effort of ['low', 'medium', 'high'] as const) {
          stub.reply({ body: answer([{ text: 'ok' }]) });
          await backend().turn(turnInput({ model, effort }));
        }
      }
      expect(stub.requests.map((r) => r.body.generationConfig?.thinkingConfig ?? null)).to.deep.equal([
        { thinkingLevel: 'LOW' },
        { thinkingLevel: 'MEDIUM' },
        { thinkingLevel: 'HIGH' },
        null,
        null,
        null,
      ]);
    });

    it('retries a 500 and does not retry a 400', async () => {
      stub.reply(
        { status: 500, body: { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } } },
        { body: answer([{ text: 'Done here.' }]) },
      );
      const out = await backend().turn(turnInput({ model: MODEL }));
      expect(stub.requests).to.have.length(2);
      expect(out.move).to.deep.equal({ kind: 'done', summary: 'Done here.' });

      stub.reply({ status: 400, body: { error: { code: 400, message: 'Invalid JSON payload received.', status: 'INVALID_ARGUMENT' } } });
      const error = await rejection(backend().turn(turnInput({ model: MODEL })));
      expect(stub.requests).to.have.length(3);
      expect(error).to.include({ code: 'bad_request', retryable: false, backend: 'gemini' });
      expect(error.message).to.equal('Gemini API answered 400: Invalid JSON payload received.');
    });
  });

  describe('createModelRegistry', () => {
    it('routes each id to its vendor at the configured base URL', async () => {
      const registry = createModelRegistry(
        { scripted: false, anthropic: { apiKey: 'a', baseUrl: stub.url }, openai: { apiKey: 'o', baseUrl: `${stub.url}/v1` }, gemini: { apiKey: 'g', baseUrl: stub.url } },
      );
      stub.reply(
        { body: { id: 'm', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'A' }], stop_reason: 'end_turn' } },
        { body: { id: 'r', output: [{ type: 'message', content: [{ type: 'output_text', text: 'B' }] }] } },
        { body: { candidates: [{ content: { role: 'model', parts: [{ text: 'C' }] } }] } },
      );
      const ids = ['claude-opus-4-6', null, 'gemini-3.6-flash'];
      const summaries = [];
      for (const id of ids) {
        const out = await registry.backendFor(id)!.turn(turnInput({ model: id ?? 'gpt-5.4' }));
        summaries.push(out.move.kind === 'done' ? out.move.summary : null);
      }
      expect(summaries).to.deep.equal(['A', 'B', 'C']);
      expect(stub.requests.map((r) => r.path)).to.deep.equal([
        '/v1/messages',
        '/v1/responses',
        '/v1beta/models/gemini-3.6-flash:generateContent',
      ]);
    });
  });
});
