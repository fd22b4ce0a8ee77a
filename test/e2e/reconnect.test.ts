import { expect } from 'chai';
import { DesktopEvents, type ActMessage, type ShowMessage } from '../../shared/desktop/protocol';
import { SimulatedComputer } from '../../shared/simulator/simulated-computer';
import { RawDesktop } from '../support/raw-desktop';
import { startTestService, waitFor, type TestService } from '../support/service';
import { script } from '../support/tasks';

/**
 * A computer whose connection drops keeps its task for the reconnect grace: on its next hello
 * the service sends again what it missed (the act it waits for, under the same act_id, and the
 * open question), and past the grace the task fails with a reason that says so.
 */
describe('a computer that reconnects', function () {
  this.timeout(30_000);
  const GRACE_MS = 2000;
  let service: TestService;
  let key: string;
  const desktops: RawDesktop[] = [];

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_RECONNECT_GRACE_MS: String(GRACE_MS), DESKHAND_ACT_TIMEOUT_MS: '1500' });
    ({ key } = await service.newOrg());
  });

  after(async () => {
    for (const desktop of desktops) desktop.close();
    await service.stop();
  });

  function desktop(): RawDesktop {
    const raw = new RawDesktop(service.baseUrl);
    desktops.push(raw);
    return raw;
  }

  const acts = (raw: RawDesktop) => raw.received.filter((entry) => entry.event === DesktopEvents.act).map((entry) => entry.payload as ActMessage);
  const shows = (raw: RawDesktop) => raw.received.filter((entry) => entry.event === DesktopEvents.show).map((entry) => entry.payload as ShowMessage);
  const task = async (taskId: string) => (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body;
  const sessionStatus = async (code: string) => (await service.api(key, 'GET', `/v1/sessions/${code}`)).body.status;

  /** A session whose computer (a bare connection) has said hello, and a task started on it. */
  async function taskOnRawComputer(prompt: string): Promise<{ code: string; taskId: string; first: RawDesktop }> {
    const { body: session } = await service.api(key, 'POST', '/v1/sessions', {});
    const first = desktop();
    expect((await first.hello(session.code)).ok).to.equal(true);
    const started = await service.api(key, 'POST', `/v1/sessions/${session.code}/tasks`, { prompt });
    expect(started.status).to.equal(200);
    return { code: session.code, taskId: started.body.task_id, first };
  }

  it('sends the unanswered action again, under the same act_id, to a computer back within the grace; the task goes on', async () => {
    const { code, taskId, first } = await taskOnRawComputer(script('done "finished"'));
    await waitFor(() => acts(first).length === 1, 5000, 'the first act');
    const [act] = acts(first);
    // The connection drops before the computer answers.
    first.close();
    await waitFor(async () => (await sessionStatus(code)) === 'disconnected', 5000, 'the session to go offline');
    expect((await task(taskId)).status).to.equal('running');

    const second = desktop();
    expect((await second.hello(code)).ok).to.equal(true);
    await waitFor(() => acts(second).length === 1, 5000, 'the act sent again');
    expect(acts(second)[0]).to.deep.equal(act);
    expect(shows(second).map((show) => show.kind)).to.include('banner');

    const computer = new SimulatedComputer({ os: 'mac', appVersion: '1.0.20', width: 1440, height: 900, name: 'Test Mac', accessibility: true });
    const result = await computer.act(act!.action);
    const reply = await second.socket.timeout(5000).emitWithAck(DesktopEvents.result, { task_id: taskId, act_id: act!.act_id, result });
    expect(reply).to.deep.equal({ ok: true });
    // A repeat of the same result (the app answering the act twice) is ignored.
    const repeat = await second.socket.timeout(5000).emitWithAck(DesktopEvents.result, { task_id: taskId, act_id: act!.act_id, result });
    expect(repeat).to.deep.equal({ ok: false });
    await waitFor(async () => (await task(taskId)).done, 10_000, 'the task to end');
    expect(await task(taskId)).to.include({ status: 'completed', result: 'finished' });
    const events = await service.running.container.db('org_events').where({ session_id: code }).orderBy('seq').pluck('type');
    expect(events.filter((type: string) => type.startsWith('session.'))).to.deep.equal(['session.connected', 'session.disconnected', 'session.connected']);
  });

  it('shows the open question again to a computer that comes back', async () => {
    const { code, taskId, first } = await taskOnRawComputer(script('ask "Which printer?" "Office" "Home"', 'done "{answer}"'));
    // The first look at the screen, answered, then the question.
    await waitFor(() => acts(first).length === 1, 5000, 'the first act');
    const [look] = acts(first);
    const computer = new SimulatedComputer({ os: 'mac', appVersion: '1.0.20', width: 1440, height: 900, name: 'Test Mac', accessibility: true });
    await first.socket.timeout(5000).emitWithAck(DesktopEvents.result, { task_id: taskId, act_id: look!.act_id, result: await computer.act(look!.action) });
    await waitFor(() => shows(first).some((show) => show.kind === 'question'), 5000, 'the question');
    first.close();
    await waitFor(async () => (await sessionStatus(code)) === 'disconnected', 5000, 'the session to go offline');

    const second = desktop();
    expect((await second.hello(code)).ok).to.equal(true);
    await waitFor(() => shows(second).some((show) => show.kind === 'question'), 5000, 'the question shown again');
    const question = shows(second).find((show) => show.kind === 'question') as Extract<ShowMessage, { kind: 'question' }>;
    expect(question).to.include({ task_id: taskId, question: 'Which printer?' });
    expect(acts(second)).to.deep.equal([]);
    const answer = await second.socket.timeout(5000).emitWithAck(DesktopEvents.person, { kind: 'answer', task_id: taskId, question_id: question.question_id, answer: 'Office' });
    expect(answer).to.deep.equal({ ok: true });
    await waitFor(async () => (await task(taskId)).done, 10_000, 'the task to end');
    expect(await task(taskId)).to.include({ status: 'completed', result: 'Office' });
  });

  it('fails the task of a computer that does not come back within the grace, saying so', async () => {
    const { code, taskId, first } = await taskOnRawComputer(script('done "finished"'));
    await waitFor(() => acts(first).length === 1, 5000, 'the first act');
    first.close();
    await waitFor(async () => (await sessionStatus(code)) === 'disconnected', 5000, 'the session to go offline');
    const offlineAt = Date.now();
    // During the grace the task waits (the session is already disconnected, as the spec says).
    expect((await task(taskId)).status).to.equal('running');
    await waitFor(async () => (await task(taskId)).done, 10_000, 'the task to fail');
    expect(Date.now() - offlineAt).to.be.at.least(GRACE_MS - 200);
    expect(await task(taskId)).to.include({ status: 'failed', error: 'The computer disconnected and did not come back within 2 seconds' });
  });

  it('still fails a task whose connected computer never answers, after the act timeout', async () => {
    const { taskId, first } = await taskOnRawComputer(script('done "finished"'));
    await waitFor(() => acts(first).length === 1, 5000, 'the first act');
    // The maintenance sweep runs every 15 s; run its reconcile step here until the timeout has passed.
    await waitFor(async () => (await service.running.container.loop.reconcile(0)) > 0 || (await task(taskId)).done, 10_000, 'the act timeout');
    expect(await task(taskId)).to.include({ status: 'failed', error: 'The computer did not answer within 2 seconds' });
  });

  it('begins a queued task whose computer is away within the grace, and sends its first action when the computer is back', async () => {
    // Only a web process: the task's first step waits until this test runs it.
    const web = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_RECONNECT_GRACE_MS: String(GRACE_MS), DESKHAND_REDIS_PREFIX: `${service.running.container.config.redisPrefix}-begin` }, ['web']);
    try {
      const { key: webKey } = await web.newOrg();
      const { body: session } = await web.api(webKey, 'POST', '/v1/sessions', {});
      const first = new RawDesktop(web.baseUrl);
      desktops.push(first);
      expect((await first.hello(session.code)).ok).to.equal(true);
      const { body: started } = await web.api(webKey, 'POST', `/v1/sessions/${session.code}/tasks`, { prompt: script('done "finished"') });
      first.close();
      await waitFor(async () => (await web.api(webKey, 'GET', `/v1/sessions/${session.code}`)).body.status === 'disconnected', 5000, 'the session to go offline');
      expect(await web.running.container.loop.step(started.task_id, 1)).to.equal('started');
      expect((await web.api(webKey, 'GET', `/v1/tasks/${started.task_id}`)).body.status).to.equal('running');
      const second = new RawDesktop(web.baseUrl);
      desktops.push(second);
      expect((await second.hello(session.code)).ok).to.equal(true);
      await waitFor(() => acts(second).length === 1, 5000, 'the first act, sent on the hello');
      expect(acts(second)[0]).to.deep.include({ task_id: started.task_id, action: { type: 'screenshot' } });
    } finally {
      await web.stop();
    }
  });
});
