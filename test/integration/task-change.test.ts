import { expect } from 'chai';
import { startTestService, waitFor, type TestService } from '../support/service';
import { connectDesktop, countFollowReads as countFollowReadsOn, follow, script, startSleepingTask } from '../support/tasks';
import { changeTaskIfUnchanged, changeTaskLocked, taskChannel, type TaskChange } from '../../shared/tasks/task-change';
import { readTaskForChange } from '../../shared/tasks/tasks.repository';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { QUEUE_NAMES } from '../../shared/queues/catalog';
import { Notifier } from '../../shared/notifier';
import { createRedis } from '../../shared/redis';
import { TaskFollowers } from '../../shared/tasks/task-followers';

/**
 * `changeTaskIfUnchanged` from a row read without the lock (the loop's busiest paths): written in
 * one statement when nobody changed the task since, and nothing written otherwise (the caller
 * then makes the change with `changeTaskLocked`). Each runs its work once.
 */
describe('task changes from a row read without the lock', () => {
  let service: TestService;
  let taskId: string;
  let key: string;
  let orgId: string;
  let desktop: DesktopClient;
  const deps = () => ({ ...service.running.container, baseUrl: service.running.container.config.baseUrl });

  before(async () => {
    // Queues of its own: jobs other suites left behind must not reach this worker.
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_REDIS_PREFIX: `task-change-${Date.now()}` }, ['web', 'worker-agent']);
    ({ key, orgId } = await service.newOrg());
    // Asleep for an hour: nothing of the loop's touches the row while the tests change it.
    ({ taskId, desktop } = await startSleepingTask(service, key));
  });
  after(async () => {
    await desktop.close();
    await service.stop();
  });

  const eventsOf = (id: string) => deps().db('task_events').where({ task_id: id }).orderBy('cursor').select('cursor', 'type', 'message');

  it('writes the update, its events and a frame in one go when the row is unchanged', async () => {
    const seen = (await readTaskForChange(deps().db, taskId))!;
    const rows: number[] = [];
    const { row } = (await changeTaskIfUnchanged(
      deps(),
      seen,
      (change) => {
        rows.push(change.row.cursor);
        change.event('note', 'first');
        change.event('note', 'second');
        change.frame({ task_id: taskId, seq: seen.frames + 1, width: 2, height: 2, png: Buffer.from('not checked here'), created_at: change.now });
        change.set({ frames: seen.frames + 1 });
      },
    ))!;
    expect(rows).to.deep.equal([seen.cursor]);
    expect(row.cursor).to.equal(seen.cursor + 2);
    const stored = (await readTaskForChange(deps().db, taskId))!;
    expect(stored.cursor).to.equal(seen.cursor + 2);
    expect(stored.frames).to.equal(seen.frames + 1);
    expect(stored.row_version).to.equal(row.row_version);
    const events = await eventsOf(taskId);
    expect(events.slice(-2).map((event) => [event.cursor, event.message])).to.deep.equal([
      [seen.cursor + 1, 'first'],
      [seen.cursor + 2, 'second'],
    ]);
    const frame = await deps().db('task_frames').where({ task_id: taskId, seq: seen.frames + 1 }).first();
    expect(frame.png.toString()).to.equal('not checked here');
  });

  it('writes nothing when the row changed after it was read; the locked change then runs the work once on the newer row', async () => {
    const seen = (await readTaskForChange(deps().db, taskId))!;
    // Somebody else changes the task in between.
    await changeTaskLocked(deps(), taskId, (change) => change.event('note', 'in between'));
    const runs: Array<{ cursor: number; locked: boolean }> = [];
    const work = (change: TaskChange) => {
      runs.push({ cursor: change.row.cursor, locked: change.row.row_version === undefined });
      change.event('note', 'after');
    };
    expect(await changeTaskIfUnchanged(deps(), seen, work)).to.equal(null);
    expect(runs).to.deep.equal([{ cursor: seen.cursor, locked: false }]);
    const { row } = await changeTaskLocked(deps(), taskId, work);
    expect(runs).to.deep.equal([
      { cursor: seen.cursor, locked: false },
      { cursor: seen.cursor + 1, locked: true },
    ]);
    expect(row.cursor).to.equal(seen.cursor + 2);
    const events = await eventsOf(taskId);
    expect(events.slice(-2).map((event) => event.message)).to.deep.equal(['in between', 'after']);
    expect(events.filter((event) => event.message === 'after')).to.have.length(1);
  });

  it('writes nothing for work that changed nothing on the row as read', async () => {
    const seen = (await readTaskForChange(deps().db, taskId))!;
    const runs: boolean[] = [];
    expect(await changeTaskIfUnchanged(deps(), seen, (change: TaskChange) => void runs.push(change.row.row_version === undefined))).to.equal(null);
    expect(runs).to.deep.equal([false]);
    const stored = (await readTaskForChange(deps().db, taskId))!;
    expect([stored.row_version, stored.updated_at.getTime(), stored.cursor]).to.deep.equal([seen.row_version, seen.updated_at.getTime(), seen.cursor]);
  });

  it('writes nothing when the work asks for the transaction or an org event, which only a locked change has', async () => {
    const seen = (await readTaskForChange(deps().db, taskId))!;
    const runs: string[] = [];
    const withRead = async (change: TaskChange) => {
      runs.push('with a read');
      change.event('note', 'with a read');
      const session = await change.trx('sessions').where({ code: change.row.session_id }).first('status');
      runs.push(session.status);
    };
    expect(await changeTaskIfUnchanged(deps(), seen, withRead)).to.equal(null);
    expect(await changeTaskIfUnchanged(deps(), seen, (change) => change.orgEvent('task.started'))).to.equal(null);
    expect(runs).to.deep.equal(['with a read']);
    await changeTaskLocked(deps(), taskId, withRead);
    expect(runs).to.deep.equal(['with a read', 'with a read', 'connected']);
    const stored = (await readTaskForChange(deps().db, taskId))!;
    expect(stored.cursor).to.equal(seen.cursor + 1);
    const events = await eventsOf(taskId);
    expect(events.filter((event) => event.message === 'with a read')).to.have.length(1);
  });

  it('runs the work exactly once on the path it names: under the lock, or on the unchanged row', async () => {
    let locked = 0;
    await changeTaskLocked(deps(), taskId, (change) => {
      locked += 1;
      change.event('note', 'locked once');
    });
    expect(locked).to.equal(1);
    // A locked change whose work changes nothing runs once too, and writes nothing.
    const before = (await readTaskForChange(deps().db, taskId))!;
    await changeTaskLocked(deps(), taskId, () => void (locked += 1));
    expect(locked).to.equal(2);
    let unlocked = 0;
    const written = await changeTaskIfUnchanged(deps(), before, (change) => {
      unlocked += 1;
      change.event('note', 'unlocked once');
    });
    expect(unlocked).to.equal(1);
    expect(written!.row.cursor).to.equal(before.cursor + 1);
    const events = await eventsOf(taskId);
    expect(events.slice(-2).map((event) => event.message)).to.deep.equal(['locked once', 'unlocked once']);
  });

  describe('what followers hear', () => {
    /** Follow reads (`readTaskAndEventsAfter`) made while `during` runs. */
    const countFollowReads = (during: () => Promise<unknown>) => countFollowReadsOn(deps().db, during);

    async function waitingFollower() {
      const { cursor } = (await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=0&wait_ms=0`)).body as { cursor: number };
      const { followers } = service.running.container;
      const waitingBefore = followers.waitingFollowers;
      const answer = service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor}&wait_ms=10000`);
      // The follower has read and waits once the service counts it.
      await waitFor(() => followers.waitingFollowers > waitingBefore, 5_000, 'the follower to wait');
      return { cursor, answer };
    }

    it('a waiting follower is answered from the change itself, as a read would answer it', async () => {
      const { cursor, answer } = await waitingFollower();
      let body: any;
      const reads = await countFollowReads(async () => {
        const seen = (await readTaskForChange(deps().db, taskId))!;
        await changeTaskIfUnchanged(deps(), seen, (change) => change.event('note', 'heard', { n: 1 }));
        body = (await answer).body;
      });
      expect(reads).to.equal(0);
      expect(body.data.map((event: any) => [event.cursor, event.type, event.message, event.data])).to.deep.equal([[cursor + 1, 'note', 'heard', { n: 1 }]]);
      expect(body.cursor).to.equal(cursor + 1);
      const read = (await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor}&wait_ms=0`)).body;
      expect(body.data).to.deep.equal(read.data);
      expect({ ...body.task, active_seconds: 0 }).to.deep.equal({ ...read.task, active_seconds: 0 });
    });

    it('a follower asking again after an answer from a note waits without reading', async () => {
      const { cursor, answer } = await waitingFollower();
      const seen = (await readTaskForChange(deps().db, taskId))!;
      await changeTaskIfUnchanged(deps(), seen, (change) => change.event('note', 'heard again'));
      expect((await answer).body.cursor).to.equal(cursor + 1);
      let again: any;
      const reads = await countFollowReads(async () => {
        again = (await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor + 1}&wait_ms=300`)).body;
      });
      expect(again.data).to.deep.equal([]);
      // One read at the end of the wait (nothing came), none before it.
      expect(reads).to.equal(1);
    });

    it('a follower coming back seconds after its answer, its channel still subscribed, waits without reading', async () => {
      const { cursor, answer } = await waitingFollower();
      const seen = (await readTaskForChange(deps().db, taskId))!;
      await changeTaskIfUnchanged(deps(), seen, (change) => change.event('note', 'heard before a pause'));
      expect((await answer).body.cursor).to.equal(cursor + 1);
      // A follower held up (a busy client, a slow network) longer than a second.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      let again: any;
      const reads = await countFollowReads(async () => {
        again = (await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor + 1}&wait_ms=300`)).body;
      });
      expect(again.data).to.deep.equal([]);
      // Only the read at the end of the wait; no check before waiting.
      expect(reads).to.equal(1);
    });

    it('a follower that fell behind by a few changes catches up from their notes without reading', async () => {
      const { cursor, answer } = await waitingFollower();
      const write = async (message: string) => {
        const seen = (await readTaskForChange(deps().db, taskId))!;
        await changeTaskIfUnchanged(deps(), seen, (change) => change.event('note', message));
      };
      await write('one');
      expect((await answer).body.cursor).to.equal(cursor + 1);
      // Two more changes before the follower asks again, once the web process has heard their
      // notes (its observer hears a note before the channel's listeners do).
      const heard: number[] = [];
      const notifier = service.running.container.notifier;
      const unsubscribe = await notifier.subscribe(taskChannel(taskId), (message) => void heard.push((JSON.parse(message) as { cursor: number }).cursor));
      try {
        await write('two');
        await write('three');
        await waitFor(() => heard.includes(cursor + 3), 3_000, 'the notes of both changes to be heard');
      } finally {
        await unsubscribe();
      }
      let caughtUp: any;
      const reads = await countFollowReads(async () => {
        caughtUp = (await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor + 1}&wait_ms=5000`)).body;
      });
      expect(reads).to.equal(0);
      expect(caughtUp.data.map((event: any) => [event.cursor, event.message])).to.deep.equal([
        [cursor + 2, 'two'],
        [cursor + 3, 'three'],
      ]);
      expect(caughtUp.task.cursor).to.equal(cursor + 3);
    });

    it('forgets what it heard of a task once nobody follows it, so a later follower gets the newest events', async () => {
      // TaskFollowers of its own whose channels linger 200 ms instead of 10 s.
      const { config, redis } = service.running.container;
      const subscriber = createRedis(config.redisUrl, { blocking: true });
      const notifier = new Notifier(redis, subscriber, config.redisPrefix, 200);
      const followers = new TaskFollowers({ ...service.running.container, notifier, baseUrl: config.baseUrl });
      try {
        const from = (await readTaskForChange(deps().db, taskId))!.cursor;
        const waiting = followers.follow(orgId, taskId, from, 5_000);
        await waitFor(() => notifier.mark(taskChannel(taskId)) !== null, 2_000, 'the follower to listen');
        await changeTaskLocked(deps(), taskId, (change) => change.event('note', 'heard'));
        expect((await waiting).data.map((event) => event.message)).to.deep.equal(['heard']);
        await waitFor(() => notifier.mark(taskChannel(taskId)) === null, 3_000, 'the channel to be released');
        // Nobody listens now: this change's note goes unheard.
        await changeTaskLocked(deps(), taskId, (change) => change.event('note', 'unheard'));
        const later = await followers.follow(orgId, taskId, from, 0);
        expect(later.data.map((event) => event.message)).to.deep.equal(['heard', 'unheard']);
        expect(later.task.cursor).to.equal(from + 2);
      } finally {
        subscriber.disconnect();
      }
    });

    it('followers one note wakes at one cursor share their answer; others get their own', async () => {
      const write = async (message: string) => {
        const seen = (await readTaskForChange(deps().db, taskId))!;
        await changeTaskIfUnchanged(deps(), seen, (change) => change.event('note', message));
      };
      const { cursor, answer } = await waitingFollower();
      const { followers } = service.running.container;
      const waitingBefore = followers.waitingFollowers;
      const second = service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor}&wait_ms=5000`);
      await waitFor(() => followers.waitingFollowers > waitingBefore, 5_000, 'the second follower to wait');
      await write('first of two');
      const [one, two] = [(await answer).body, (await second).body];
      expect(one).to.deep.equal(two);
      expect(one.data.map((event: any) => event.message)).to.deep.equal(['first of two']);
      // The web process answers from the notes it has heard: once the second note is heard (its
      // channel's mark moves, or the channel is released and reads go to the database), each
      // cursor gets its own events. Under load the note can land a moment after the write returns.
      const notifier = service.running.container.notifier;
      const before = notifier.mark(taskChannel(taskId));
      await write('second of two');
      await waitFor(() => notifier.mark(taskChannel(taskId)) !== before || before === null, 3_000, 'the second note to be heard');
      const [fromFirst, fromBefore, again] = await Promise.all([
        service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor + 1}`),
        service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor}`),
        service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor + 1}`),
      ]);
      expect(fromFirst.body.data.map((event: any) => event.message)).to.deep.equal(['second of two']);
      expect(fromBefore.body.data.map((event: any) => event.message)).to.deep.equal(['first of two', 'second of two']);
      expect(again.body).to.deep.equal(fromFirst.body);
      expect(fromBefore.body.task.cursor).to.equal(cursor + 2);
    });

    it('a change too large for a note only wakes the follower, which reads it', async () => {
      const { cursor, answer } = await waitingFollower();
      const long = 'x'.repeat(20_000);
      let body: any;
      const reads = await countFollowReads(async () => {
        await changeTaskLocked(deps(), taskId, (change) => change.event('note', 'large', { long }));
        body = (await answer).body;
      });
      expect(reads).to.be.at.least(1);
      expect(body.data).to.have.length(1);
      expect(body.data[0]).to.include({ cursor: cursor + 1, message: 'large' });
      expect(body.data[0].data.long).to.have.length(20_000);
    });
  });

  describe('reading the row on the loop\'s paths', () => {
    const taskReads = (sql: string) => /xmin::text as row_version from "tasks"/.test(sql);

    it('each step job and each result reads the task\'s row once', async () => {
      // An agent that clicks where nothing can be seen without asking.
      await service.api(key, 'POST', '/v1/agents', { agent_id: 'clicker', guardrails: { confirm: [] } });
      const other = await connectDesktop(service, key, {}, { agent_id: 'clicker' });
      try {
        const sqls: string[] = [];
        const onQuery = (query: { sql: string }) => sqls.push(query.sql);
        deps().db.on('query', onQuery);
        let done: { task: any; events: any[] };
        try {
          const started = await service.api(key, 'POST', `/v1/sessions/${other.code}/tasks`, { prompt: script('click_at 5 5', 'click_at 6 6', 'click_at 7 7', 'done "clicked"') });
          done = await follow(service, key, started.body.task_id);
        } finally {
          deps().db.off('query', onQuery);
        }
        expect(done.task, JSON.stringify(done.task)).to.include({ status: 'completed' });
        expect(done.events.filter((event) => event.type === 'action_result')).to.have.length(4);
        // Step jobs carry ids only and acts carry no task state, so each step job and each result
        // reads the row once (with its version, for the unlocked write).
        const queue = deps().queues.queue(QUEUE_NAMES.taskSteps);
        // The job that ended the task is marked completed only after the commit the follower saw.
        const ofTask = async (states: Array<'completed' | 'active' | 'waiting' | 'delayed'>) => (await queue.getJobs(states)).filter((job) => job.data.task_id === done.task.task_id);
        await waitFor(async () => (await ofTask(['active', 'waiting', 'delayed'])).length === 0, 10_000, 'the task\'s last step job to complete');
        const stepJobs = await ofTask(['completed']);
        expect(stepJobs.map((job) => Object.keys(job.data).sort())).to.deep.equal(stepJobs.map(() => ['step', 'task_id']));
        expect(stepJobs.length).to.be.greaterThan(4);
        expect(sqls.filter(taskReads)).to.have.length(stepJobs.length + 4);
      } finally {
        await other.client.close();
      }
    });

    describe('out of date', () => {
      let other: Awaited<ReturnType<typeof connectDesktop>>;
      let sleeperId: string;
      before(async () => {
        other = await connectDesktop(service, key);
        const started = await service.api(key, 'POST', `/v1/sessions/${other.code}/tasks`, { prompt: script('sleep 3600') });
        sleeperId = started.body.task_id;
        await follow(service, key, sleeperId, (_task, events) => events.some((event) => event.type === 'sleep'));
      });
      after(() => other.client.close());

      it('a result for an act the task no longer awaits changes nothing', async () => {
        await changeTaskLocked(deps(), sleeperId, (change) => change.event('note', 'moved on'));
        const before = (await readTaskForChange(deps().db, sleeperId))!;
        const answer = await service.running.container.loop.receiveResult(other.code, {
          task_id: sleeperId,
          act_id: 'act_not_sent',
          result: { ok: true, observation: before.observation!, screenshot: Buffer.from('png') },
        });
        expect(answer).to.deep.equal({ ok: false });
        const after = (await readTaskForChange(deps().db, sleeperId))!;
        expect([after.cursor, after.frames, after.row_version]).to.deep.equal([before.cursor, before.frames, before.row_version]);
      });

      it('a step job that runs after the task was stopped does nothing', async () => {
        const seen = (await readTaskForChange(deps().db, sleeperId))!;
        const step = Number(seen.current_job_id!.split('-').pop());
        expect((await service.api(key, 'POST', `/v1/tasks/${sleeperId}/stop`, {})).status).to.equal(200);
        const stopped = (await readTaskForChange(deps().db, sleeperId))!;
        expect(await service.running.container.loop.step(sleeperId, step, true)).to.equal('stale');
        const after = (await readTaskForChange(deps().db, sleeperId))!;
        expect(after.status).to.equal('stopped');
        expect([after.cursor, after.steps, after.row_version]).to.deep.equal([stopped.cursor, stopped.steps, stopped.row_version]);
      });
    });
  });
});
