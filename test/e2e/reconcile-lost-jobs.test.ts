import { expect } from 'chai';
import { startTestService, waitFor, type TestService } from '../support/service';
import { connectDesktop, follow, script } from '../support/tasks';
import { startReceiver, type Receiver } from '../support/receiver';
import { startWorkers } from '../../workers';
import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { RunningWorker } from '../../workers/runtime';
import type { DesktopClient } from '../../shared/simulator/desktop-client';

describe('the reconcile sweep and jobs Redis lost', function () {
  this.timeout(60_000);
  let service: TestService;
  let receiver: Receiver;
  let key: string;
  const desktops: DesktopClient[] = [];
  const workers: RunningWorker[] = [];

  before(async () => {
    receiver = await startReceiver({ status: 200, body: '{"stock":3}', headers: { 'content-type': 'application/json' } });
    // No worker-delivery and no clock: the test decides when tool calls are made and sweeps run.
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_ALLOW_PRIVATE_URLS: '1' }, ['web', 'worker-agent']);
    ({ key } = await service.newOrg());
  });
  after(async () => {
    for (const desktop of desktops) await desktop.close().catch(() => undefined);
    await Promise.all(workers.map((worker) => worker.close()));
    await service?.stop();
    await receiver?.close();
  });

  const start = async (prompt: string, session: Record<string, unknown> = {}) => {
    const { code, client } = await connectDesktop(service, key, {}, session);
    desktops.push(client);
    const { status, body } = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt });
    expect(status, JSON.stringify(body)).to.equal(200);
    return body.task_id as string;
  };

  it('queues a lost step job again (same id) instead of failing the task', async () => {
    const taskId = await start(script('sleep 600', 'done "finished"'));
    await follow(service, key, taskId, (_task, events) => events.some((event) => event.type === 'sleep'));
    const { container } = service.running;
    const row = await container.db('tasks').where({ id: taskId }).first('current_job_id');
    const steps = container.queues.queue(QUEUE_NAMES.taskSteps);
    expect(await steps.getJobState(row.current_job_id)).to.equal('delayed');
    await steps.remove(row.current_job_id); // what a Redis restarted empty does to it

    expect(await container.loop.reconcile(0)).to.equal(0);
    const { task } = await follow(service, key, taskId, (task) => task.done, 20_000);
    expect(task).to.include({ status: 'completed', result: 'finished' });
  });

  it('queues a lost tool call again, and the call is made once', async () => {
    await service.api(key, 'POST', '/v1/agents', { agent_id: 'with-tool', tools: { http: [{ name: 'stock', description: 'Stock of an item', url: receiver.url('/stock') }] } });
    const taskId = await start(script('tool stock {"sku": "A1"}', 'done "checked"'), { agent_id: 'with-tool' });
    await follow(service, key, taskId, (_task, events) => events.some((event) => event.type === 'tool_call'));
    const { container } = service.running;
    const calls = container.queues.queue(QUEUE_NAMES.toolCalls);
    const [lost] = await waitFor(async () => {
      const waiting = await calls.getJobs(['waiting']);
      return waiting.length > 0 ? waiting : null;
    }, 5000, 'the call job');
    await lost!.remove();

    await container.loop.reconcile(0);
    expect((await calls.getJobs(['waiting'])).map((job) => job.id)).to.deep.equal([lost!.id]);
    workers.push(...(await startWorkers(container, service.running.wirings, ['worker-delivery'])));
    const { task } = await follow(service, key, taskId, (task) => task.done, 20_000);
    expect(task).to.include({ status: 'completed', result: 'checked' });
    expect(receiver.requests.length).to.equal(1);
  });
});
