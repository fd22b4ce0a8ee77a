import { expect } from 'chai';
import { DesktopEvents, type ActMessage, type ShowMessage } from '../../shared/desktop/protocol';
import { SimulatedComputer } from '../../shared/simulator/simulated-computer';
import { MAC_DEVICE, RawDesktop } from '../support/raw-desktop';
import { startTestService, waitFor, type TestService } from '../support/service';
import { script } from '../support/tasks';

/**
 * Strings PostgreSQL cannot store (U+0000, a lone surrogate) in what a desktop app sends: a
 * hello carrying one is refused naming the field; in a result or a person's message they are
 * replaced by U+FFFD and the task goes on (docs/desktop-protocol.md).
 */
describe('desktop messages with NUL or an unpaired surrogate', function () {
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

  const newSession = async (): Promise<string> => (await service.api(key, 'POST', '/v1/sessions', {})).body.code;
  const raw = () => {
    const desktop = new RawDesktop(service.baseUrl);
    desktops.push(desktop);
    return desktop;
  };
  const acts = (desktop: RawDesktop) => desktop.received.filter((entry) => entry.event === DesktopEvents.act).map((entry) => entry.payload as ActMessage);
  const shows = (desktop: RawDesktop) => desktop.received.filter((entry) => entry.event === DesktopEvents.show).map((entry) => entry.payload as ShowMessage);

  describe('desktop:hello', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['a NUL in device.name', { ...MAC_DEVICE, name: 'Ana\u0000s Mac' }, 'device.name must not contain a NUL character'],
      ['an unpaired surrogate in device.name', { ...MAC_DEVICE, name: 'Ana \ud83d Mac' }, 'device.name must not contain a NUL character (\\u0000) or an unpaired surrogate'],
      ['an unpaired surrogate in device.os', { ...MAC_DEVICE, os: 'mac\udc00' }, 'device.os must not contain'],
      ['a NUL in device.os', { ...MAC_DEVICE, os: 'mac\u0000' }, 'device.os must not contain'],
      ['a NUL in a key of device', { ...MAC_DEVICE, 'extra\u0000': true }, 'device has a key with a NUL character'],
    ];
    for (const [what, device, message] of cases) {
      it(`refuses a hello with ${what} as invalid, naming the field; the session stays unconnected`, async () => {
        const code = await newSession();
        const desktop = raw();
        const reply = await desktop.hello(code, device as never);
        expect(reply).to.include({ ok: false, code: 'invalid' });
        expect((reply as { message: string }).message).to.include('The app sent a malformed hello: ').and.include(message);
        expect((await service.api(key, 'GET', `/v1/sessions/${code}`)).body.status).to.equal('waiting');
      });
    }

    it('names the field of a schema error the same way', async () => {
      const reply = await raw().hello(await newSession(), { ...MAC_DEVICE, width: 0 });
      expect(reply).to.deep.equal({ ok: false, code: 'invalid', message: 'The app sent a malformed hello: device.width must be >= 1' });
    });

    it('still welcomes a name with characters PostgreSQL stores (emoji, U+FFFD)', async () => {
      const reply = await raw().hello(await newSession(), { ...MAC_DEVICE, name: 'Ana \ud83d\udcbb \ufffd' });
      expect(reply).to.include({ ok: true });
    });
  });

  describe('desktop:result and desktop:person', () => {
    it('stores a result whose observation has NUL and lone surrogates with U+FFFD in their place, and the task goes on', async () => {
      const code = await newSession();
      const desktop = raw();
      expect((await desktop.hello(code)).ok).to.equal(true);
      const started = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script('ask "Which printer?"', 'done "{answer}"') });
      expect(started.status, JSON.stringify(started.body)).to.equal(200);
      const taskId = started.body.task_id as string;
      await waitFor(() => acts(desktop).length === 1, 10_000, 'the first act');
      const [act] = acts(desktop);

      const computer = new SimulatedComputer({ os: 'mac', appVersion: '1.0.20', width: 1440, height: 900, name: 'Test Mac', accessibility: true });
      const result = await computer.act(act!.action);
      const observation = {
        ...result.observation,
        text: 'Printer\u0000 settings',
        windows: [{ ...result.observation.windows[0]!, title: 'Broken \ud800 title' }, ...result.observation.windows.slice(1)],
        'note\u0000': 'a key with a NUL',
      };
      const reply = await desktop.socket.timeout(5000).emitWithAck(DesktopEvents.result, { task_id: taskId, act_id: act!.act_id, result: { ...result, observation } });
      expect(reply).to.deep.equal({ ok: true });

      const row = await service.running.container.db('tasks').where({ id: taskId }).first('observation', 'frames');
      expect(row.frames).to.equal(1);
      expect(row.observation.text).to.equal('Printer\ufffd settings');
      expect(row.observation.windows[0].title).to.equal('Broken \ufffd title');
      expect(row.observation['note\ufffd']).to.equal('a key with a NUL');

      // The person's answer, with a NUL in it, likewise.
      await waitFor(() => shows(desktop).some((show) => show.kind === 'question'), 10_000, 'the question');
      const question = shows(desktop).find((show) => show.kind === 'question') as Extract<ShowMessage, { kind: 'question' }>;
      const answered = await desktop.socket.timeout(5000).emitWithAck(DesktopEvents.person, { kind: 'answer', task_id: taskId, question_id: question.question_id, answer: 'Off\u0000ice' });
      expect(answered).to.deep.equal({ ok: true });
      await waitFor(async () => (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body.done, 10_000, 'the task to end');
      expect((await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body).to.include({ status: 'completed', result: 'Off\ufffdice' });
    });
  });
});
