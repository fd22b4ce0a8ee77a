import { expect } from 'chai';
import { ManualClock } from '../../shared/clock';
import { generateSessionToken } from '../../shared/api-keys/key-format';
import type { DesktopClient, DesktopClientOptions } from '../../shared/simulator/desktop-client';
import { SessionTokenAuth } from '../../shared/sessions/session-token-auth';
import { startTestService, waitFor, type ApiResponse, type TestService } from '../support/service';
import { connectDesktop, script } from '../support/tasks';

/** The older session-token API end to end: the reference desktop client and the scripted model. */
describe('older session-token API (reference desktop client, scripted model)', function () {
  this.timeout(60_000);
  let service: TestService;
  let key: string;
  let keyId: string;
  const clients: DesktopClient[] = [];

  /** A session with its one-time token, and the reference desktop client connected to it. */
  async function desktop(options: Partial<DesktopClientOptions> = {}): Promise<{ code: string; token: string; client: DesktopClient }> {
    const { code, token, client } = await connectDesktop(service, key, options);
    clients.push(client);
    return { code, token, client };
  }

  const post = (bearer: string | null, path: string, body?: unknown) => service.api(bearer, 'POST', path, body);

  /** Long-polls `/wait` until `until(task)` holds or the task ends; returns the last task and every event seen. */
  async function waitUntil(
    bearer: string,
    id: string,
    until: (task: any) => boolean = (task) => task.done,
    extra: Record<string, unknown> = {},
  ): Promise<{ task: any; events: any[] }> {
    const events: any[] = [];
    let after = 0;
    const deadline = Date.now() + 15_000;
    for (;;) {
      const response = await post(bearer, '/wait', { id, after, timeout_ms: 2000, ...extra });
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      events.push(...response.body.events);
      after = response.body.cursor;
      if (until(response.body) || response.body.done) return { task: response.body, events };
      if (Date.now() > deadline) throw new Error(`task ${id} did not get there: ${JSON.stringify(response.body)}`);
    }
  }

  const audit = async (objectId: string) => (await service.api(key, 'GET', `/v1/audit_log?object_id=${objectId}`)).body.data as Array<{ action: string; actor: any }>;

  /** The older error shape: a string message, with `code` and other fields beside it. */
  function expectLegacyError(response: ApiResponse, status: number, message?: string | RegExp): void {
    expect(response.status, JSON.stringify(response.body)).to.equal(status);
    expect(response.body.error).to.be.a('string');
    if (typeof message === 'string') expect(response.body.error).to.equal(message);
    else if (message) expect(response.body.error).to.match(message);
  }

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' });
    ({ key, keyId } = await service.newOrg());
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });
  after(async () => service.stop());

  describe('POST /start and POST /wait', () => {
    it('starts a task with the session token and waits until it is done, with the follow endpoint\'s events', async () => {
      const { token } = await desktop();
      const started = await post(token, '/start', { prompt: script('open Notes', 'type "hi"', 'done "Wrote hi"') });
      expect(started.status, JSON.stringify(started.body)).to.equal(200);
      expect(started.body).to.deep.equal({ id: started.body.id, request_id: null, status: 'queued', done: false, cursor: 0, events: [], update: 'Queued' });
      expect(started.body.id).to.match(/^task_/);

      const { task, events } = await waitUntil(token, started.body.id);
      expect(task).to.include({ id: started.body.id, status: 'completed', done: true, result: 'Wrote hi', update: 'Completed: Wrote hi' });
      expect(task).not.to.have.any.keys('question', 'approval', 'error');
      expect(events[0]).to.include({ cursor: 1, type: 'started' });
      expect(events.map((event) => event.cursor)).to.deep.equal(events.map((_, i) => i + 1));
      expect(task.cursor).to.equal(events.at(-1).cursor);
      const followed = await service.api(key, 'GET', `/v1/tasks/${task.id}/events?after=0`);
      expect(events).to.deep.equal(followed.body.data);

      const entries = await audit(task.id);
      expect(entries.map((entry) => [entry.action, entry.actor])).to.deep.equal([['task.created', null]]);
    });

    it('does the same with an org API key plus code, audited with the key as actor', async () => {
      const { code } = await desktop();
      const started = await post(key, '/start', { prompt: script('open Notes', 'done "Via key"'), code: code.toLowerCase() });
      expect(started.status, JSON.stringify(started.body)).to.equal(200);
      const { task } = await waitUntil(key, started.body.id, undefined, { code });
      expect(task).to.include({ status: 'completed', result: 'Via key' });
      const [created] = await audit(task.id);
      expect(created!.actor).to.deep.include({ type: 'api_key', key_id: keyId });
    });

    it('answers a question through /wait, then refuses a second answer with 409 already_answered in the older shape', async () => {
      const { token } = await desktop();
      const { body } = await post(token, '/start', { prompt: script('ask "Which size?" "S" "M"', 'done "Size {answer}"') });
      const waiting = await waitUntil(token, body.id, (task) => task.question !== undefined);
      expect(waiting.task.question).to.deep.include({ question: 'Which size?', options: ['S', 'M'], customer_can_answer: true });
      expect(waiting.task.question).not.to.have.property('type');
      expect(waiting.task.update).to.equal('Waiting for an answer: Which size?');

      const answered = await post(token, '/wait', { id: body.id, after: waiting.task.cursor, question_id: waiting.task.question.question_id, answer: 'M', timeout_ms: 5000 });
      expect(answered.status, JSON.stringify(answered.body)).to.equal(200);
      expect(answered.body).not.to.have.property('question');
      expect(answered.body.events[0]).to.include({ cursor: waiting.task.cursor + 1, type: 'answer', message: 'M' });
      expect(answered.body.events[0].data).to.include({ answered_by: 'operator' });

      const late = await post(token, '/wait', { id: body.id, after: 0, question_id: waiting.task.question.question_id, answer: 'S', timeout_ms: 0 });
      expectLegacyError(late, 409);
      expect(late.body).to.deep.equal({ error: late.body.error, code: 'already_answered', answered_by: 'operator' });

      const { task } = await waitUntil(token, body.id);
      expect(task.result).to.equal('Size M');
      expect((await audit(body.id)).map((entry) => [entry.action, entry.actor])).to.deep.include(['task.question_answered', null]);
    });

    it('tells a late team answer that the person at the computer answered first', async () => {
      const { token } = await desktop({ answer: 'L' });
      const { body } = await post(token, '/start', { prompt: script('ask "Which size?" "S" "L"', 'done "Size {answer}"') });
      const { task, events } = await waitUntil(token, body.id);
      expect(task.result).to.equal('Size L');
      const question = events.find((event) => event.type === 'question');
      const late = await post(token, '/wait', { id: body.id, after: task.cursor, question_id: question.data.question_id, answer: 'S', timeout_ms: 0 });
      expectLegacyError(late, 409);
      expect(late.body).to.include({ code: 'already_answered', answered_by: 'customer' });
    });

    it('decides an approval through /wait', async () => {
      const { token } = await desktop();
      const { body } = await post(token, '/start', { prompt: script('request_approval "Pay the invoice" purchase', 'done "paid"') });
      const waiting = await waitUntil(token, body.id, (task) => task.approval !== undefined);
      expect(waiting.task.approval).to.include({ what: 'Pay the invoice', kind: 'agent_request', category: 'purchase', risk: 'normal', customer_can_approve: true });
      expect(waiting.task.update).to.equal('Waiting for approval: Pay the invoice');

      const approvalId = waiting.task.approval.approval_id;
      const decided = await post(token, '/wait', { id: body.id, after: waiting.task.cursor, approval_id: approvalId, decision: 'approve', note: 'fine', timeout_ms: 5000 });
      expect(decided.status, JSON.stringify(decided.body)).to.equal(200);
      expect(decided.body).not.to.have.property('approval');
      expect(decided.body.events[0]).to.include({ type: 'decision', message: 'Approved: Pay the invoice' });
      const { task, events } = await waitUntil(token, body.id);
      expect(task).to.include({ status: 'completed', result: 'paid' });
      expect(events.find((event) => event.type === 'decision').data).to.include({ decision: 'approve', note: 'fine', answered_by: 'operator' });

      const late = await post(token, '/wait', { id: body.id, after: task.cursor, approval_id: approvalId, decision: 'deny', timeout_ms: 0 });
      expectLegacyError(late, 409);
      expect(late.body).to.include({ code: 'already_answered', answered_by: 'operator' });
    });

    it('keeps a poll without timeout_ms open (25 s default), and wakes it within moments of a new event', async () => {
      const { token } = await desktop();
      const { body } = await post(token, '/start', { prompt: script('ask "Go?"', 'done "went"') });
      const waiting = await waitUntil(token, body.id, (task) => task.question !== undefined);
      const cursor = waiting.task.cursor;

      const before = Date.now();
      const empty = await post(token, '/wait', { id: body.id, after: cursor, timeout_ms: 300 });
      expect(Date.now() - before).to.be.within(280, 2000);
      expect(empty.body).to.include({ cursor, update: 'Waiting for an answer: Go?' });
      expect(empty.body.events).to.deep.equal([]);

      // Without timeout_ms the poll is still open after a 1.5 s poll of its own has come back.
      let settled = false;
      const open = post(token, '/wait', { id: body.id, after: cursor }).finally(() => (settled = true));
      await post(token, '/wait', { id: body.id, after: cursor, timeout_ms: 1500 });
      expect(settled).to.equal(false);
      const answeredAt = Date.now();
      await service.api(key, 'POST', `/v1/tasks/${body.id}/respond`, { question_id: waiting.task.question.question_id, answer: 'yes' });
      const woke = await open;
      expect(Date.now() - answeredAt).to.be.lessThan(1500);
      expect(woke.body.events[0]).to.include({ cursor: cursor + 1, type: 'answer', message: 'yes' });
      expect(woke.body).not.to.have.property('question');
    });

    it('returns the same task for the same request_id; one used on another session is 409', async () => {
      const { token, code } = await desktop();
      const prompt = script('sleep 1', 'done "once"');
      const responses = await Promise.all(Array.from({ length: 5 }, () => post(token, '/start', { prompt, request_id: 'legacy-req-1' })));
      expect(responses.map((response) => response.status)).to.deep.equal([200, 200, 200, 200, 200]);
      expect(new Set(responses.map((response) => response.body.id)).size).to.equal(1);
      expect(responses[0]!.body.request_id).to.equal('legacy-req-1');
      expect(await service.running.container.db('tasks').where({ request_id: 'legacy-req-1' })).to.have.length(1);
      const viaKey = await post(key, '/start', { prompt, request_id: 'legacy-req-1', code });
      expect(viaKey.body.id).to.equal(responses[0]!.body.id);

      const other = await desktop();
      const elsewhere = await post(other.token, '/start', { prompt, request_id: 'legacy-req-1' });
      expectLegacyError(elsewhere, 409);
      expect(elsewhere.body.code).to.equal('request_id_in_use');
      await waitUntil(token, responses[0]!.body.id);
    });

    it('answers 409 in the older shape while a task runs, and when no computer is connected', async () => {
      const { token } = await desktop();
      const first = await post(token, '/start', { prompt: script('sleep 1', 'repeat') });
      const second = await post(token, '/start', { prompt: 'done "x"' });
      expectLegacyError(second, 409);
      expect(second.body).to.include({ code: 'task_running', active_task_id: first.body.id });
      await post(token, '/stop', { id: first.body.id });

      const lonely = (await service.api(key, 'POST', '/v1/sessions', {})).body;
      expectLegacyError(await post(lonely.token, '/start', { prompt: 'done "x"' }), 409, /No computer is connected/);
    });
  });

  describe('POST /stop', () => {
    it('stops a running task, audited with a null actor for a session token and the key for an API key', async () => {
      const { token, code } = await desktop();
      const { body } = await post(token, '/start', { prompt: script('sleep 1', 'repeat') });
      await waitUntil(token, body.id, (task) => task.status === 'running');
      const stopped = await post(token, '/stop', { id: body.id });
      expect(stopped.status).to.equal(200);
      expect(stopped.body).to.include({ id: body.id, status: 'stopped', done: true, update: 'Stopped by the team' });
      expect((await audit(body.id)).map((entry) => [entry.action, entry.actor])).to.deep.equal([
        ['task.stopped', null],
        ['task.created', null],
      ]);
      expect((await post(token, '/stop', { id: body.id })).body.status).to.equal('stopped');

      const next = await post(token, '/start', { prompt: script('sleep 1', 'repeat') });
      await waitUntil(token, next.body.id, (task) => task.status === 'running');
      expect((await post(key, '/stop', { id: next.body.id, code })).body.status).to.equal('stopped');
      const [stoppedEntry] = await audit(next.body.id);
      expect(stoppedEntry).to.deep.include({ action: 'task.stopped' });
      expect(stoppedEntry!.actor).to.deep.include({ type: 'api_key', key_id: keyId });
    });
  });

  describe('POST /tasks and POST /trace', () => {
    it('lists this session\'s tasks newest first, without a body', async () => {
      const { token, code } = await desktop();
      const first = await post(token, '/start', { prompt: 'done "one"' });
      await waitUntil(token, first.body.id);
      const second = await post(token, '/start', { prompt: 'done "two"' });
      await waitUntil(token, second.body.id);
      const other = await desktop();
      const elsewhere = await post(other.token, '/start', { prompt: 'done "elsewhere"' });

      const listed = await post(token, '/tasks');
      expect(listed.status, JSON.stringify(listed.body)).to.equal(200);
      expect(listed.body.has_more).to.equal(false);
      expect(listed.body.tasks.map((task: { id: string }) => task.id)).to.deep.equal([second.body.id, first.body.id]);
      expect(listed.body.tasks[0]).to.include({ status: 'completed', done: true, result: 'two', update: 'Completed: two' });
      expect(listed.body.tasks[0].events).to.deep.equal([]);
      expect((await post(key, '/tasks', { code })).body).to.deep.equal(listed.body);
      await waitUntil(other.token, elsewhere.body.id);
    });

    it('shows a trace safe to share, and 404 for a task of another session', async () => {
      const { token } = await desktop();
      const { body } = await post(token, '/start', { prompt: 'done "traced"' });
      await waitUntil(token, body.id);
      const traced = await post(token, '/trace', { id: body.id });
      expect(traced.status, JSON.stringify(traced.body)).to.equal(200);
      expect(traced.body).to.include({ id: body.id, status: 'completed', result: 'traced' });
      expect(traced.body.trace).to.include({ model: 'gpt-5.4', backend: 'scripted' });
      expect(JSON.stringify(traced.body)).not.to.contain(token);

      const other = await desktop();
      for (const [path, extra] of [['/trace', {}], ['/stop', {}], ['/wait', { after: 0, timeout_ms: 0 }]] as const) {
        expectLegacyError(await post(other.token, path, { id: body.id, ...extra }), 404, `No task ${body.id}`);
      }
    });
  });

  describe('GET /health', () => {
    it('answers the service status, and with a token whether the computer is connected', async () => {
      expect((await service.api(null, 'GET', '/health')).body).to.deep.equal({ status: 'ok' });
      const { token, code, client } = await desktop();
      expect((await service.api(token, 'GET', '/health')).body).to.deep.equal({ status: 'ok', code, computer_connected: true });
      expect((await service.api(key, 'GET', `/health?code=${code}`)).body).to.deep.equal({ status: 'ok', code, computer_connected: true });
      await client.close();
      await waitFor(async () => (await service.api(token, 'GET', '/health')).body.computer_connected === false, 10_000, 'the computer to go offline');
      expectLegacyError(await service.api(generateSessionToken(), 'GET', '/health'), 401, 'Invalid session token');
    });
  });

  describe('authentication', () => {
    it('answers 401 in the older shape for no token, a wrong token and a malformed one', async () => {
      const { token } = await desktop();
      const { body } = await post(token, '/start', { prompt: 'done "x"' });
      const requests: Array<[string, Record<string, unknown>]> = [
        ['/start', { prompt: 'done "x"' }],
        ['/wait', { id: body.id, after: 0, timeout_ms: 0 }],
        ['/stop', { id: body.id }],
        ['/tasks', {}],
        ['/trace', { id: body.id }],
      ];
      for (const [path, requestBody] of requests) {
        expectLegacyError(await post(null, path, requestBody), 401, /^Missing session token/);
        expectLegacyError(await post(generateSessionToken(), path, requestBody), 401, 'Invalid session token');
        expectLegacyError(await post('dh_sess_short', path, requestBody), 401, 'Invalid session token');
        expectLegacyError(await post('dh_test_notakey', path, requestBody), 401, 'Invalid API key');
      }
      await waitUntil(token, body.id);
    });

    it('answers 401 for an expired session\'s token, whether the team expired it or it ran out unused', async () => {
      const expired = (await service.api(key, 'POST', '/v1/sessions', {})).body;
      expect((await post(expired.token, '/tasks')).status).to.equal(200);
      await service.api(key, 'POST', `/v1/sessions/${expired.code}/expire`);
      expectLegacyError(await post(expired.token, '/tasks'), 401, 'This session has expired: its code and token no longer work');
      expectLegacyError(await service.api(expired.token, 'GET', '/health'), 401, /expired/);

      // An unused code stops working 72 hours on, even before the expiry sweep has run.
      const unused = (await service.api(key, 'POST', '/v1/sessions', {})).body;
      const clock = new ManualClock();
      const auth = new SessionTokenAuth({ db: service.running.container.db, clock, apiKeys: service.running.container.apiKeys });
      expect((await auth.authenticate(`Bearer ${unused.token}`, undefined)).session.code).to.equal(unused.code);
      clock.advance(72 * 3600 * 1000 + 1000);
      const refused = await auth.authenticate(`Bearer ${unused.token}`, undefined).then(
        () => null,
        (error: { status?: number }) => error,
      );
      expect(refused?.status).to.equal(401);
    });

    it('refuses a session token sent to /v1 with 401 in the /v1 shape', async () => {
      const { token } = await desktop();
      const response = await service.api(token, 'GET', '/v1/tasks');
      expect(response.status).to.equal(401);
      expect(response.body.error).to.include({ type: 'authentication' });
      expect(response.body.error.message).to.match(/session-token API/);
    });

    it('answers 404 for another org\'s code with an API key, 400 for an API key without code or a token with another code', async () => {
      const { code, token } = await desktop();
      const other = await service.newOrg('Other org');
      expectLegacyError(await post(other.key, '/tasks', { code }), 404, `No session ${code}`);
      expectLegacyError(await post(other.key, '/start', { prompt: 'done "x"', code }), 404, `No session ${code}`);
      expectLegacyError(await service.api(other.key, 'GET', `/health?code=${code}`), 404);
      expectLegacyError(await post(key, '/tasks'), 400, /^code is required with an org API key/);
      const second = (await service.api(key, 'POST', '/v1/sessions', {})).body;
      expectLegacyError(await post(token, '/tasks', { code: second.code }), 400, /is not this session token's session/);
      expect((await post(token, '/tasks', { code })).status).to.equal(200);
    });
  });

  describe('validation', () => {
    it('answers 400 in the older shape for bad bodies', async () => {
      const { token } = await desktop();
      expect((await post(token, '/start', { prompt: '' })).body).to.deep.equal({ error: 'prompt must not be empty' });
      expectLegacyError(await post(token, '/start', {}), 400, 'prompt is required');
      expectLegacyError(await post(token, '/start', { prompt: 'x', agent_id: 'other' }), 400, 'body has an unknown field "agent_id"');
      const { body } = await post(token, '/start', { prompt: script('ask "Q?"', 'done "x"') });
      expect((await post(token, '/wait', { id: body.id, after: 0, timeout_ms: 55001 })).body).to.deep.equal({ error: 'timeout_ms must be at most 55000' });
      expectLegacyError(await post(token, '/wait', { id: body.id }), 400, 'after is required');
      expectLegacyError(await post(token, '/wait', { id: body.id, after: 0, answer: 'no id' }), 400, 'Send either question_id with answer, or approval_id with decision (and an optional note)');
      expectLegacyError(await post(token, '/wait', { id: 'nope', after: 0 }), 400);
      expectLegacyError(await post(token, '/wait', '{"id":'), 400, 'Request body is not valid JSON');
      expect((await service.api(token, 'GET', '/start')).body).to.deep.equal({ error: 'No route GET /start' });
      await post(token, '/stop', { id: body.id });
    });

    it('documents the six endpoints in /openapi.json with the sessionToken scheme and the older error shape', async () => {
      const document = (await service.api(null, 'GET', '/openapi.json')).body;
      expect(document.components.securitySchemes.sessionToken).to.include({ type: 'http', scheme: 'bearer' });
      expect(document.components.schemas.LegacyError.properties.error.type).to.equal('string');
      for (const [path, method] of [['/start', 'post'], ['/wait', 'post'], ['/stop', 'post'], ['/tasks', 'post'], ['/trace', 'post'], ['/health', 'get']] as const) {
        const operation = document.paths[path][method];
        expect(operation.responses['401'].content['application/json'].schema.$ref, path).to.equal('#/components/schemas/LegacyError');
        expect(operation.security, path).to.deep.include({ sessionToken: [] });
      }
    });
  });
});

describe('older session-token API: rate limit', () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({ DESKHAND_RATE_LIMIT_PER_HOUR: '3', DESKHAND_REDIS_PREFIX: `rl-legacy-${Date.now()}` }, ['web']);
  });
  after(async () => service.stop());

  it('counts legacy requests against the same per-address budget as /v1, refusing in the older shape', async () => {
    const { key } = await service.newOrg();
    expect((await service.api(key, 'GET', '/v1/audit_log')).status).to.equal(200);
    expect((await service.api(null, 'GET', '/health')).status).to.equal(200);
    expect((await service.api(key, 'GET', '/v1/audit_log')).status).to.equal(200);
    const refused = await service.api(null, 'POST', '/tasks');
    expect(refused.status).to.equal(429);
    expect(refused.body.error).to.be.a('string').and.match(/Too many requests/);
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 3600);
    expect((await service.api(key, 'GET', '/v1/audit_log')).body.error.type).to.equal('rate_limit');
  });
});
