import { expect } from 'chai';
import { Queue } from 'bullmq';
import { createContainer } from '../../shared/container';
import { startQueueWorker } from '../../workers/runtime';
import { testConfig } from '../support/environment';
import { startTestService, waitFor } from '../support/service';
import { connectDesktop } from '../support/tasks';
import { createKnex } from '../../shared/db/knex';
import { createRedis } from '../../shared/redis';

describe('graceful shutdown', () => {
  it('lets a job in flight finish before closing, and takes no new jobs', async () => {
    const config = testConfig();
    const container = createContainer(config);
    const queueName = `test-shutdown-${Date.now()}`;
    const queue = new Queue(queueName, { connection: container.redis, prefix: config.redisPrefix });
    const finished: string[] = [];
    let started = 0;
    const worker = startQueueWorker(container, {
      queue: queueName as never,
      concurrency: 1,
      processors: {
        slow: async (payload) => {
          started++;
          await new Promise((resolve) => setTimeout(resolve, 600));
          finished.push((payload as { n: string }).n);
        },
      },
    });
    try {
      await queue.add('slow', { n: 'first' });
      await waitFor(() => started === 1, 5000, 'the job to start');
      await queue.add('slow', { n: 'second' });
      await worker.close();
      expect(finished).to.deep.equal(['first']);
      const job = (await queue.getJobs(['completed']))[0];
      expect(job?.data).to.deep.equal({ n: 'first' });
      expect(await queue.getWaitingCount()).to.equal(1);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
      await container.close();
    }
  });

  it('stops a whole service under its deadline and reports a clean stop', async () => {
    const service = await startTestService();
    const started = Date.now();
    const outcome = await service.running.stop();
    expect(outcome.clean).to.equal(true);
    expect(Date.now() - started).to.be.lessThan(10_000);
  });

  it('marks every connected computer offline before it closes the database', async () => {
    const service = await startTestService({}, ['web']);
    const { key } = await service.newOrg();
    // More computers than the database pool has connections (10): some marks wait for one.
    const desktops = await Promise.all(Array.from({ length: 12 }, () => connectDesktop(service, key)));
    const codes = desktops.map((desktop) => desktop.code);
    const db = createKnex(service.running.container.config.databaseUrl, { min: 0, max: 1 });
    try {
      expect(await db('sessions').whereIn('code', codes).pluck('status')).to.deep.equal(codes.map(() => 'connected'));
      const outcome = await service.running.stop();
      expect(outcome.clean).to.equal(true);
      // Each offline mark starts when the app's connection has closed: shutdown waited for all of them.
      expect(await db('sessions').whereIn('code', codes).pluck('status')).to.deep.equal(codes.map(() => 'disconnected'));
    } finally {
      await Promise.all(desktops.map((desktop) => desktop.client.close()));
      await db.destroy();
    }
  });

  it('drops only its own computers: those on another web process stay connected', async () => {
    const prefix = `shutdown-two-webs-${Date.now()}`;
    const staying = await startTestService({ DESKHAND_REDIS_PREFIX: prefix }, ['web']);
    const leaving = await startTestService({ DESKHAND_REDIS_PREFIX: prefix }, ['web']);
    const { key } = await staying.newOrg();
    const here = await connectDesktop(staying, key);
    const there = await connectDesktop(leaving, key);
    const db = createKnex(staying.running.container.config.databaseUrl, { min: 0, max: 1 });
    try {
      expect((await leaving.running.stop()).clean).to.equal(true);
      // The only way from one web process to another's computers is Redis (socket.io's adapter),
      // whose messages arrive in the order they were published. A message published now reaches
      // the computer on the staying process after anything the leaving one sent while it stopped:
      // once it has arrived, a close sent that way would have closed the connection first.
      staying.running.container.link.show(here.code, { kind: 'banner', task_id: 'task_after_shutdown', agent_name: 'After', running: false });
      await waitFor(() => here.lines.some((line) => (line as { task_id?: string }).task_id === 'task_after_shutdown'), 5_000, 'a later message to reach the staying computer');
      const status = async (code: string) => (await db('sessions').where({ code }).first()).status;
      expect(await status(there.code)).to.equal('disconnected');
      expect(await status(here.code)).to.equal('connected');
    } finally {
      await here.client.close();
      await there.client.close();
      await staying.stop();
      await db.destroy();
    }
  });

  it('abandons a job that outlives the deadline and still closes', async () => {
    const service = await startTestService({ DESKHAND_SHUTDOWN_TIMEOUT_MS: '300' }, ['web']);
    const queueName = `test-deadline-${Date.now()}`;
    const connection = createRedis(service.running.container.config);
    const queue = new Queue(queueName, { connection, prefix: service.running.container.config.redisPrefix });
    let started = false;
    const worker = startQueueWorker(service.running.container, {
      queue: queueName as never,
      concurrency: 1,
      processors: { stuck: async () => { started = true; await new Promise((resolve) => setTimeout(resolve, 5000)); } },
    });
    service.running.workers.push(worker);
    await queue.add('stuck', {});
    await waitFor(() => started, 5000, 'the job to start');
    const before = Date.now();
    const outcome = await service.running.stop();
    expect(outcome.clean).to.equal(false);
    expect(Date.now() - before).to.be.lessThan(3000);
    await queue.close();
    connection.disconnect();
  });
});
