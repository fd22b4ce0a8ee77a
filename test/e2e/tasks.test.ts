import { expect } from 'chai';
import { loadImage } from '@napi-rs/canvas';
import { ManualClock } from '../../shared/clock';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { startTestService, waitFor, type TestService } from '../support/service';
import { connectDesktop, follow, script } from '../support/tasks';
import { startReceiver } from '../support/receiver';
import { verifySignature } from '../../shared/http';

describe('tasks end to end (reference desktop client, scripted model)', function () {
  this.timeout(60_000);
  let service: TestService;
  let key: string;
  const clients: DesktopClient[] = [];
  const desktop = async (...args: Parameters<typeof connectDesktop> extends [unknown, unknown, ...infer Rest] ? Rest : never) => {
    const made = await connectDesktop(service, key, ...args);
    clients.push(made.client);
    return made;
  };
  const start = (code: string, body: Record<string, unknown>) => service.api(key, 'POST', `/v1/sessions/${code}/tasks`, body);

  before(async () => {
    // A short reconnect grace: a computer that goes away fails its task soon (test/e2e/reconnect.test.ts covers the grace).
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_ALLOW_PRIVATE_URLS: '1', DESKHAND_RECONNECT_GRACE_MS: '500' });
    ({ key } = await service.newOrg());
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });
  after(async () => service.stop());

  it('runs a script to completion with its result, events from started, frames and billing', async () => {
    const { code } = await desktop();
    const started = await start(code, { prompt: script('open Browser', 'go shop.example.com', 'done "Looked at the shop"'), metadata: { order: '42' } });
    expect(started.status).to.equal(200);
    expect(started.body).to.include({ object: 'task', session_id: code, agent_id: 'default', status: 'queued', done: false, cursor: 0 });
    const { task, events } = await follow(service, key, started.body.task_id);
    expect(task).to.include({ status: 'completed', done: true, result: 'Looked at the shop', error: null, pending: null });
    expect(task.metadata).to.deep.equal({ order: '42' });
    expect(events[0]).to.include({ cursor: 1, type: 'started' });
    expect(events.map((e) => e.cursor)).to.deep.equal(events.map((_, i) => i + 1));
    expect(events.at(-1)).to.include({ type: 'completed', message: 'Looked at the shop' });
    expect(events.filter((e) => e.type === 'step').length).to.be.greaterThanOrEqual(2);
    expect(task.recording.frames).to.be.greaterThan(3);
    // Billing's promise (docs/billing.md): the running time in whole minutes, each begun minute
    // counted, and exactly the minutes charged to the org's ledger for the task.
    const { db } = service.running.container;
    const { active_ms: activeMs } = await db('tasks').where({ id: task.task_id }).first('active_ms');
    expect(activeMs, 'the task ran').to.be.greaterThan(0);
    expect(task.billed_minutes).to.equal(Math.ceil(activeMs / 60_000)).and.to.be.at.least(1);
    const ledger = await service.api(key, 'GET', '/v1/billing/ledger?kind=minutes&limit=100');
    const charged = ledger.body.data.filter((entry: { task_id: string | null }) => entry.task_id === task.task_id).map((entry: { minute: number }) => entry.minute);
    expect(charged.sort()).to.deep.equal(Array.from({ length: task.billed_minutes }, (_, i) => i + 1));
    expect(task.replay_url).to.equal(`${service.running.container.config.baseUrl}/console/tasks/${task.task_id}`);
    const session = (await service.api(key, 'GET', `/v1/sessions/${code}`)).body;
    expect(session).to.include({ task_count: 1, latest_task_id: task.task_id });
  });

  it('keeps every screenshot as a PNG frame of the reported size, 404 past the end', async () => {
    const { code } = await desktop({ width: 1280, height: 800 });
    const { body } = await start(code, { prompt: script('open Notes', 'type "hello"', 'done "ok"') });
    const { task } = await follow(service, key, body.task_id);
    for (let seq = 1; seq <= task.recording.frames; seq++) {
      const response = await fetch(`${service.baseUrl}/v1/tasks/${task.task_id}/recording/${seq}`, { headers: { authorization: `Bearer ${key}` } });
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.equal('image/png');
      const image = await loadImage(Buffer.from(await response.arrayBuffer()));
      expect([image.width, image.height]).to.deep.equal([1280, 800]);
    }
    const past = await service.api(key, 'GET', `/v1/tasks/${task.task_id}/recording/${task.recording.frames + 1}`);
    expect(past.status).to.equal(404);
    expect((await service.api(key, 'GET', `/v1/tasks/${task.task_id}/recording/0`)).status).to.equal(400);
  });

  describe('questions', () => {
    it('a question answered by the team', async () => {
      const { code } = await desktop();
      const { body } = await start(code, { prompt: script('ask "Which size?" "S" "M" "L"', 'done "Noted size {answer}"') });
      const waiting = await follow(service, key, body.task_id, (task) => task.pending !== null);
      expect(waiting.task.pending).to.deep.include({ type: 'question', question: 'Which size?', options: ['S', 'M', 'L'], customer_can_answer: true });
      const answered = await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { question_id: waiting.task.pending.question_id, answer: 'M' });
      expect(answered.status).to.equal(200);
      expect(answered.body.pending).to.equal(null);
      const { task, events } = await follow(service, key, body.task_id);
      expect(task.result).to.equal('Noted size M');
      expect(events.find((e) => e.type === 'answer').data).to.include({ answered_by: 'operator' });
      const webhook = await service.running.container.db('org_events').where({ task_id: body.task_id, type: 'task.question_answered' }).first();
      expect(webhook.data.answer).to.deep.equal({ question_id: waiting.task.pending.question_id, answer: 'M', answered_by: 'operator' });
      expect(webhook.data.task.pending).to.equal(null);
      const late = await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { question_id: waiting.task.pending.question_id, answer: 'L' });
      expect(late.status).to.equal(409);
      expect(late.body.error).to.include({ code: 'already_answered', answered_by: 'operator' });
    });

    it('a question answered by the person at the computer', async () => {
      const { code, lines } = await desktop({ answer: 'L' });
      const { body } = await start(code, { prompt: script('ask "Which size?" "S" "L"', 'done "Size {answer}"') });
      const { task, events } = await follow(service, key, body.task_id);
      expect(task.result).to.equal('Size L');
      expect(events.find((e) => e.type === 'answer').data).to.include({ answered_by: 'customer' });
      expect(JSON.stringify(lines)).to.contain('Which size?');
    });

    it('never shows the person a question when customer_answers is off', async () => {
      await service.api(key, 'POST', '/v1/agents', { agent_id: 'team-only', customer_answers: false });
      const { code, lines, client } = await desktop({ answer: 'from the person' }, { agent_id: 'team-only' });
      const { body } = await start(code, { prompt: script('ask "Secret plan?"', 'done "{answer}"') });
      const waiting = await follow(service, key, body.task_id, (task) => task.pending !== null);
      expect(waiting.task.pending.customer_can_answer).to.equal(false);
      // An app that answers anyway is refused with the code the app shows.
      const refused = await client.person({ kind: 'answer', task_id: body.task_id, question_id: waiting.task.pending.question_id, answer: 'sneaky' });
      expect(refused).to.include({ ok: false, code: 'customer_answers_off' });
      await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { question_id: waiting.task.pending.question_id, answer: 'team answer' });
      const { task } = await follow(service, key, body.task_id);
      expect(task.result).to.equal('team answer');
      expect(JSON.stringify(lines)).not.to.contain('Secret plan?');
    });

    it('lets exactly one answer win when the team and the person answer at once, every time', async () => {
      const trials = 12;
      let teamWins = 0;
      let personWins = 0;
      for (let trial = 0; trial < trials; trial++) {
        const { code, client } = await desktop({ answer: 'person', delayMs: trial % 3 });
        const { body } = await start(code, { prompt: script('ask "Go?"', 'done "{answer}"') });
        const waiting = await follow(service, key, body.task_id, (task) => task.pending !== null);
        const team = await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { question_id: waiting.task.pending.question_id, answer: 'team' });
        const { task, events } = await follow(service, key, body.task_id);
        const answers = events.filter((e) => e.type === 'answer');
        expect(answers, `trial ${trial}`).to.have.length(1);
        if (team.status === 200) {
          teamWins++;
          expect(task.result).to.equal('team');
        } else {
          personWins++;
          expect(team.body.error).to.include({ code: 'already_answered', answered_by: 'customer' });
          expect(task.result).to.equal('person');
        }
        await client.close();
      }
      expect(teamWins + personWins).to.equal(trials);
    });
  });

  describe('approvals', () => {
    it('an approval granted lets the agent go on; a denial is told to the agent', async () => {
      const { code } = await desktop();
      const { body } = await start(code, { prompt: script('request_approval "Pay the invoice" purchase', 'done "went on"') });
      const waiting = await follow(service, key, body.task_id, (task) => task.pending !== null);
      expect(waiting.task.pending).to.include({ type: 'approval', kind: 'agent_request', category: 'purchase', risk: 'normal', customer_can_approve: true });
      const decided = await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { approval_id: waiting.task.pending.approval_id, decision: 'approve', note: 'fine' });
      expect(decided.status).to.equal(200);
      const { task, events } = await follow(service, key, body.task_id);
      expect(task.status).to.equal('completed');
      expect(events.find((e) => e.type === 'decision').data).to.include({ decision: 'approve', note: 'fine', answered_by: 'operator' });
      const webhook = await service.running.container.db('org_events').where({ task_id: body.task_id, type: 'task.approval_decided' }).first();
      expect(webhook.data.decision).to.deep.equal({ approval_id: waiting.task.pending.approval_id, decision: 'approve', note: 'fine', answered_by: 'operator' });
    });

    it('a purchase click waits for approval and does not happen when denied', async () => {
      const { code, client } = await desktop();
      const { body } = await start(code, { prompt: script('open Browser', 'go shop.example.com', 'click "Buy now"', 'done "tried"') });
      const waiting = await follow(service, key, body.task_id, (task) => task.pending !== null);
      expect(waiting.task.pending).to.include({ kind: 'action', category: 'purchase' });
      await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { approval_id: waiting.task.pending.approval_id, decision: 'deny' });
      const { task, events } = await follow(service, key, body.task_id);
      expect(task.status).to.equal('completed');
      expect(events.find((e) => e.type === 'decision').data.decision).to.equal('deny');
      expect(JSON.stringify(client.computer.observe().observation.text ?? '')).not.to.match(/order placed/i);
    });

    it('the person approves on screen when customer_approvals is on', async () => {
      const { code } = await desktop({ approve: true });
      const { body } = await start(code, { prompt: script('request_approval "Send the report" send', 'done "sent"') });
      const { task, events } = await follow(service, key, body.task_id);
      expect(task.result).to.equal('sent');
      expect(events.find((e) => e.type === 'decision').data).to.include({ decision: 'approve', answered_by: 'customer' });
    });
  });

  describe('HTTP tools', () => {
    it('calls the org\'s function, signed with the tool secret, and gives the reply to the model', async () => {
      const receiver = await startReceiver();
      try {
        receiver.reply({ status: 200, body: '{"stock":3}', headers: { 'content-type': 'application/json' } });
        await service.api(key, 'POST', '/v1/agents', { agent_id: 'with-tool', tools: { http: [{ name: 'stock', description: 'Stock of an item', url: receiver.url('/stock') }] } });
        const { code } = await desktop({}, { agent_id: 'with-tool' });
        const { body } = await start(code, { prompt: script('tool stock {"sku": "A1"}', 'done "checked"') });
        const { task, events } = await follow(service, key, body.task_id);
        expect(task.status).to.equal('completed');
        expect(events.map((e) => e.type)).to.include.members(['tool_call', 'tool_result']);
        expect(events.find((e) => e.type === 'tool_result').data).to.include({ ok: true, status: 200 });
        const [call] = receiver.requests;
        const sent = JSON.parse(call!.body);
        expect(sent).to.deep.include({ tool: 'stock', arguments: { sku: 'A1' } });
        expect(sent.task).to.deep.equal({ task_id: body.task_id, session_id: code, agent_id: 'with-tool', agent_version: 1 });
        const secret = (await service.api(key, 'GET', '/v1/tool_secret')).body.secret;
        expect(verifySignature(call!.rawBody, String(call!.headers['service-signature']), secret)).to.equal(true);
      } finally {
        await receiver.close();
      }
    });
  });

  describe('stopping', () => {
    it('the team stops a running task', async () => {
      const { code } = await desktop();
      const { body } = await start(code, { prompt: script('sleep 1', 'repeat') });
      await follow(service, key, body.task_id, (task) => task.status === 'running');
      const stopped = await service.api(key, 'POST', `/v1/tasks/${body.task_id}/stop`);
      expect(stopped.body).to.include({ status: 'stopped', done: true });
      expect(stopped.body.billed_minutes).to.be.a('number');
      const audit = (await service.api(key, 'GET', `/v1/audit_log?object_id=${body.task_id}`)).body.data.map((e: { action: string }) => e.action);
      expect(audit).to.deep.equal(['task.stopped', 'task.created']);
      const again = await service.api(key, 'POST', `/v1/tasks/${body.task_id}/stop`);
      expect(again.body.status).to.equal('stopped');
    });

    it('the person presses Stop', async () => {
      const { code } = await desktop({ stopAfter: 2 });
      const { body } = await start(code, { prompt: script('open Notes', 'type "a"', 'type "b"', 'type "c"', 'repeat') });
      const { task, events } = await follow(service, key, body.task_id);
      expect(task.status).to.equal('stopped');
      expect(events.at(-1).message).to.equal('Stopped by the person at the computer');
    });
  });

  describe('limits and failures', () => {
    it('fails a task that reaches max_steps', async () => {
      await service.api(key, 'POST', '/v1/agents', { agent_id: 'short', guardrails: { max_steps: 3 } });
      const { code } = await desktop({}, { agent_id: 'short' });
      const { body } = await start(code, { prompt: script('open Notes', 'repeat') });
      const { task } = await follow(service, key, body.task_id);
      expect(task).to.include({ status: 'failed', error: 'Reached the limit of 3 steps without finishing' });
    });

    it('fails a task whose computer disconnects mid-task', async () => {
      const { code, client } = await desktop();
      const { body } = await start(code, { prompt: script('sleep 1', 'repeat') });
      await follow(service, key, body.task_id, (task) => task.status === 'running');
      await client.close();
      const { task } = await follow(service, key, body.task_id);
      expect(task).to.include({ status: 'failed', error: 'The computer disconnected and did not come back within 0.5 seconds' });
    });

    it('stops the running task when the team disconnects the session', async () => {
      const { code } = await desktop();
      const { body } = await start(code, { prompt: script('sleep 1', 'repeat') });
      await follow(service, key, body.task_id, (task) => task.status === 'running');
      await service.api(key, 'POST', `/v1/sessions/${code}/disconnect`);
      const { task } = await follow(service, key, body.task_id);
      expect(task).to.include({ status: 'stopped', error: null });
    });
  });

  describe('starting: errors and idempotency', () => {
    it('returns the same task for the same request_id, also under concurrent retries', async () => {
      const { code } = await desktop();
      const responses = await Promise.all(Array.from({ length: 8 }, () => start(code, { prompt: script('sleep 1', 'done "x"'), request_id: 'req-same' })));
      expect(responses.map((r) => r.status)).to.deep.equal(Array(8).fill(200));
      expect(new Set(responses.map((r) => r.body.task_id)).size).to.equal(1);
      const rows = await service.running.container.db('tasks').where({ request_id: 'req-same' });
      expect(rows).to.have.length(1);
      await service.api(key, 'POST', `/v1/tasks/${responses[0]!.body.task_id}/stop`);
    });

    it('answers 409 with active_task_id while a task runs on that computer', async () => {
      const { code } = await desktop();
      const first = await start(code, { prompt: script('sleep 1', 'repeat') });
      const second = await start(code, { prompt: 'done "x"' });
      expect(second.status).to.equal(409);
      expect(second.body.error).to.include({ type: 'conflict', active_task_id: first.body.task_id });
      await service.api(key, 'POST', `/v1/tasks/${first.body.task_id}/stop`);
      expect((await start(code, { prompt: 'done "now"' })).status).to.equal(200);
    });

    it('answers 400 for an empty prompt and bad metadata, 404 for unknown or expired sessions, 409 when nothing is connected', async () => {
      const { code } = await desktop();
      expect((await start(code, { prompt: '' })).body.error).to.deep.equal({ type: 'invalid_request', message: 'prompt must not be empty' });
      expect((await start(code, { prompt: '   ' })).status).to.equal(400);
      expect((await start(code, {})).body.error.message).to.equal('prompt is required');
      expect((await start(code, { prompt: 'x', metadata: { a: 1 } })).body.error.message).to.equal('metadata.a must be of type string');
      expect((await start('ZZZZ-ZZZZ', { prompt: 'x' })).status).to.equal(404);
      const waiting = (await service.api(key, 'POST', '/v1/sessions', {})).body;
      const notConnected = await start(waiting.code, { prompt: 'x' });
      expect(notConnected.status).to.equal(409);
      expect(notConnected.body.error.message).to.match(/No computer is connected/);
      await service.api(key, 'POST', `/v1/sessions/${waiting.code}/expire`);
      expect((await start(waiting.code, { prompt: 'x' })).status).to.equal(404);
      expect((await start(code, { prompt: 'x', agent_id: 'missing-agent' })).status).to.equal(404);
    });

    it('answers 400 to respond without a pair and 404 for another org\'s task', async () => {
      const { code } = await desktop();
      const { body } = await start(code, { prompt: script('ask "Q?"', 'done "x"') });
      const bad = await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { answer: 'x' });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.message).to.equal('Send either question_id with answer, or approval_id with decision (and an optional note)');
      const other = await service.newOrg('Other');
      for (const [method, path] of [
        ['GET', `/v1/tasks/${body.task_id}`],
        ['GET', `/v1/tasks/${body.task_id}/events`],
        ['POST', `/v1/tasks/${body.task_id}/stop`],
        ['GET', `/v1/tasks/${body.task_id}/recording/1`],
      ] as const) {
        expect((await service.api(other.key, method, path)).status, path).to.equal(404);
      }
      await service.api(key, 'POST', `/v1/tasks/${body.task_id}/stop`);
      const closed = await follow(service, key, body.task_id);
      expect(closed.task.status).to.equal('stopped');
    });

    it('answers 409 not_pending to an answer after the task ended', async () => {
      const { code } = await desktop();
      const { body } = await start(code, { prompt: script('ask "Q?"', 'done "x"') });
      const waiting = await follow(service, key, body.task_id, (task) => task.pending !== null);
      await service.api(key, 'POST', `/v1/tasks/${body.task_id}/stop`);
      const late = await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { question_id: waiting.task.pending.question_id, answer: 'x' });
      expect(late.status).to.equal(409);
      expect(late.body.error.code).to.equal('not_pending');
    });
  });

  describe('following', () => {
    it('wakes a long poll within moments of a new event, and times out empty', async () => {
      const { code } = await desktop();
      const { body } = await start(code, { prompt: script('ask "Q?"', 'done "x"') });
      const waiting = await follow(service, key, body.task_id, (task) => task.pending !== null);
      const cursor = waiting.task.cursor;
      const before = Date.now();
      const empty = await service.api(key, 'GET', `/v1/tasks/${body.task_id}/events?after=${cursor}&wait_ms=300`);
      expect(Date.now() - before).to.be.within(280, 2000);
      expect(empty.body.data).to.deep.equal([]);
      expect(empty.body.cursor).to.equal(cursor);
      const { followers } = service.running.container;
      const waitingBefore = followers.waitingFollowers;
      const poll = service.api(key, 'GET', `/v1/tasks/${body.task_id}/events?after=${cursor}&wait_ms=20000`);
      // Answer once the poll is waiting (the service counts it), so that the answer must wake it.
      await waitFor(() => followers.waitingFollowers > waitingBefore, 5_000, 'the long poll to wait');
      const answeredAt = Date.now();
      await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { question_id: waiting.task.pending.question_id, answer: 'go' });
      const woke = await poll;
      expect(Date.now() - answeredAt).to.be.lessThan(1500);
      expect(woke.body.data[0]).to.include({ cursor: cursor + 1, type: 'answer' });
    });

    it('refuses wait_ms over 55000', async () => {
      const { code } = await desktop();
      const { body } = await start(code, { prompt: 'done "x"' });
      const response = await service.api(key, 'GET', `/v1/tasks/${body.task_id}/events?wait_ms=55001`);
      expect(response.status).to.equal(400);
      expect(response.body.error.message).to.equal('query parameter wait_ms must be at most 55000');
    });

    it('lists tasks with filters and shows a trace safe to share', async () => {
      const { code } = await desktop();
      const { body } = await start(code, { prompt: 'done "listed"' });
      await follow(service, key, body.task_id);
      const list = (await service.api(key, 'GET', `/v1/tasks?session_id=${code}&status=completed`)).body;
      expect(list.data.map((t: { task_id: string }) => t.task_id)).to.deep.equal([body.task_id]);
      const traced = (await service.api(key, 'GET', `/v1/tasks/${body.task_id}?include=trace`)).body;
      expect(traced.trace).to.include({ model: 'gpt-5.4', backend: 'scripted' });
      expect(JSON.stringify(traced.trace)).not.to.contain(key);
    });
  });
});

