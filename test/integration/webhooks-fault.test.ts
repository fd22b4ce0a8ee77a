import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { createContainer, type Container } from '../../shared/container';
import { appendOrgEvent, dispatchOrgEvents } from '../../shared/events/org-events';
import { testConfig, testEnv } from '../support/environment';
import { waitFor } from '../support/service';
import { startReceiver, type Receiver } from '../support/receiver';
import { dataFor } from '../support/org-event-fixtures';

const EVENTS = 1000;

/** Short locks so that the jobs of a killed worker come back within seconds (BullMQ default: 30 s). */
const WORKER_ENV = {
  DESKHAND_ALLOW_PRIVATE_URLS: '1',
  DESKHAND_WORKER_LOCK_DURATION_MS: '2000',
  DESKHAND_WORKER_STALLED_INTERVAL_MS: '1000',
  DESKHAND_WEBHOOK_TIMEOUT_MS: '2000',
  DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS: '200,400,800,1600',
};

function startWorkerProcess(): Promise<ChildProcess> {
  const child = fork(path.join(__dirname, '..', 'support', 'webhooks-worker.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...testEnv(WORKER_ENV) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code, signal) => reject(new Error(`worker exited before it was ready (${code ?? signal})`)));
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

describe('webhook delivery when a worker is killed mid-flight', function () {
  this.timeout(120_000);
  let container: Container;
  let target: Receiver;
  const children: ChildProcess[] = [];

  before(async () => {
    container = createContainer(testConfig(WORKER_ENV));
    // Slow enough that many deliveries are in flight at any moment.
    target = await startReceiver({ status: 200, body: '{"received":true}', delayMs: 60 });
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(children.map(exited));
    await target.close();
    await container.close();
  });

  it('delivers every one of 1,000 events at least once, each with its own unchanging id', async () => {
    const { org } = await container.orgs.create('Fault org');
    const orgId = org.org_id;
    await container.webhooks.update(orgId, { url: target.url('/fault') }, { actor: null });

    const first = await startWorkerProcess();
    children.push(first);

    const eventIds = await container.db.transaction(async (trx) => {
      const ids: string[] = [];
      for (let i = 0; i < EVENTS; i += 1) {
        const type = i % 2 === 0 ? 'task.started' : 'task.completed';
        ids.push(await appendOrgEvent(trx, { orgId, type, taskId: `task_${i}`, data: dataFor(type) }));
      }
      return ids;
    });
    await dispatchOrgEvents(container.queues, eventIds);

    // Kill it hard once deliveries are flowing, well before they are all done.
    await target.waitForRequests(150, { timeoutMs: 30_000 });
    first.kill('SIGKILL');
    await exited(first);
    const receivedAtKill = new Set(target.requests.map((request) => JSON.parse(request.body).id as string)).size;
    const unfinishedAtKill = Number(
      (await container.db('webhook_deliveries').where({ org_id: orgId }).whereNot({ status: 'succeeded' }).count({ n: '*' }))[0]!.n,
    );
    expect(receivedAtKill, 'events received before the kill').to.be.below(EVENTS);
    expect(unfinishedAtKill, 'deliveries in flight at the kill').to.be.greaterThan(0);

    const second = await startWorkerProcess();
    children.push(second);

    await waitFor(
      async () => {
        const rows = await container.db('webhook_deliveries').where({ org_id: orgId, status: 'succeeded' }).count({ n: '*' });
        return Number(rows[0]!.n) === EVENTS;
      },
      90_000,
      `all ${EVENTS} deliveries to succeed`,
    );

    const bodiesById = new Map<string, Set<string>>();
    for (const request of target.requests) {
      const id = JSON.parse(request.body).id as string;
      if (!bodiesById.has(id)) bodiesById.set(id, new Set());
      bodiesById.get(id)!.add(request.body);
    }
    expect([...bodiesById.keys()].sort()).to.deep.equal([...eventIds].sort());
    for (const [id, bodies] of bodiesById) expect(bodies.size, `bodies sent for ${id}`).to.equal(1);
    const undispatched = await container.db('org_events').whereIn('id', eventIds).whereNull('dispatched_at').count({ n: '*' });
    expect(Number(undispatched[0]!.n)).to.equal(0);

    second.kill('SIGTERM');
    await exited(second);
  });
});
