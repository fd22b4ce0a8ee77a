import { expect } from 'chai';
import { DesktopClient } from '../../shared/simulator/desktop-client';
import { ApiError } from '../../shared/errors';
import type { Container } from '../../shared/container';
import type { CreateTaskInput } from '../../shared/tasks/create-task';
import { startTestService, waitFor, type TestService } from '../support/service';
import { follow, script } from '../support/tasks';

/**
 * A machine session (a computer a runner makes, not a person's) minted by the service, paired by
 * the reference desktop client exactly as a person's app pairs, running a task made with the
 * domain's `createTask` (as evals will), followed through the public API.
 */
describe('machine sessions end to end (reference desktop client, scripted model)', function () {
  this.timeout(60_000);
  let service: TestService;
  let container: Container;
  let org: { orgId: string; key: string };
  const clients: DesktopClient[] = [];
  /** A value the task is told is secret; nothing else marks it as one (the detector alone lets it be typed). */
  const SECRET = 'violet harbour lantern';

  /** A new machine session with the reference desktop client paired to it. */
  const pairedMachine = async (label = 'try 1') => {
    const { code } = await container.sessions.createMachineSession(container.db, { orgId: org.orgId, label, metadata: { run: 'r1' } });
    const lines: Array<Record<string, unknown>> = [];
    const client = new DesktopClient({
      baseUrl: service.baseUrl,
      code,
      os: 'mac',
      appVersion: '1.0.20',
      name: 'Runner machine',
      width: 1440,
      height: 900,
      accessibility: true,
      delayMs: 0,
      typeSecrets: true,
      out: (line) => lines.push(line as Record<string, unknown>),
    });
    clients.push(client);
    await client.start();
    return { code, client, lines };
  };

  /** `createTask` as evals will call it: the session row, a resolved agent version, limits and secrets. */
  const createOn = async (code: string, prompt: string, extra: Partial<CreateTaskInput> = {}) => {
    const session = (await container.db('sessions').where({ code }).first())!;
    const agent = await container.agents.resolveForTask(org.orgId, session.agent_id, 'published');
    return container.tasks.create({ session, agent, prompt, actor: null, ...extra });
  };

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' });
    container = service.running.container;
    org = await service.newOrg();
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });
  after(async () => service.stop());

  it('mints a session with a pairing code and no invite link, session token or idle expiry, and no row in the org\'s audit log', async () => {
    const { session, code } = await container.sessions.createMachineSession(container.db, { orgId: org.orgId, label: 'try 7 of run X' });
    expect(code).to.match(/^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$/);
    expect(session).to.include({ code, org_id: org.orgId, agent_id: 'default', kind: 'machine', label: 'try 7 of run X', status: 'waiting', token_hash: null, invite_url: null, expires_at: null });
    // The audit log records what people and keys change; the try that made the machine records its session.
    expect(await container.db('audit_log').where({ object_id: code })).to.deep.equal([]);
    // No expire-session job: nothing ends it but the service.
    expect(await container.queues.queue('maintenance').getJob(`expire-${code}-0`)).to.equal(undefined);
  });

  it('pairs with the reference desktop client, runs a task made by createTask to the end, readable through GET /v1/tasks/{id}/events', async () => {
    const { code } = await pairedMachine();
    expect(await container.db('sessions').where({ code }).first()).to.include({ status: 'connected', kind: 'machine' });
    const { row, created } = await createOn(code, script('open Notes', 'type "Hello from the machine"', 'done "Wrote the note"'), {
      limits: { steps: 20, minutes: 30 },
      metadata: { try: '1' },
    });
    expect(created).to.equal(true);
    expect(row).to.include({ session_id: code, status: 'queued' });
    const { task, events } = await follow(service, org.key, row.id);
    expect(task).to.include({ status: 'completed', result: 'Wrote the note', session_id: code });
    expect(task.metadata).to.deep.equal({ try: '1' });
    expect(events[0]).to.include({ cursor: 1, type: 'started' });
    expect(events.map((event) => event.cursor)).to.deep.equal(events.map((_, i) => i + 1));
    expect(events.at(-1)).to.include({ type: 'completed', message: 'Wrote the note' });
    // The limits replaced the agent version's for this task only.
    const stored = await container.db('tasks').where({ id: row.id }).first();
    expect(stored.agent_config.guardrails).to.include({ max_steps: 20, max_minutes: 30 });
    const agent = await container.agents.resolveForTask(org.orgId, 'default', 'published');
    expect(agent.config.guardrails.max_steps).not.to.equal(20);
    // The session counts the task as a person's session does, and the audit row records it.
    expect(await container.db('sessions').where({ code }).first()).to.include({ task_count: 1, latest_task_id: row.id });
    const audit = await container.db('audit_log').where({ object_id: row.id, action: 'task.created' }).first();
    expect(audit.data).to.include({ session_id: code, agent_id: 'default' });
  });

  it('fails a task with a steps limit of 1 at its second model turn, naming the limit', async () => {
    const { code } = await pairedMachine();
    const { row } = await createOn(code, script('open Notes', 'open Browser', 'done "Too far"'), { limits: { steps: 1 } });
    const { task } = await follow(service, org.key, row.id);
    expect(task.status).to.equal('failed');
    expect(task.error).to.equal('Reached the limit of 1 steps without finishing');
  });

  it('refuses limits out of range with 400, writing nothing', async () => {
    const { code } = await pairedMachine();
    for (const limits of [{ steps: 0 }, { steps: 1.5 }, { minutes: 100_000 }]) {
      const refused = await createOn(code, 'done "x"', { limits }).catch((error: unknown) => error);
      expect(refused).to.be.instanceOf(ApiError).and.to.include({ status: 400 });
    }
    expect(await container.db('tasks').where({ session_id: code })).to.deep.equal([]);
  });

  it('hands typing a value marked secret to the person (the guardrails), and the value is never in the events', async () => {
    const { code, client, lines } = await pairedMachine();
    const { row } = await createOn(code, script('open Notes', `type "Code: ${SECRET}"`, 'ask "Did you type it?"', 'done "Typed by the person"'), {
      secrets: [SECRET],
    });
    // The agent goes on while the person types; the question holds the task until the person has typed, then the team answers.
    const asked = await follow(service, org.key, row.id, (task, events) => task.pending?.type === 'question' && events.some((event) => event.type === 'secret_typed'));
    const answered = await service.api(org.key, 'POST', `/v1/tasks/${row.id}/respond`, { question_id: asked.task.pending.question_id, answer: 'yes' });
    expect(answered.status).to.equal(200);
    const { task, events } = await follow(service, org.key, row.id);
    expect(task.status).to.equal('completed');
    const guardrails = events.filter((event) => event.type === 'guardrail').map((event) => event.data);
    expect(guardrails).to.deep.equal([{ verdict: 'person_types', rule: 'secret', secret_kind: 'explicit' }]);
    expect(events.map((event) => event.type)).to.include('secret_typed');
    expect(client.computer.snapshot().fields['notes.text']).to.equal(`Code: ${SECRET}`);
    expect(JSON.stringify(events)).not.to.contain(SECRET);
    expect(JSON.stringify(lines)).not.to.contain(SECRET);
    // The task object shows the prompt its maker wrote (here holding the value), never the secrets given apart.
    const read = (await service.api(org.key, 'GET', `/v1/tasks/${row.id}`)).body;
    expect(read).not.to.have.property('secrets');
    expect((await container.db('tasks').where({ id: row.id }).first()).secrets).to.deep.equal([SECRET]);
  });

  it('without the secret marked, the same text is typed by the agent (so the refusal above is the secret\'s)', async () => {
    const { code } = await pairedMachine();
    const { row } = await createOn(code, script('open Notes', `type "Code: ${SECRET}"`, 'done "Typed"'));
    const { task, events } = await follow(service, org.key, row.id);
    expect(task.status).to.equal('completed');
    expect(events.filter((event) => event.type === 'guardrail')).to.deep.equal([]);
  });

  it('returns the same task for the same request_id (409 idempotency_conflict with another prompt), and 409 task_running for another while one runs', async () => {
    const { code } = await pairedMachine();
    const first = await createOn(code, script('sleep 3600'), { idempotencyKey: 'machine-req-1' });
    const again = await createOn(code, script('sleep 3600'), { idempotencyKey: 'machine-req-1' });
    expect(again).to.deep.include({ created: false });
    expect(again.row.id).to.equal(first.row.id);
    // The same key with another prompt is a mistake, not a retry.
    const reused = await createOn(code, script('done "other"'), { idempotencyKey: 'machine-req-1' }).catch((error: unknown) => error);
    expect(reused).to.be.instanceOf(ApiError).and.to.deep.include({ status: 409, code: 'idempotency_conflict' });
    const refused = await createOn(code, script('done "other"')).catch((error: unknown) => error);
    expect(refused).to.be.instanceOf(ApiError).and.to.deep.include({ status: 409, code: 'task_running' });
    expect((refused as ApiError).extra).to.deep.equal({ active_task_id: first.row.id });
    await service.api(org.key, 'POST', `/v1/tasks/${first.row.id}/stop`);
  });

  it('refuses a task on a machine that has not said hello with 409 not_connected', async () => {
    const { code } = await container.sessions.createMachineSession(container.db, { orgId: org.orgId });
    const refused = await createOn(code, 'done "x"').catch((error: unknown) => error);
    expect(refused).to.be.instanceOf(ApiError).and.to.deep.include({ status: 409, code: 'not_connected' });
  });

  it('writes a task in the caller\'s transaction: rolled back with it, nothing is left', async () => {
    const { code } = await pairedMachine();
    const session = (await container.db('sessions').where({ code }).first())!;
    const agent = await container.agents.resolveForTask(org.orgId, session.agent_id, 'published');
    let taskId = '';
    const rolledBack = await container.db
      .transaction(async (trx) => {
        const made = await container.tasks.createInTransaction(trx, { session, agent, prompt: 'done "x"', actor: null });
        taskId = made.row.id;
        throw new Error('the caller gives up');
      })
      .catch((error: Error) => error.message);
    expect(rolledBack).to.equal('the caller gives up');
    expect(await container.db('tasks').where({ id: taskId }).first()).to.equal(undefined);
    expect(await container.db('audit_log').where({ object_id: taskId }).first()).to.equal(undefined);
    expect(await container.db('sessions').where({ code }).first()).to.include({ task_count: 0, latest_task_id: null });
  });

  it('is not the API\'s: not listed, 404 to read, expire or start a task on, no invite page, refused by the older API', async () => {
    const { code } = await pairedMachine();
    const person = await service.api(org.key, 'POST', '/v1/sessions', {});
    const listed = await service.api(org.key, 'GET', '/v1/sessions?limit=100');
    expect(listed.body.data.map((session: { code: string }) => session.code)).to.include(person.body.code).and.not.to.include(code);
    expect((await service.api(org.key, 'GET', `/v1/sessions/${code}`)).status).to.equal(404);
    expect((await service.api(org.key, 'POST', `/v1/sessions/${code}/expire`)).status).to.equal(404);
    expect((await service.api(org.key, 'POST', `/v1/sessions/${code}/disconnect`)).status).to.equal(404);
    expect((await service.api(org.key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "x"' })).status).to.equal(404);
    const invite = await fetch(`${service.baseUrl}/invite/${code}`);
    expect(invite.status).to.equal(404);
    const legacy = await service.api(org.key, 'POST', '/start', { code, prompt: 'done "x"' });
    expect(legacy.status).to.equal(404);
    expect(legacy.body).to.deep.equal({ error: `No session ${code}` });
    // And the machine is still connected: none of those touched it.
    expect(await container.db('sessions').where({ code }).first()).to.include({ status: 'connected', task_count: 0 });
  });

  it('ends only when the service ends it: the machine is let go, a running task stops, the code is refused', async () => {
    const { code, client } = await pairedMachine();
    const { row } = await createOn(code, script('sleep 3600'));
    await follow(service, org.key, row.id, (_task, events) => events.some((event) => event.type === 'sleep'));
    const other = await service.newOrg('Other org');
    const wrongOrg = await container.sessions.endMachineSession(other.orgId, code).catch((error: unknown) => error);
    expect(wrongOrg).to.be.instanceOf(ApiError).and.to.include({ status: 404 });
    const ended = await container.sessions.endMachineSession(org.orgId, code, { reason: 'the try is over' });
    expect(ended.status).to.equal('expired');
    await waitFor(async () => (await client.finished).reason === 'released', 5000, 'the machine let go');
    const { task } = await follow(service, org.key, row.id);
    expect(task.done).to.equal(true);
    expect(task.status).to.not.equal('completed');
    expect(await container.db('audit_log').where({ object_id: code }), 'no audit rows for a machine session').to.deep.equal([]);
    const late = new DesktopClient({ baseUrl: service.baseUrl, code, os: 'mac', appVersion: '1.0.20', name: 'late', width: 1440, height: 900, accessibility: true, delayMs: 0, out: () => undefined });
    clients.push(late);
    const refused = await late.start().catch((error: unknown) => error);
    expect(String((refused as Error)?.message ?? refused)).to.match(/expired/);
  });
});
