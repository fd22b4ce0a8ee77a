import { expect } from 'chai';
import { startTestService, waitFor, type TestService } from '../support/service';
import { RawRunner, RUNNER_REPORT } from '../support/raw-runner';
import { freePort } from '../support/ports';
import { startChildProcess } from '../support/web-process';

/**
 * Runners across web processes: web A is a child process holding the runner's connection, web B
 * (in this process) answers the API. What B reads must be what A's runner reported, and what B
 * does (a delete) must reach the connection A holds.
 */
describe('runners across two web processes', function () {
  this.timeout(90_000);
  const env = { DESKHAND_RUNNER_HEARTBEAT_MS: '300', DESKHAND_RUNNER_OFFLINE_AFTER_MS: '1500' };
  let webB: TestService;
  let webA: Awaited<ReturnType<typeof startChildProcess>>;
  let key: string;
  const runners: RawRunner[] = [];

  before(async () => {
    webB = await startTestService(env, ['web']);
    webA = await startChildProcess(['web'], env, await freePort());
    ({ key } = await webB.newOrg('Two webs'));
  });
  after(async () => {
    for (const runner of runners) runner.close();
    await webA?.stop('SIGKILL');
    await webB?.stop();
  });

  const create = async (name: string) => (await webB.api(key, 'POST', '/v1/runners', { name })).body as { runner_id: string; token: string };
  const readOnB = async (runnerId: string) => (await webB.api(key, 'GET', `/v1/runners/${runnerId}`)).body;
  const connectToA = async (token: string) => {
    const runner = new RawRunner(webA.baseUrl);
    runners.push(runner);
    expect(await runner.hello(token)).to.include({ ok: true });
    return runner;
  };

  it('shows a runner connected to web A online, with what it reported, through web B', async () => {
    const { runner_id, token } = await create('on A');
    await connectToA(token);
    const read = await readOnB(runner_id);
    expect(read).to.include({ status: 'online', provider: RUNNER_REPORT.provider, version: RUNNER_REPORT.version, slots: RUNNER_REPORT.slots });
    expect(read.images).to.deep.equal(RUNNER_REPORT.images);
  });

  it('disconnects the runner connected to web A when web B deletes it', async () => {
    const { runner_id, token } = await create('deleted from B');
    const runner = await connectToA(token);
    expect((await webB.api(key, 'DELETE', `/v1/runners/${runner_id}`)).status).to.equal(200);
    await waitFor(() => runner.socket.disconnected, 5_000, 'web A to close the runner\'s connection');
  });

  it('reads offline on web B within the silence limit once web A dies with the runner connected (kill -9)', async () => {
    const { runner_id, token } = await create('web A dies');
    const runner = await connectToA(token);
    const beat = setInterval(() => void runner.heartbeat().catch(() => undefined), 300);
    try {
      // A heartbeat web A has taken (it answers once it is recorded): the runner reads online on B.
      expect(await runner.heartbeat()).to.deep.equal({ ok: true });
      expect((await readOnB(runner_id)).status).to.equal('online');
      await webA.stop('SIGKILL');
      const killedAt = Date.now();
      await waitFor(async () => (await readOnB(runner_id)).status === 'offline', 5_000, 'offline on web B');
      expect(Date.now() - killedAt).to.be.below(5_000);
    } finally {
      clearInterval(beat);
    }
  });
});
