import { expect } from 'chai';
import pg from 'pg';
import path from 'node:path';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { deskhand } from '../support/cli';
import { testEnv } from '../support/environment';
import type { OwnPgBouncer } from '../support/pgbouncer';
import { request, waitFor, type TestService } from '../support/service';
import { connectDesktop, follow, script } from '../support/tasks';
import {
  FailoverFront,
  startPgBouncerOnGateway,
  startRedisClusterOn,
  startReceiverOn,
  TestNetwork,
  type HostProcess,
  type HostReceiver,
  type HostRedisCluster,
  type TestHost,
} from '../support/test-hosts';

/**
 * Deskhand on several hosts (issue 41): test hosts are network namespaces on a bridge
 * (test/support/test-hosts.ts), each process with its own loopback and its own temporary folder (TMPDIR).
 *
 *   10.77.0.1   the root namespace: PostgreSQL (127.0.0.1 only), PgBouncer (transaction mode) on
 *               the bridge's address, the fronts (the load balancer desktops and runners use),
 *               and this test (the API client, the people's computers)
 *   10.77.0.10  redis    Redis Cluster, 3 masters + 3 replicas, announcing 10.77.0.10
 *   10.77.0.11  web-a    web, worker-agent, worker-delivery
 *   10.77.0.12  web-b    web, worker-agent, worker-delivery
 *   10.77.0.13  back-a   worker-evals, worker-clock
 *   10.77.0.14  back-b   worker-evals, worker-clock
 *   10.77.0.20  hooks    the webhook receiver
 *   10.77.0.21  lab-a    a reference runner, through front A (web-a first, web-b if it does not answer)
 *   10.77.0.22  lab-b    a reference runner, through front B (web-b first)
 *
 * Desktops and runners reach the webs through a front that prefers one web and falls back to
 * the other, as a load balancer does; the test calls each web directly. Then web-a is cut off
 * with a task waiting for an approval and two asleep: its desktops come back through the front
 * to web-b, the approval is answered through web-b, and everything completes.
 */

const WEB_PORT = 8080;
const HOST_LAYOUT = [
  { label: 'web-a', octet: 11, types: ['web', 'worker-agent', 'worker-delivery'] },
  { label: 'web-b', octet: 12, types: ['web', 'worker-agent', 'worker-delivery'] },
  { label: 'back-a', octet: 13, types: ['worker-evals', 'worker-clock'] },
  { label: 'back-b', octet: 14, types: ['worker-evals', 'worker-clock'] },
] as const;

type Web = TestService;

/** The API of the web process at `baseUrl`, as the support helpers take it. */
const webAt = (baseUrl: string): Web => ({ baseUrl, api: (key: string | null, method: string, route: string, body?: unknown) => request(baseUrl, key, method, route, body) }) as TestService;

