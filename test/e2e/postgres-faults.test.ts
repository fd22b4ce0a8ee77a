import { expect } from 'chai';
import pg from 'pg';
import { testEnv } from '../support/environment';
import { startTestService, waitFor, type TestService } from '../support/service';
import { connectDesktop, follow, script } from '../support/tasks';
import { startReceiver, type Receiver } from '../support/receiver';
import type { DesktopClient } from '../../shared/simulator/desktop-client';

/**
 * Ends every other connection to the test database, as a PostgreSQL restart does to Deskhand's
 * pools, and returns once those backends are gone: `pg_terminate_backend` only signals them, and
 * on a busy host a backend may still answer a query for a moment after it returns.
 */
async function terminateBackends(): Promise<number> {
  const client = new pg.Client({ connectionString: testEnv().DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
    const pids = rows.map((row) => row.pid);
    await client.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [pids]);
    await waitFor(async () => (await client.query('select 1 from pg_stat_activity where pid = any($1)', [pids])).rowCount === 0, 10_000, 'the terminated backends to exit');
    return pids.length;
  } finally {
    await client.end();
  }
}

describe('PostgreSQL connections killed mid-run (pg_terminate_backend)', function () {
  this.timeout(120_000);
  let service: TestService;
  let receiver: Receiver;
  const desktops: DesktopClient[] = [];

  before(async () => {
    receiver = await startReceiver({ status: 200, body: '{"received":true}' });
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_ALLOW_PRIVATE_URLS: '1', DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS: '200,400,800,1600' });
  });
  after(async () => {
    for (const desktop of desktops) await desktop.close().catch(() => undefined);
    await service?.stop();
    await receiver?.close();
  });

  it('the pools reconnect: running tasks go on to their end and every webhook event is delivered', async () => {
    const { orgId, key } = await service.newOrg();
    expect((await service.api(key, 'PUT', '/v1/webhook', { url: receiver.url('/hooks') })).status).to.equal(200);
    const taskIds = await Promise.all(
      [0, 1, 2].map(async () => {
        const { code, client } = await connectDesktop(service, key);
        desktops.push(client);
        const { body } = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, {
          prompt: script('open Notes', 'sleep 1', 'type "one"', 'sleep 1', 'type "two"', 'sleep 1', 'done "finished"'),
        });
        return body.task_id as string;
      }),
    );
    await follow(service, key, taskIds[0]!, (_task, events) => events.some((event) => event.type === 'sleep'));

    const killed = await terminateBackends();
    const killedAt = Date.now();
    expect(killed, 'connections terminated').to.be.greaterThan(0);

    // Requests that find a dead connection may fail once; the pool replaces it.
    const me = await waitFor(async () => (await service.api(key, 'GET', '/v1/me')).status === 200, 10_000, 'a read to succeed');
    expect(me).to.equal(true);
    const readsBack = Date.now() - killedAt;
    // A request that was given a connection as its backend died still answers 500, which the
    // spec tells a client to retry with backoff, as this follow does.
    const outcomes = await Promise.all(taskIds.map(async (taskId) => (await follow(service, key, taskId, (task) => task.done, 60_000, { retryServerErrors: true })).task));
    const tasksDone = Date.now() - killedAt;
    for (const task of outcomes) expect(task, task.task_id).to.include({ status: 'completed' });
    await waitFor(
      async () => {
        const db = service.running.container.db;
        const events = await db('org_events').where({ org_id: orgId }).select('id');
        const succeeded = await db('webhook_deliveries').where({ org_id: orgId, status: 'succeeded' }).select('event_id');
        return events.length > 0 && succeeded.length >= events.length;
      },
      60_000,
      'every event delivered',
    );
    console.log(`      ${killed} connections killed; reads back after ${readsBack} ms, tasks ended after ${tasksDone} ms, every event delivered after ${Date.now() - killedAt} ms`);
  });
});
