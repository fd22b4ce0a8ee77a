import { expect } from 'chai';
import { startTestService, waitFor, type TestService } from '../support/service';
import { startSleepingTask } from '../support/tasks';
import { changeTaskLocked, type CommittedTaskChange, type TaskChangeObserver } from '../../shared/tasks/task-change';
import type { DesktopClient } from '../../shared/simulator/desktop-client';

/**
 * What happens after a task change commits is a list of observers registered in the
 * composition root: each is told of every committed change with what it wrote, never of one
 * rolled back, and one that fails neither undoes the change nor keeps the others from hearing.
 */
describe('after-commit observers of task changes', () => {
  let service: TestService;
  let key: string;
  let taskId: string;
  let desktop: DesktopClient;
  const heard: CommittedTaskChange[] = [];
  const alsoHeard: CommittedTaskChange[] = [];
  /** Changes whose first event says this make the failing observers fail. */
  const FAIL = 'observers fail now';
  const failsOn = (committed: CommittedTaskChange) => committed.events[0]?.message === FAIL;
  const observers: TaskChangeObserver[] = [
    { name: 'recorder', taskChanged: (committed) => void heard.push(committed) },
    {
      name: 'throws',
      taskChanged(committed) {
        if (failsOn(committed)) throw new Error('a synchronous failure');
      },
    },
    {
      name: 'rejects',
      async taskChanged(committed) {
        if (failsOn(committed)) throw new Error('an asynchronous failure');
      },
    },
    { name: 'second recorder', taskChanged: async (committed) => void alsoHeard.push(committed) },
  ];
  const deps = () => ({ ...service.running.container, baseUrl: service.running.container.config.baseUrl });
  const heardOf = (id: string) => heard.filter((committed) => committed.row.id === id);

  before(async () => {
    // Queues of its own: jobs other suites left behind must not reach this worker.
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_REDIS_PREFIX: `observers-${Date.now()}` }, ['web', 'worker-agent'], { observers });
    ({ key } = await service.newOrg());
    ({ taskId, desktop } = await startSleepingTask(service, key));
  });
  after(async () => {
    await desktop.close();
    await service.stop();
  });

  it('are told of the task loop’s changes, each with the events it wrote, in cursor order', async () => {
    await waitFor(() => heardOf(taskId).some((committed) => committed.events.some((event) => event.type === 'sleep')), 5_000, 'the sleep to be heard');
    const cursors = heardOf(taskId).flatMap((committed) => committed.events.map((event) => event.cursor));
    expect(cursors.length).to.be.greaterThan(1);
    // Every event the loop wrote, each once: the loop's changes reach the root's observers.
    expect(cursors).to.deep.equal(Array.from({ length: cursors.length }, (_, i) => cursors[0]! + i));
    const stored = await deps().db('task_events').where({ task_id: taskId }).where('cursor', '>=', cursors[0]!).orderBy('cursor').pluck('cursor');
    expect(stored).to.deep.equal(cursors);
    // Starting a task writes a webhook event, dispatched by the root's own observer.
    expect(heardOf(taskId).some((committed) => committed.orgEventIds.length > 0)).to.equal(true);
  });

  it('tell an observer of a committed change: the row as written, its events and its org event ids', async () => {
    const before = heard.length;
    const { row } = await changeTaskLocked(deps(), taskId, (change) => {
      change.event('note', 'observed', { n: 1 });
      change.orgEvent('task.waiting_for_user');
    });
    const told = heard.slice(before);
    expect(told).to.have.length(1);
    const [committed] = told;
    expect(committed!.row).to.include({ id: taskId, cursor: row.cursor, row_version: row.row_version });
    expect(committed!.events.map((event) => [event.cursor, event.type, event.message, event.data])).to.deep.equal([[row.cursor, 'note', 'observed', { n: 1 }]]);
    const stored = await deps().db('org_events').where({ task_id: taskId, type: 'task.waiting_for_user' }).pluck('id');
    expect(committed!.orgEventIds).to.have.length(1);
    expect(stored).to.include(committed!.orgEventIds[0]);
    // The root's own observers still run: the event went to the webhooks queue.
    const job = await waitFor(() => deps().queues.queue('webhooks').getJob(`dispatch-${committed!.orgEventIds[0]}`), 5_000, 'the dispatch job');
    expect(job.data).to.deep.equal({ event_id: committed!.orgEventIds[0] });
  });

  it('do not tell of a change that rolled back', async () => {
    const before = heard.length;
    const cursor = (await deps().db('tasks').where({ id: taskId }).first('cursor')).cursor;
    let error: unknown;
    await changeTaskLocked(deps(), taskId, (change) => {
      change.event('note', 'undone');
      throw new Error('the work failed');
    }).catch((caught: unknown) => (error = caught));
    expect((error as Error).message).to.equal('the work failed');
    expect(heard.slice(before)).to.deep.equal([]);
    expect((await deps().db('tasks').where({ id: taskId }).first('cursor')).cursor).to.equal(cursor);
    expect(await deps().db('task_events').where({ task_id: taskId, message: 'undone' }).first()).to.equal(undefined);
  });

  it('a failing observer fails neither the change nor the other observers', async () => {
    const before = { heard: heard.length, alsoHeard: alsoHeard.length };
    const { row } = await changeTaskLocked(deps(), taskId, (change) => change.event('note', FAIL));
    expect(heard.slice(before.heard).map((committed) => committed.row.cursor)).to.deep.equal([row.cursor]);
    expect(alsoHeard.slice(before.alsoHeard).map((committed) => committed.row.cursor)).to.deep.equal([row.cursor]);
    const events = (await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${row.cursor - 1}`)).body.data;
    expect(events.map((event: { message: string }) => event.message)).to.deep.equal([FAIL]);
  });
});
