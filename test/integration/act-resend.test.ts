import { expect } from 'chai';
import { DesktopEvents, type ActMessage } from '../../shared/desktop/protocol';
import { SimulatedComputer } from '../../shared/simulator/simulated-computer';
import { RawDesktop } from '../support/raw-desktop';
import { startTestService, waitFor, type TestService } from '../support/service';
import { script } from '../support/tasks';

/**
 * The reconcile sweep sends again the act a task waits for on a computer that stayed connected
 * (its first copy may have reached nobody): with the same act_id, once the act has gone
 * unanswered for the sweep's quiet time (at once in the rebuild after Redis comes back).
 */
describe('the reconcile sweep and an unanswered act', function () {
  this.timeout(30_000);
  let service: TestService;
  let key: string;
  const desktops: RawDesktop[] = [];

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' });
    ({ key } = await service.newOrg());
  });
  after(async () => {
    for (const desktop of desktops) desktop.close();
    await service.stop();
  });

  it('sends the awaited act again under the same act_id once quiet long enough, and the task goes on when it is answered', async () => {
    const { body: session } = await service.api(key, 'POST', '/v1/sessions', {});
    const desktop = new RawDesktop(service.baseUrl);
    desktops.push(desktop);
    expect((await desktop.hello(session.code)).ok).to.equal(true);
    const acts = () => desktop.received.filter((entry) => entry.event === DesktopEvents.act).map((entry) => entry.payload as ActMessage);
    const started = await service.api(key, 'POST', `/v1/sessions/${session.code}/tasks`, { prompt: script('done "finished"') });
    const taskId = started.body.task_id as string;
    await waitFor(() => acts().length === 1, 10_000, 'the first act');
    const loop = service.running.container.loop;

    // Not yet quiet for the periodic sweep's 30 s: nothing is sent again (counted at the end,
    // once later messages on the same path have arrived: a copy sent here would come before them).
    expect(await loop.reconcile(30_000)).to.equal(0);

    // Quiet long enough (the rebuild's quiet_ms: 0): the act comes again, the task still runs.
    expect(await loop.reconcile(0)).to.equal(0);
    await waitFor(() => acts().length === 2, 5_000, 'the act sent again');
    expect(acts()[1]).to.deep.equal(acts()[0]);
    expect((await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body.status).to.equal('running');

    const computer = new SimulatedComputer({ os: 'mac', appVersion: '1.0.20', width: 1440, height: 900, name: 'Test Mac', accessibility: true });
    const act = acts()[1]!;
    const reply = await desktop.socket.timeout(5000).emitWithAck(DesktopEvents.result, { task_id: taskId, act_id: act.act_id, result: await computer.act(act.action) });
    expect(reply).to.deep.equal({ ok: true });
    await waitFor(async () => (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body.done, 10_000, 'the task to end');
    expect((await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body).to.include({ status: 'completed', result: 'finished' });
    // The end reaches the person's app after every act sent before it: one act and its one copy.
    const ended = () => desktop.received.some((entry) => entry.event === DesktopEvents.show && (entry.payload as { kind: string }).kind === 'ended');
    await waitFor(ended, 10_000, 'the app told of the end');
    expect(acts()).to.have.length(2);
  });
});
