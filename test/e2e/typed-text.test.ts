import { expect } from 'chai';
import pino from 'pino';
import { startTestService, waitFor, type TestService } from '../support/service';
import { connectDesktop, followDecidingApprovals, script } from '../support/tasks';
import { startReceiver, type Receiver } from '../support/receiver';

/**
 * Typed text may be a secret (on Windows and in Mac apps before 1.0.20 the service cannot see a
 * password field): it goes to the computer and nowhere else. Each case types a text of its own
 * and then looks for it everywhere the service keeps or sends anything: the task's events, the
 * webhook bodies a local receiver got, the older API's /wait, /tasks and /trace, the task with
 * its trace, the audit log, the rows in PostgreSQL and the logs (at trace level). The task's
 * `prompt` holds it (the script the client wrote says what to type) and is left out of the
 * search; so is the last screen (`observation`) where the screen itself shows the text, as the
 * recording does.
 */
describe('typed text is kept out of everything stored or sent', () => {
  let service: TestService;
  let key: string;
  let receiver: Receiver;
  const logs: string[] = [];
  let n = 0;
  /** A text no other part of the run contains, and that the secret detector does not flag (so the agent types it). */
  const newText = () => `violet harbor lantern ${['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'][n++]}`;

  before(async () => {
    const logger = pino({ level: 'trace' }, { write: (line: string) => void logs.push(line) });
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_ALLOW_PRIVATE_URLS: '1' }, undefined, { logger });
    ({ key } = await service.newOrg());
    receiver = await startReceiver();
    expect((await service.api(key, 'PUT', '/v1/webhook', { url: receiver.url('/hook') })).status).to.equal(200);
  });
  after(async () => {
    await service.stop();
    await receiver.close();
  });

  /** Runs a task to its end, approving whatever it asks approval for through the API. */
  async function run(code: string, prompt: string): Promise<{ taskId: string; events: any[]; task: any }> {
    const started = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    const taskId = started.body.task_id as string;
    const { task, events } = await followDecidingApprovals(service, key, taskId, 'approve', 20_000);
    return { taskId, events, task };
  }

  /** Every place the text must not be; `screenShowsIt` leaves the last screen out of the rows searched. */
  async function expectNowhere(text: string, taskId: string, code: string, screenShowsIt: boolean): Promise<void> {
    const { prompt } = (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body;
    expect(prompt).to.include(text);
    // The prompt is the client's own text, returned as sent wherever the task object goes.
    const withoutPrompt = (value: unknown): unknown =>
      value === prompt ? '(the prompt)' : Array.isArray(value) ? value.map(withoutPrompt) : value && typeof value === 'object' && !(value instanceof Date) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutPrompt(v)])) : value;
    const nowhere = (where: string, value: unknown) => {
      const json = JSON.stringify(withoutPrompt(value));
      expect(json, `${where}: …${json.slice(Math.max(0, json.indexOf(text) - 300), json.indexOf(text) + 100)}…`).to.not.include(text);
    };
    const bearer = { authorization: `Bearer ${key}` };

    nowhere('GET events', (await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=0`)).body);
    nowhere('GET task with its trace', (await service.api(key, 'GET', `/v1/tasks/${taskId}?include=trace`)).body);
    nowhere('legacy /wait', (await service.api(null, 'POST', '/wait', { id: taskId, after: 0, timeout_ms: 0, code }, bearer)).body);
    nowhere('legacy /trace', (await service.api(null, 'POST', '/trace', { id: taskId, code }, bearer)).body);
    nowhere('legacy /tasks', (await service.api(null, 'POST', '/tasks', { code }, bearer)).body);
    nowhere('audit log', (await service.api(key, 'GET', '/v1/audit_log?limit=100')).body);

    await receiver.waitForRequests(1, { filter: (request) => request.body.includes(taskId) && request.body.includes('task.completed') });
    nowhere('webhook bodies', receiver.requests.map((request) => JSON.parse(request.body)));

    const db = service.running.container.db;
    const [row] = await db('tasks').where({ id: taskId }).select('agent_config', 'metadata', 'pending', 'queued_actions', 'turn_results', 'last_outcome', 'model_state', 'guard_state', 'result', 'error', 'observation');
    const { observation, ...columns } = row;
    nowhere('the task row', columns);
    if (!screenShowsIt) nowhere('the task row\'s last screen', observation);
    for (const table of ['task_events', 'task_items']) {
      nowhere(table, await db(table).where({ task_id: taskId }));
    }
    nowhere('org events and deliveries', [await db('org_events').select('*'), await db('webhook_deliveries').select('*')]);
    nowhere('logs', logs.map((line) => JSON.parse(line)));
  }

  /** What the computer was sent: the text itself, exactly (the agent did type it). */
  const typedOnComputer = (lines: object[]) => lines.flatMap((line: any) => (line.event === 'act' ? line.actions : [])).filter((action: any) => action.type === 'type').map((action: any) => action.text);

  const devices = [
    { name: 'a Mac with app 1.0.20', os: 'mac' as const, appVersion: '1.0.20', seesPasswordFields: true },
    { name: 'Windows', os: 'windows' as const, appVersion: '1.0.20', seesPasswordFields: false },
    { name: 'a Mac with app 1.0.19', os: 'mac' as const, appVersion: '1.0.19', seesPasswordFields: false },
  ];

  for (const device of devices) {
    describe(`on ${device.name}`, () => {
      it('keeps text typed into a password field out of everything but the computer', async () => {
        const text = newText();
        const desktop = await connectDesktop(service, key, { os: device.os, appVersion: device.appVersion, typeSecrets: true });
        const { taskId, events, task } = await run(desktop.code, script('open Browser', 'go login.example.com', 'click "Password"', `type "${text}"`, 'done "Signed in"'));
        expect(task.status).to.equal('completed');
        if (device.seesPasswordFields) {
          // The service sees the field: the person types it, the agent does not.
          expect(events.some((event) => event.type === 'guardrail' && event.data.verdict === 'person_types')).to.equal(true);
        } else {
          // The service cannot tell a password field: the agent types it, and the event says how much and where.
          expect(typedOnComputer(desktop.lines)).to.include(text);
          const action = events.find((event) => event.type === 'action' && event.data.action.type === 'type' && event.data.action.chars === text.length);
          expect(action, JSON.stringify(events)).to.not.equal(undefined);
          expect(action.message).to.match(new RegExp(`^Type ${text.length} characters`));
          expect(action.data.target).to.have.keys('app', 'field', 'role');
        }
        await expectNowhere(text, taskId, desktop.code, false);
        await desktop.client.close();
      });

      it('keeps text typed into Notes out of everything but the computer (and its screen)', async () => {
        const text = newText();
        const desktop = await connectDesktop(service, key, { os: device.os, appVersion: device.appVersion });
        const { taskId, events, task } = await run(desktop.code, script('open Notes', `type "${text}"`, 'done "Noted"'));
        expect(task.status).to.equal('completed');
        expect(typedOnComputer(desktop.lines)).to.include(text);
        const action = events.find((event) => event.type === 'action' && event.data.action.type === 'type' && event.data.action.chars === text.length);
        expect(action.data.action).to.deep.equal({ type: 'type', chars: text.length });
        if (device.seesPasswordFields) expect(action.message).to.equal(`Type ${text.length} characters into ${action.data.target.field} (TextEdit)`);
        await expectNowhere(text, taskId, desktop.code, true);
        await desktop.client.close();
      });
    });
  }

  it('runs the exact text of a typing held for approval once approved, keeping it out of the approval item', async () => {
    const text = newText();
    const desktop = await connectDesktop(service, key);
    // Enter in mail.example.com's Message sends: the typing waits for an approval (send).
    const { taskId, events, task } = await run(desktop.code, script('go mail.example.com', 'click "Message"', `type "${text}\\n"`, 'done "Sent"'));
    expect(task.status).to.equal('completed');
    const approval = events.find((event) => event.type === 'approval');
    expect(approval?.data.kind, JSON.stringify(events)).to.equal('action');
    expect(typedOnComputer(desktop.lines)).to.include(`${text}\n`);
    await expectNowhere(text, taskId, desktop.code, true);
    await desktop.client.close();
  });

  it('runs the exact text of a move held by a safety check once approved', async () => {
    const text = newText();
    const desktop = await connectDesktop(service, key);
    const { taskId, events, task } = await run(desktop.code, script('open Notes', 'safety "Typing into a note"', `type "${text}"`, 'done "Noted"'));
    expect(task.status).to.equal('completed');
    expect(events.find((event) => event.type === 'approval')?.data.kind, JSON.stringify(events)).to.equal('safety_check');
    expect(typedOnComputer(desktop.lines)).to.include(text);
    await expectNowhere(text, taskId, desktop.code, true);
    await desktop.client.close();
  });

  it('keeps the text in the task row only while it waits to be typed', async () => {
    const text = newText();
    const desktop = await connectDesktop(service, key);
    const started = await service.api(key, 'POST', `/v1/sessions/${desktop.code}/tasks`, { prompt: script('go mail.example.com', 'click "Message"', `type "${text}\\n"`, 'done "Sent"') });
    const taskId = started.body.task_id as string;
    const db = service.running.container.db;
    // Held for approval: the action waits, text and all, in queued_actions; nowhere else.
    await waitFor(async () => (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body.pending?.type === 'approval', 15_000, 'the approval');
    const [waiting] = await db('tasks').where({ id: taskId }).select('queued_actions', 'pending', 'guard_state', 'last_outcome', 'turn_results');
    expect(JSON.stringify(waiting.queued_actions)).to.include(text);
    expect(JSON.stringify([waiting.pending, waiting.guard_state, waiting.last_outcome, waiting.turn_results])).to.not.include(text);
    expect(JSON.stringify(await db('task_items').where({ task_id: taskId }))).to.not.include(text);
    const { body } = await service.api(key, 'GET', `/v1/tasks/${taskId}`);
    await service.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { approval_id: body.pending.approval_id, decision: 'approve' });
    await waitFor(async () => (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body.done, 15_000, 'the end of the task');
    expect(JSON.stringify((await db('tasks').where({ id: taskId }).select('queued_actions', 'model_state'))[0])).to.not.include(text);
    await desktop.client.close();
  });
});
