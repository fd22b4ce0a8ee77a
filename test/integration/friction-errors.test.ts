import { expect } from 'chai';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { startTestService, type TestService } from '../support/service';
import { connectDesktop, script } from '../support/tasks';

/** What a first-time user reads when a request is refused: the field, and what it expects. */
describe('400s that say what is expected', () => {
  let service: TestService;
  let key: string;
  before(async () => {
    service = await startTestService({}, ['web']);
    ({ key } = await service.newOrg());
  });
  after(async () => service.stop());

  const message = (response: { body: { error: { message: string } } }) => response.body.error.message;

  it('names every allowed value of a union of literals (decision), not only the first', async () => {
    const response = await service.api(key, 'POST', '/v1/tasks/task_abc/respond', { approval_id: 'apr_1', decision: 'maybe' });
    expect(response.status).to.equal(400);
    expect(message(response)).to.equal('decision must be "approve" or "deny"');
  });

  it('says a pattern in words and never leaks the schema description (agent_id)', async () => {
    const response = await service.api(key, 'POST', '/v1/sessions', { agent_id: 'Bad Agent!' });
    expect(response.status).to.equal(400);
    expect(message(response)).to.equal('agent_id must be 2 to 40 lowercase letters, digits and dashes');
  });

  it('says the shape of a malformed task id (task_…)', async () => {
    const response = await service.api(key, 'GET', '/v1/tasks/nope');
    expect(response.status).to.equal(400);
    expect(message(response)).to.equal('path parameter task_id must be a task id: task_ followed by 1 to 40 lowercase letters and digits (task_…)');
  });

  it('names a misspelt body field and the field it probably meant, instead of "prompt is required"', async () => {
    const response = await service.api(key, 'POST', '/v1/sessions/ABCD-EFGH/tasks', { promt: 'open the mail' });
    expect(response.status).to.equal(400);
    expect(message(response)).to.equal('body has an unknown field "promt"; did you mean "prompt"?');
  });

  it('suggests the closest field for an unknown one when nothing is missing', async () => {
    const response = await service.api(key, 'POST', '/v1/sessions/ABCD-EFGH/tasks', { prompt: 'x', metdata: {} });
    expect(message(response)).to.equal('body has an unknown field "metdata"; did you mean "metadata"?');
  });

  it('hints at DESKHAND_ALLOW_PRIVATE_URLS for a local webhook URL in development', async () => {
    const response = await service.api(key, 'PUT', '/v1/webhook', { url: 'http://localhost:4000/hook' });
    expect(response.status).to.equal(400);
    expect(message(response)).to.match(/^url is not allowed: .*DESKHAND_ALLOW_PRIVATE_URLS=1/);
  });

  it('gives no such hint for a URL the switch would not let through either', async () => {
    const response = await service.api(key, 'PUT', '/v1/webhook', { url: 'ftp://example.com/hook' });
    expect(response.status).to.equal(400);
    expect(message(response)).not.to.include('DESKHAND_ALLOW_PRIVATE_URLS');
  });

  it('hints at DESKHAND_ALLOW_PRIVATE_URLS for a local tool URL in development', async () => {
    const tool = { name: 'lookup', description: 'Looks things up', url: 'http://127.0.0.1:4000/tool' };
    const response = await service.api(key, 'POST', '/v1/agents', { agent_id: 'local-tools', tools: { http: [tool] } });
    expect(response.status).to.equal(400);
    expect(message(response)).to.match(/^tools\.http\[0\]\.url is refused: .*DESKHAND_ALLOW_PRIVATE_URLS=1/);
  });
});

describe('the private-URL hint in production', () => {
  let service: TestService;
  after(async () => service?.stop());

  it('is not given (the switch is refused there)', async () => {
    service = await startTestService({ DESKHAND_ENV: 'production' }, ['web']);
    const { key } = await service.newOrg();
    const response = await service.api(key, 'PUT', '/v1/webhook', { url: 'https://localhost/hook' });
    expect(response.status).to.equal(400);
    expect(response.body.error.message).not.to.include('DESKHAND_ALLOW_PRIVATE_URLS');
  });
});

describe('model_unavailable says how to make a model run', () => {
  let service: TestService;
  let desktop: DesktopClient | undefined;
  after(async () => {
    await desktop?.close();
    await service.stop();
  });

  it('names the vendor key to set and DESKHAND_SCRIPTED_MODELS=1', async () => {
    service = await startTestService({ ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '' }, ['web']);
    const { key } = await service.newOrg();
    const connected = await connectDesktop(service, key);
    desktop = connected.client;
    const response = await service.api(key, 'POST', `/v1/sessions/${connected.code}/tasks`, { prompt: 'open the mail' });
    expect(response.status).to.equal(503);
    expect(response.body.error.code).to.equal('model_unavailable');
    expect(response.body.error.message).to.match(/set [A-Z]+_API_KEY/);
    expect(response.body.error.message).to.include('DESKHAND_SCRIPTED_MODELS=1');
  });
});

describe('POST /v1/sessions/{id}/tasks idempotency', () => {
  let service: TestService;
  let key: string;
  let code: string;
  let desktop: DesktopClient;
  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' }, ['web']);
    ({ key } = await service.newOrg());
    const connected = await connectDesktop(service, key);
    ({ code, client: desktop } = connected);
  });
  after(async () => {
    await desktop.close();
    await service.stop();
  });

  const start = (body: Record<string, unknown>, headers: Record<string, string> = {}) => service.api(key, 'POST', `/v1/sessions/${code}/tasks`, body, headers);

  it('returns the first task for the same request again, and 409 idempotency_conflict with another prompt', async () => {
    const prompt = script('sleep 3600');
    const first = await start({ prompt, request_id: 'friction-1' });
    expect(first.status).to.equal(200);
    const again = await start({ prompt, request_id: 'friction-1' });
    expect(again.status).to.equal(200);
    expect(again.body.task_id).to.equal(first.body.task_id);

    const other = await start({ prompt: script('sleep 60'), request_id: 'friction-1' });
    expect(other.status).to.equal(409);
    expect(other.body.error).to.include({ type: 'conflict', code: 'idempotency_conflict' });
    expect(other.body.error.message).to.include('prompt');
    const metadata = await start({ prompt, request_id: 'friction-1', metadata: { order: '7' } });
    expect(metadata.status).to.equal(409);
    expect(metadata.body.error.message).to.include('metadata');
  });

  it('takes an Idempotency-Key header as the request_id', async () => {
    const byBody = await start({ prompt: script('sleep 3600'), request_id: 'friction-1' });
    const byHeader = await start({ prompt: script('sleep 3600') }, { 'idempotency-key': 'friction-1' });
    expect(byHeader.status).to.equal(200);
    expect(byHeader.body.task_id).to.equal(byBody.body.task_id);
    expect(byHeader.body.request_id).to.equal('friction-1');
    const conflicting = await start({ prompt: script('sleep 3600'), request_id: 'friction-1' }, { 'idempotency-key': 'friction-2' });
    expect(conflicting.status).to.equal(400);
    expect(conflicting.body.error.message).to.include('Idempotency-Key');
  });
});