describe('Deskhand on several hosts: process types apart, a host cut off mid-task', function () {
  this.timeout(240_000);
  let network: TestNetwork | undefined;
  let cluster: HostRedisCluster | undefined;
  let bouncer: OwnPgBouncer | undefined;
  let receiver: HostReceiver;
  let db: pg.Pool | undefined;
  const hosts: Record<string, TestHost> = {};
  const fronts: FailoverFront[] = [];
  let frontA: string;
  let frontB: string;
  let webA: Web;
  let webB: Web;
  let key: string;
  let orgId: string;
  let serviceEnv: Record<string, string>;
  const desktops: DesktopClient[] = [];
  const runnerIds: Record<string, string> = {};

  /** Starts a Procfile process type on `host` (test/support/deskhand-process.ts) and waits until it is ready. */
  async function startDeskhand(host: TestHost, type: string): Promise<HostProcess> {
    const env = testEnv({
      ...serviceEnv,
      // A web's info lines (computers connected, hellos not said in time) explain a failure.
      ...(type === 'web' ? { PORT: String(WEB_PORT), BASE_URL: `http://${host.address}:${WEB_PORT}`, LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'info' } : { BASE_URL: frontA }),
    });
    const started = host.run(type, [process.execPath, '--import', 'tsx', 'test/support/deskhand-process.ts', type], { env, ipc: true });
    await new Promise<void>((resolve, reject) => {
      started.child.once('message', () => resolve());
      started.child.once('exit', (code, signal) => reject(new Error(`${type} on ${host.label} exited before it was ready (${code ?? signal}):\n${started.output()}`)));
    });
    return started;
  }

  before(async function () {
    this.timeout(120_000);
    try {
      await setUp();
    } catch (error) {
      if (network) console.log(network.outputs());
      throw error;
    }
  });

  async function setUp(): Promise<void> {
    network = await TestNetwork.create();
    for (const { label, octet } of [...HOST_LAYOUT, { label: 'redis', octet: 10 }, { label: 'hooks', octet: 20 }, { label: 'lab-a', octet: 21 }, { label: 'lab-b', octet: 22 }]) {
      hosts[label] = await network.addHost(label, octet);
    }
    // Each kept as it starts, so that the teardown ends those that did when another fails.
    await Promise.all([
      startRedisClusterOn(hosts.redis!).then((started) => (cluster = started)),
      startPgBouncerOnGateway(network).then((started) => (bouncer = started)),
      startReceiverOn(hosts.hooks!).then((started) => (receiver = started)),
    ].map((starting) => starting.then(() => undefined, (error: unknown) => error))).then((errors) => {
      const failed = errors.find((error) => error !== undefined);
      if (failed !== undefined) throw failed;
    });
    db = new pg.Pool({ connectionString: testEnv().DATABASE_URL, max: 2 });
    // The run's teardown drops the database with its connections: an idle one must not throw.
    db.on('error', () => undefined);

    const webs = ['web-a', 'web-b'].map((label) => ({ host: hosts[label]!.address, port: WEB_PORT }));
    const [front1, front2] = [new FailoverFront(webs), new FailoverFront([...webs].reverse())];
    fronts.push(front1, front2);
    [frontA, frontB] = await Promise.all([front1.listen(), front2.listen()]);
    webA = webAt(`http://${hosts['web-a']!.address}:${WEB_PORT}`);
    webB = webAt(`http://${hosts['web-b']!.address}:${WEB_PORT}`);

    serviceEnv = {
      DESKHAND_REDIS_CLUSTER_NODES: cluster!.seeds,
      // The test world's REDIS_URL (127.0.0.1:6379) stays set: on these hosts it points at
      // nothing, so a Redis user that ignored the cluster would fail.
      DESKHAND_REDIS_PREFIX: `hosts-${process.pid.toString(36)}`,
      DATABASE_URL: bouncer!.through(testEnv().DATABASE_URL!),
      DESKHAND_DATABASE_POOLER: 'transaction',
      DESKHAND_SCRIPTED_MODELS: '1',
      DESKHAND_ALLOW_PRIVATE_URLS: '1',
      DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS: '200,400,800,1600',
      DESKHAND_WEBHOOK_TIMEOUT_MS: '3000',
      DESKHAND_RUNNER_HEARTBEAT_MS: '300',
      DESKHAND_RUNNER_OFFLINE_AFTER_MS: '1500',
      // A killed worker's jobs go to another within seconds (defaults: 30 s and 30 s).
      DESKHAND_WORKER_LOCK_DURATION_MS: '4000',
      DESKHAND_WORKER_STALLED_INTERVAL_MS: '2000',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    };
    const started = Date.now();
    const [created] = await Promise.all([
      deskhand('orgs', 'create', '--name', 'Several hosts'),
      ...HOST_LAYOUT.flatMap((layout) => layout.types.map((type) => startDeskhand(hosts[layout.label]!, type))),
    ]);
    console.log(`      ${HOST_LAYOUT.reduce((sum, layout) => sum + layout.types.length, 0)} Deskhand processes on 4 hosts ready in ${Date.now() - started} ms`);
    expect(created.code, created.stderr).to.equal(0);
    ({ org_id: orgId, api_key: key } = JSON.parse(created.stdout) as { org_id: string; api_key: string });
    const hooked = await webA.api(key, 'PUT', '/v1/webhook', { url: receiver.url('/hooks') });
    expect(hooked.status, JSON.stringify(hooked.body)).to.equal(200);
  }

  after(async function () {
    this.timeout(60_000);
    await db?.end().catch(() => undefined);
    for (const desktop of desktops) await desktop.close().catch(() => undefined);
    for (const front of fronts) await front.close().catch(() => undefined);
    await cluster?.close().catch(() => undefined);
    await network?.close();
    await bouncer?.close();
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed' && network) console.log(network.outputs());
  });

  /** A new session on `web`, its reference desktop connected through `front`, and a task started on it. */
  async function startTask(web: Web, front: string, ...steps: string[]): Promise<{ taskId: string; desktop: DesktopClient; lines: object[] }> {
    const { code, client, lines } = await connectDesktop(web, key, { baseUrl: front, reconnectDelayMs: 300 });
    desktops.push(client);
    const started = await web.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script(...steps) });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    return { taskId: started.body.task_id as string, desktop: client, lines };
  }

  /** Every org event was delivered: a succeeded delivery in PostgreSQL, and the receiver on its host saw the event's id. */
  async function everyEventDelivered(): Promise<boolean> {
    const events = (await db!.query<{ id: string }>('select id from org_events where org_id = $1', [orgId])).rows;
    const succeeded = new Set((await db!.query<{ event_id: string }>("select event_id from webhook_deliveries where org_id = $1 and status = 'succeeded'", [orgId])).rows.map((row) => row.event_id));
    return events.length > 0 && events.every((event) => succeeded.has(event.id) && receiver.withId(event.id).length > 0);
  }

  it('runs a task with a question and an approval answered through web-a and followed through web-b; every webhook event reaches the receiver host', async () => {
    const { taskId } = await startTask(webA, frontA, 'ask "Which report?" "Q3" "Q4"', 'request_approval "Send the report"', 'done "Sent {answer}"');
    const asked = await follow(webB, key, taskId, (task) => task.pending?.type === 'question');
    // A long poll on web-b waits on the task's channel; the answer given to web-a wakes it.
    const cursor = asked.events.at(-1).cursor as number;
    let pollEnded = 0;
    const poll = webB.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor}&wait_ms=30000`).finally(() => (pollEnded = Date.now()));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(pollEnded, 'the long poll ended before the answer').to.equal(0);
    const answering = Date.now();
    const answered = await webA.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { question_id: asked.task.pending.question_id, answer: 'Q3' });
    expect(answered.status, JSON.stringify(answered.body)).to.equal(200);
    const woken = await poll;
    expect(woken.status).to.equal(200);
    expect(woken.body.data.length, 'events in the woken poll').to.be.greaterThan(0);
    const wokeAfter = pollEnded - answering;
    expect(wokeAfter, 'ms from the answer on web-a to the long poll on web-b').to.be.below(5_000);

    const approval = (await follow(webB, key, taskId, (task) => task.pending?.type === 'approval')).task.pending;
    const decided = await webA.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { approval_id: approval.approval_id, decision: 'approve' });
    expect(decided.status, JSON.stringify(decided.body)).to.equal(200);
    const { task } = await follow(webB, key, taskId, (each) => each.done, 30_000);
    expect(task).to.include({ status: 'completed', result: 'Sent Q3' });
    await waitFor(everyEventDelivered, 30_000, 'every org event to reach the receiver host');
    console.log(`      long poll on web-b answered ${wokeAfter} ms after the answer to web-a; ${receiver.deliveries.length} webhook requests`);
  });

  it('ends a test run on the reference runners of both labs', async () => {
    for (const [lab, front] of [['lab-a', frontA], ['lab-b', frontB]] as const) {
      const created = await webA.api(key, 'POST', '/v1/runners', { name: `${lab} rack` });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
      runnerIds[lab] = created.body.runner_id;
      // Its data folder is in the runner's own temporary folder, on its host.
      hosts[lab]!.run('runner', [process.execPath, 'bin/deskhand.js', 'runner', '--token', created.body.token, '--base-url', front, '--data-dir', path.join(hosts[lab]!.tmp, 'runner'), '--name', `${lab} rack`, '--slots', '1', '--images', 'macos-15'], {
        env: testEnv(),
      });
    }
    for (const [lab, web] of [['lab-a', webB], ['lab-b', webA]] as const) {
      await waitFor(async () => (await web.api(key, 'GET', `/v1/runners/${runnerIds[lab]}`)).body.status === 'online', 30_000, `the runner on ${lab} online`);
    }
    const cases = await webB.api(key, 'POST', '/v1/test_cases/batch', {
      cases: [
        { key: 'saves', name: 'saves a note', prompt: 'open Notes\ntype "Hello"\nkey cmd+s\ndone "Saved Hello"', start_state: 'macos-15', success: { check_script: 'grep -q Hello $HOME/Documents/Untitled.txt' } },
        { key: 'judged', name: 'judged', prompt: 'done "Saved Hello"', start_state: 'macos-15', success: { rubric: 'The result says "Saved Hello"' } },
      ],
    });
    expect(cases.status, JSON.stringify(cases.body)).to.equal(200);
    const started = Date.now();
    const testRun = await webB.api(key, 'POST', '/v1/test_runs', { test_case_ids: cases.body.data.map((item: { test_case_id: string }) => item.test_case_id) });
    expect(testRun.status, JSON.stringify(testRun.body)).to.equal(200);
    const ended = await waitFor(async () => {
      const read = (await webA.api(key, 'GET', `/v1/test_runs/${testRun.body.test_run_id}`)).body;
      return read.status === 'completed' ? read : null;
    }, 60_000, 'the test run to end');
    expect(ended.summary.tries).to.include({ total: 2, passed: 2 });
    console.log(`      test run of 2 tries ended in ${Date.now() - started} ms`);
  });

  it('works a start state\'s live view through both webs (one of them not holding its runner), and runs a try on the runner that keeps its saved disk', async () => {
    const made = await webA.api(key, 'POST', '/v1/start_states', { name: 'by hand, across webs', from: 'macos-15', method: 'hand' });
    expect(made.status, JSON.stringify(made.body)).to.equal(200);
    const view = new URL(made.body.view.screen_url).pathname;
    const input = new URL(made.body.view.input_url).pathname;
    // The screen and the input go to the runner with an acknowledgement, through whichever web holds its connection.
    for (const web of [webB, webA]) await waitFor(async () => (await fetch(`${web.baseUrl}${view}/screen.png`)).status === 200, 20_000, `the screen through ${web.baseUrl}`);
    const inputs: Array<[Web, object]> = [[webA, { type: 'click', x: 870, y: 860 }], [webB, { type: 'type', text: 'hello' }], [webA, { type: 'key', keys: 'cmd+s' }]];
    for (const [web, body] of inputs) {
      const answered = await request(web.baseUrl, null, 'POST', input, body);
      expect(answered.status, `${web.baseUrl}: ${JSON.stringify(answered.body)}`).to.equal(200);
      expect(answered.body).to.include({ ok: true });
    }
    const saving = await webB.api(key, 'POST', `/v1/start_states/${made.body.start_state_id}/save`);
    expect(saving.status, JSON.stringify(saving.body)).to.equal(200);
    await waitFor(async () => (await webA.api(key, 'GET', `/v1/start_states/${made.body.start_state_id}`)).body.status === 'ready', 20_000, 'the state saved');

    // The saved disk is in one runner's own temporary folder, on its host: the try must go there.
    const cases = await webB.api(key, 'POST', '/v1/test_cases/batch', {
      cases: [{ key: 'kept', name: 'starts from the saved note', prompt: 'done "Kept"', start_state: made.body.start_state_id, success: { check_script: 'grep -q hello $HOME/Documents/Untitled.txt' } }],
    });
    expect(cases.status, JSON.stringify(cases.body)).to.equal(200);
    const testRun = await webA.api(key, 'POST', '/v1/test_runs', { test_case_ids: [cases.body.data[0].test_case_id] });
    expect(testRun.status, JSON.stringify(testRun.body)).to.equal(200);
    const ended = await waitFor(async () => {
      const read = (await webB.api(key, 'GET', `/v1/test_runs/${testRun.body.test_run_id}`)).body;
      return read.status === 'completed' ? read : null;
    }, 60_000, 'the test run on the saved state to end');
    expect(ended.summary.tries).to.include({ total: 1, passed: 1 });
  });

  it('loses nothing when web-a\'s host is cut off with a task waiting for an approval and two asleep: its desktops come back through web-b, every webhook event arrives with its id', async () => {
    const waiting = await startTask(webA, frontA, 'request_approval "Send the report"', 'open Notes', 'done "approved after the cut"');
    const sleeping = await startTask(webA, frontA, 'open Notes', 'sleep 6', 'type "after the cut"', 'done "slept through the cut"');
    const sleepingOnB = await startTask(webB, frontB, 'open Notes', 'sleep 6', 'type "after the cut"', 'done "slept on web-b"');
    const approval = (await follow(webB, key, waiting.taskId, (task) => task.pending?.type === 'approval')).task.pending;
    for (const { taskId } of [sleeping, sleepingOnB]) await follow(webB, key, taskId, (_task, events) => events.some((event) => event.type === 'sleep'));
    const webBAddress = `${hosts['web-b']!.address}:${WEB_PORT}`;
    const throughBBefore = fronts[0]!.connections.get(webBAddress) ?? 0;

    const cutAt = Date.now();
    const killed = await network!.cutOff(hosts['web-a']!);
    expect(killed.length, 'processes killed on web-a').to.be.at.least(3);
    // Answered through the web that is left, while web-a's computers are still coming back.
    const decided = await webB.api(key, 'POST', `/v1/tasks/${waiting.taskId}/respond`, { approval_id: approval.approval_id, decision: 'approve' });
    expect(decided.status, JSON.stringify(decided.body)).to.equal(200);

    const ends: Record<string, number> = {};
    const expected: Array<[string, string]> = [[waiting.taskId, 'approved after the cut'], [sleeping.taskId, 'slept through the cut'], [sleepingOnB.taskId, 'slept on web-b']];
    await Promise.all(
      expected.map(async ([taskId, result]) => {
        const { task } = await follow(webB, key, taskId, (each) => each.done, 90_000, { retryServerErrors: true });
        ends[taskId] = Date.now() - cutAt;
        expect(task, taskId).to.include({ status: 'completed', result });
      }),
    );
    // web-a's two computers and its runner came back through front A, to web-b: each computer
    // was welcomed again (hello) after its connection closed with web-a's process.
    expect((fronts[0]!.connections.get(webBAddress) ?? 0) - throughBBefore, 'connections front A sent to web-b after the cut').to.be.at.least(2);
    for (const { lines } of [waiting, sleeping]) {
      const events = lines as Array<{ event: string; ok?: boolean; reason?: string }>;
      expect(events.filter((line) => line.event === 'hello' && line.ok).length, JSON.stringify(events)).to.equal(2);
      // At once from its connection, not 45 s later from socket.io's ping timeout.
      expect(events.find((line) => line.event === 'disconnected')?.reason, 'how the computer learnt web-a was gone').to.be.oneOf(['transport close', 'transport error']);
    }
    await waitFor(async () => (await webB.api(key, 'GET', `/v1/runners/${runnerIds['lab-a']}`)).body.status === 'online', 20_000, 'the runner on lab-a online again, through web-b');

    await waitFor(everyEventDelivered, 60_000, 'every org event delivered after the cut');
    const completed = (await db!.query<{ id: string; data: unknown }>("select id, data from org_events where org_id = $1 and type = 'task.completed'", [orgId])).rows;
    for (const [taskId] of expected) {
      const event = completed.find((row) => JSON.stringify(row.data).includes(taskId));
      expect(event, `task.completed of ${taskId}`).to.not.equal(undefined);
      expect(receiver.withId(event!.id).length, `copies of ${event!.id}`).to.be.greaterThan(0);
    }
    const ids = receiver.deliveries.map((delivery) => delivery.id);
    const repeated = ids.length - new Set(ids).size;
    const times = Object.values(ends);
    console.log(`      web-a cut off (${killed.length} processes): the 3 tasks completed ${Math.min(...times)}-${Math.max(...times)} ms after; ${ids.length} webhook requests, ${repeated} repeats of an id`);
  });
});
