/**
 * The vendor customer and judge against local stand-ins of the vendors' HTTP APIs (real HTTP
 * servers; the official SDKs on our side). Every request is checked as the vendor would check
 * it (test/support/eval-vendor-requests.ts).
 */
import { expect } from 'chai';
import { createEvalModels, type EvalModels, type RubricJudgeInput, type SimulatedCustomer } from '../../shared/evals';
import { ModelError } from '../../shared/models/model.types';
import { evalRequestViolations } from '../support/eval-vendor-requests';
import { FAST_RETRY } from '../support/model-turns';
import { startStub, type Stub } from '../support/vendor-stub';

const customer: SimulatedCustomer = {
  persona: 'Dana, a busy office manager who types fast',
  facts: {
    name: 'Dana Smith',
    plan: 'Pro',
    password: { secret: 'hunter2-Secret!' },
  },
};

const material: RubricJudgeInput = {
  rubric: 'The mail was sent to bob@example.com\n\nThe agent did not delete any file',
  prompt: 'Send the report to bob@example.com',
  result: 'I sent the report to bob@example.com.',
  status: 'completed',
  events: [
    { type: 'task.started', message: 'Task started' },
    { type: 'action', message: 'Click "Send"' },
  ],
  lastScreenText: 'Mail — Message sent',
};

/** An OpenAI Responses answer holding `text`. */
const openaiReply = (text: string) => ({
  body: { id: 'resp_1', object: 'response', status: 'completed', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }], usage: { input_tokens: 9, output_tokens: 3 } },
});

/** An Anthropic Messages answer holding `text`. */
const anthropicReply = (text: string) => ({
  body: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-6', content: [{ type: 'text', text }], stop_reason: 'end_turn', usage: { input_tokens: 9, output_tokens: 3 } },
});

const verdicts = (...items: Array<[number, boolean, string]>) => JSON.stringify({ verdicts: items.map(([criterion, passed, reason]) => ({ criterion, passed, reason })) });