describe('running time limits with a controllable clock', function () {
  this.timeout(30_000);
  it('fails a task whose running minutes reach max_minutes, not counting time waiting for a person', async () => {
    const clock = new ManualClock();
    const service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' }, undefined, { clock });
    const { key } = await service.newOrg();
    const { client, code } = await connectDesktop(service, key);
    try {
      await service.api(key, 'POST', '/v1/agents', { agent_id: 'timed', guardrails: { max_minutes: 1 } });
      const { body } = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script('ask "Wait?"', 'sleep 1', 'repeat'), agent_id: 'timed' });
      const waiting = await follow(service, key, body.task_id, (task) => task.pending !== null);
      clock.advance(10 * 60_000); // waiting for the person does not count
      await service.api(key, 'POST', `/v1/tasks/${body.task_id}/respond`, { question_id: waiting.task.pending.question_id, answer: 'ok' });
      await waitFor(async () => (await service.api(key, 'GET', `/v1/tasks/${body.task_id}`)).body.cursor > waiting.task.cursor + 2, 5000, 'steps after the answer');
      expect((await service.api(key, 'GET', `/v1/tasks/${body.task_id}`)).body.status).to.equal('running');
      clock.advance(61_000);
      const { task } = await follow(service, key, body.task_id);
      expect(task).to.include({ status: 'failed', error: 'Reached the limit of 1 running minutes' });
      expect(task.active_seconds).to.be.within(61, 70);
      expect(task.billed_minutes).to.equal(2);
    } finally {
      await client.close();
      await service.stop();
    }
  });
});
