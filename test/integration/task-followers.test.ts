import { getEventListeners } from 'node:events';
import { expect } from 'chai';
import { startTestService, waitFor, type TestService } from '../support/service';
import { countFollowReads, startSleepingTask } from '../support/tasks';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { Notifier } from '../../shared/notifier';
import { createRedis, type Redis } from '../../shared/redis';
import { changeTaskLocked, taskChannel } from '../../shared/tasks/task-change';
import { readTaskForChange } from '../../shared/tasks/tasks.repository';
import { FollowerGone, TaskFollowers } from '../../shared/tasks/task-followers';

/**
 * The contract of `TaskFollowers` (shared/tasks/task-followers.ts) on its own, against the real
 * PostgreSQL and Redis: a follower is cancelled through its AbortSignal, and a stopping process
 * answers its waiting followers at once. Each test builds followers of its own, on a notifier
 * whose channels linger 200 ms, so that it can see a channel let go of.
 */
describe('TaskFollowers', () => {
  let service: TestService;
  let orgId: string;
  let key: string;
  let taskId: string;
  let desktop: DesktopClient;
  const subscribers: Redis[] = [];

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_REDIS_PREFIX: `task-followers-${Date.now()}` }, ['web', 'worker-agent']);
    ({ orgId, key } = await service.newOrg());
    // Asleep for an hour: only the tests write to it.
    ({ taskId, desktop } = await startSleepingTask(service, key));
  });
  after(async () => {
    for (const subscriber of subscribers) subscriber.disconnect();
    await desktop.close();
    await service.stop();
  });

  const deps = () => ({ ...service.running.container, baseUrl: service.running.container.config.baseUrl });

  /** Followers of their own, and the notifier they listen through. */
  function newFollowers(): { followers: TaskFollowers; notifier: Notifier } {
    const { config, redis } = service.running.container;
    const subscriber = createRedis(config.redisUrl, { blocking: true });
    subscribers.push(subscriber);
    const notifier = new Notifier(redis, subscriber, config.redisPrefix, 200);
    return { followers: new TaskFollowers({ ...service.running.container, notifier, baseUrl: config.baseUrl }), notifier };
  }

  const cursorNow = async () => (await readTaskForChange(service.running.container.db, taskId))!.cursor;

  /** How a follow ended: its answer, or what it was rejected with. */
  const settled = <T>(promise: Promise<T>): Promise<{ answer?: T; error?: unknown }> => promise.then((answer) => ({ answer }), (error: unknown) => ({ error }));

  it('answers a waiting follower when an event is written; the polls of one connection share its signal\'s one listener', async () => {
    const { followers } = newFollowers();
    const hangUp = new AbortController();
    for (const message of ['for the follower', 'and again on the same connection']) {
      const from = await cursorNow();
      const waiting = followers.follow(orgId, taskId, from, 20_000, hangUp.signal);
      await waitFor(() => followers.waitingFollowers === 1, 5_000, 'the follower to wait');
      await changeTaskLocked(deps(), taskId, (change) => change.event('note', message));
      const answer = await waiting;
      expect(answer.data.map((event) => event.message)).to.deep.equal([message]);
      expect(answer.cursor).to.equal(from + 1);
      expect(followers.waitingFollowers).to.equal(0);
      // One listener for the signal's lifetime, however many polls it has carried.
      expect(getEventListeners(hangUp.signal, 'abort')).to.have.length(1);
    }
    // The connection closing later wakes no one (both polls were answered) and lets the listener go.
    hangUp.abort();
    expect(followers.waitingFollowers).to.equal(0);
    expect(getEventListeners(hangUp.signal, 'abort')).to.have.length(0);
  });

  it('does not answer a follower whose signal aborts while it waits, reads nothing for it, and leaves nothing behind', async () => {
    const { followers, notifier } = newFollowers();
    const from = await cursorNow();
    const hangUp = new AbortController();
    const waiting = settled(followers.follow(orgId, taskId, from, 20_000, hangUp.signal));
    await waitFor(() => followers.waitingFollowers === 1, 5_000, 'the follower to wait');
    expect(getEventListeners(hangUp.signal, 'abort')).to.have.length(1);
    let outcome: { answer?: unknown; error?: unknown } = {};
    const reads = await countFollowReads(service.running.container.db, async () => {
      const aborted = Date.now();
      hangUp.abort();
      outcome = await waiting;
      expect(Date.now() - aborted).to.be.below(1_000);
      // A read for it would have been asked of the pool as its wait ended; the pool hands out
      // connections in the order they are asked for, so one asked for now comes after it.
      await service.running.container.db.raw('select 1');
    });
    expect(outcome.answer).to.equal(undefined);
    expect(outcome.error).to.be.instanceOf(FollowerGone);
    expect(reads).to.equal(0);
    expect(followers.waitingFollowers).to.equal(0);
    expect(getEventListeners(hangUp.signal, 'abort')).to.have.length(0);
    // Its subscription is gone too: the task's channel is let go of once it has lingered.
    await waitFor(() => notifier.mark(taskChannel(taskId)) === null, 3_000, 'the channel to be released');
  });

  it('rejects a follower whose signal has aborted before it follows, without reading or listening', async () => {
    const { followers, notifier } = newFollowers();
    const from = await cursorNow();
    for (const waitMs of [0, 20_000]) {
      let outcome: { answer?: unknown; error?: unknown } = {};
      const reads = await countFollowReads(service.running.container.db, async () => {
        outcome = await settled(followers.follow(orgId, taskId, from, waitMs, AbortSignal.abort()));
      });
      expect(outcome.error, `wait_ms ${waitMs}`).to.be.instanceOf(FollowerGone);
      expect(reads, `wait_ms ${waitMs}`).to.equal(0);
    }
    expect(followers.waitingFollowers).to.equal(0);
    expect(notifier.mark(taskChannel(taskId))).to.equal(null);
  });

  it('does not answer a follower whose signal aborts on its way to waiting, and leaves no waiter behind', async () => {
    const { followers } = newFollowers();
    const from = await cursorNow();
    const hangUp = new AbortController();
    // Aborted while the follower subscribes and reads: it finds nothing new, and does not wait.
    const waiting = settled(followers.follow(orgId, taskId, from, 20_000, hangUp.signal));
    hangUp.abort();
    const started = Date.now();
    const outcome = await waiting;
    expect(Date.now() - started).to.be.below(2_000);
    expect(outcome.error).to.be.instanceOf(FollowerGone);
    expect(followers.waitingFollowers).to.equal(0);
    expect(getEventListeners(hangUp.signal, 'abort')).to.have.length(0);
  });

  it('answers every waiting follower at once on endWaits, with what there is, and later ones without waiting', async () => {
    const { followers } = newFollowers();
    const from = await cursorNow();
    const waiting = [followers.follow(orgId, taskId, from, 50_000), followers.follow(orgId, taskId, from, 50_000, new AbortController().signal)];
    await waitFor(() => followers.waitingFollowers === 2, 5_000, 'the followers to wait');
    const ended = Date.now();
    followers.endWaits();
    const answers = await Promise.all(waiting);
    expect(Date.now() - ended).to.be.below(1_000);
    for (const answer of answers) {
      expect(answer.data).to.deep.equal([]);
      expect(answer.cursor).to.equal(from);
      expect(answer.task.status).to.equal('running');
    }
    expect(followers.waitingFollowers).to.equal(0);
    const later = Date.now();
    const again = await followers.follow(orgId, taskId, from, 50_000);
    expect(Date.now() - later).to.be.below(1_000);
    expect(again.cursor).to.equal(from);
  });
});