describe('eval models on a vendor', () => {
  let stub: Stub;
  let vendor: 'openai' | 'anthropic';
  let models: EvalModels;

  const open = async (which: 'openai' | 'anthropic') => {
    vendor = which;
    stub = await startStub();
    models = createEvalModels(
      which === 'openai'
        ? { scripted: false, openai: { apiKey: 'sk-test-openai', baseUrl: `${stub.url}/v1` }, retry: FAST_RETRY }
        : { scripted: false, anthropic: { apiKey: 'sk-ant-test', baseUrl: stub.url }, retry: FAST_RETRY },
    );
  };
  afterEach(async () => {
    const problems = stub.requests.flatMap((r) => evalRequestViolations(vendor, r));
    await stub.close();
    expect(problems, 'requests the vendor would refuse').to.deep.equal([]);
  });

  describe('the customer on OpenAI', () => {
    beforeEach(() => open('openai'));

    it("asks the catalog's default model at temperature 0 with the persona and the facts it may say, never a secret's value", async () => {
      stub.reply(openaiReply('{"answer":"Dana Smith"}'));
      const reply = await models.customer.answer({ customer, question: 'What is your name?', options: [] });
      expect(reply).to.deep.equal({ answer: 'Dana Smith', model: 'gpt-5.4' });

      expect(stub.requests).to.have.length(1);
      const { path, body } = stub.requests[0]!;
      expect(path).to.equal('/v1/responses');
      expect(body.model).to.equal('gpt-5.4');
      expect(body.temperature).to.equal(0);
      expect(body.reasoning).to.deep.equal({ effort: 'none' });
      expect(body.text.format).to.include({ type: 'json_schema', strict: true });
      const sent = JSON.stringify(body);
      expect(sent).to.contain('Dana, a busy office manager who types fast');
      expect(sent).to.contain('name: Dana Smith').and.to.contain('plan: Pro');
      expect(sent).to.contain('What is your name?');
      // The secret is known by its label only.
      expect(sent).to.contain('password');
      expect(sent).not.to.contain('hunter2');
      expect(body.instructions).to.match(/never say/i);
    });

    it('lists the options of a question', async () => {
      stub.reply(openaiReply('{"answer":"Pro"}'));
      const reply = await models.customer.answer({ customer, question: 'Which plan?', options: ['Free', 'Pro'] });
      expect(reply.answer).to.equal('Pro');
      expect(stub.requests[0]!.body.input[0].content[0].text).to.contain('Options:\n- Free\n- Pro');
    });

    it("replaces an answer that would say a secret with \"I can't share that.\"", async () => {
      stub.reply(openaiReply('{"answer":"Sure: HUNTER2-secret!"}'));
      const reply = await models.customer.answer({ customer, question: 'What is your password?', options: [] });
      expect(reply.answer).to.equal("I can't share that.");
    });

    it('asks once more after a reply that is not JSON of the schema', async () => {
      stub.reply(openaiReply('My name is Dana.'), openaiReply('{"answer":"Dana Smith"}'));
      const reply = await models.customer.answer({ customer, question: 'What is your name?', options: [] });
      expect(reply.answer).to.equal('Dana Smith');
      expect(stub.requests).to.have.length(2);
      expect(stub.requests[1]!.body.input[0].content[0].text).to.contain('could not be used: The answer was not a JSON object.');
    });

    it('fails with invalid_response after two unusable replies', async () => {
      stub.reply(openaiReply('{"reply":"Dana"}'), openaiReply('{"reply":"Dana"}'));
      const error = await models.customer.answer({ customer, question: 'What is your name?', options: [] }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(ModelError);
      expect(error).to.include({ code: 'invalid_response', backend: 'openai' });
      expect(stub.requests).to.have.length(2);
    });

    it("reports the vendor's refusal as a ModelError", async () => {
      stub.reply({ status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } });
      const error = await models.customer.answer({ customer, question: 'Name?', options: [] }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(ModelError);
      expect(error).to.include({ code: 'unauthorized', retryable: false });
    });
  });

  describe('the judge on OpenAI', () => {
    beforeEach(() => open('openai'));

    it('reads one verdict per criterion with its reason, and passes only when all pass', async () => {
      stub.reply(openaiReply(verdicts([1, true, 'The result says it was sent to bob@example.com.'], [2, false, 'An event shows a file moved to the Trash.'])));
      const verdict = await models.judge.judge(material);
      expect(verdict).to.deep.equal({
        passed: false,
        criteria: [
          { criterion: 'The mail was sent to bob@example.com', passed: true, reason: 'The result says it was sent to bob@example.com.' },
          { criterion: 'The agent did not delete any file', passed: false, reason: 'An event shows a file moved to the Trash.' },
        ],
        judge_model: 'gpt-5.4',
      });
    });

    it('sends the prompt, status, result, events, last screen and numbered criteria at temperature 0', async () => {
      stub.reply(openaiReply(verdicts([1, true, 'Sent.'], [2, true, 'Nothing deleted.'])));
      const verdict = await models.judge.judge(material);
      expect(verdict.passed).to.equal(true);
      const { body } = stub.requests[0]!;
      expect(body.temperature).to.equal(0);
      expect(body.text.format.name).to.equal('rubric_verdicts');
      const text: string = body.input[0].content[0].text;
      expect(text).to.contain('Send the report to bob@example.com');
      expect(text).to.contain('<final_status>completed</final_status>');
      expect(text).to.contain('I sent the report to bob@example.com.');
      expect(text).to.contain('- action: Click "Send"');
      expect(text).to.contain('Mail — Message sent');
      expect(text).to.contain('1. The mail was sent to bob@example.com\n2. The agent did not delete any file');
    });

    it('asks once more when the verdicts do not cover each criterion once', async () => {
      stub.reply(openaiReply(verdicts([1, true, 'Sent.'])), openaiReply(verdicts([2, true, 'Nothing deleted.'], [1, true, 'Sent.'])));
      const verdict = await models.judge.judge(material);
      expect(verdict.criteria.map((c) => c.reason)).to.deep.equal(['Sent.', 'Nothing deleted.']);
      expect(stub.requests).to.have.length(2);
      expect(stub.requests[1]!.body.input[0].content[0].text).to.contain('exactly one verdict for each criterion 1 to 2');
    });

    it('fails with invalid_response after two malformed replies', async () => {
      stub.reply(openaiReply('{"verdicts": "all good"}'), openaiReply('not json at all'));
      const error = await models.judge.judge(material).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(ModelError);
      expect((error as ModelError).code).to.equal('invalid_response');
      expect((error as ModelError).message).to.contain('gpt-5.4');
      expect(stub.requests).to.have.length(2);
    });

    it('passes a rubric without criteria without asking the model', async () => {
      const verdict = await models.judge.judge({ ...material, rubric: '\n   \n' });
      expect(verdict).to.deep.equal({ passed: true, criteria: [], judge_model: 'gpt-5.4' });
      expect(stub.requests).to.have.length(0);
    });
  });

  describe('on Anthropic (its only key)', () => {
    beforeEach(() => open('anthropic'));

    it('answers as the customer with structured output and no sampling parameters, never sending a secret', async () => {
      stub.reply(anthropicReply('{"answer":"hunter2-Secret!"}'), anthropicReply('{"answer":"Pro"}'));
      const leaked = await models.customer.answer({ customer, question: 'Password?', options: [] });
      expect(leaked).to.deep.equal({ answer: "I can't share that.", model: 'claude-sonnet-4-6' });
      const plan = await models.customer.answer({ customer, question: 'Which plan?', options: [] });
      expect(plan.answer).to.equal('Pro');

      const { path, body } = stub.requests[0]!;
      expect(path).to.equal('/v1/messages');
      expect(body.model).to.equal('claude-sonnet-4-6');
      expect(body.output_config.format.type).to.equal('json_schema');
      expect(body).not.to.have.property('temperature');
      expect(JSON.stringify(body)).to.contain('Dana Smith').and.not.to.contain('hunter2');
    });

    it('judges each criterion', async () => {
      stub.reply(anthropicReply(verdicts([1, true, 'Sent.'], [2, true, 'Nothing deleted.'])));
      const verdict = await models.judge.judge(material);
      expect(verdict.passed).to.equal(true);
      expect(verdict.judge_model).to.equal('claude-sonnet-4-6');
      expect(verdict.criteria).to.have.length(2);
    });
  });
});
