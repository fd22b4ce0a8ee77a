import type { ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { DesktopEvents } from '../../shared/desktop/protocol';
import type { DesktopClientOptions } from '../../shared/simulator/desktop-client';
import { testEnv } from '../support/environment';
import { RawDesktop } from '../support/raw-desktop';
import { request, startTestService, waitFor, type TestService } from '../support/service';
import { connectDesktop, script } from '../support/tasks';
import { TcpBalancer } from '../support/tcp-balancer';
import { freePort } from '../support/ports';
import { startChildProcess } from '../support/web-process';

/**
 * Restarting `web` (the process holding the computers' connections) must not fail a task: the
 * web processes run as child processes (Procfile type `web`) killed with SIGKILL or stopped with
 * SIGTERM, the workers here, the computers are reference desktop clients that reconnect by
 * themselves. Figures go to stdout for docs/operations.md.
 */
describe('web restarted while tasks run', function () {
  this.timeout(180_000);
  const COMPUTERS = 10;
  let run = 0;

  /** A web process of its own on `port`, with the test world's environment plus `env`. */
  const startWeb = (env: Record<string, string>, port: number) => startChildProcess(['web'], env, port);

  async function stopWeb(child: ChildProcess, signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }

  /** Each task types into Notes and thinks in between, for several seconds: long enough to live through a restart. */
  const prompt = script('open Notes', ...Array.from({ length: 12 }, () => ['type "a"', 'sleep 0.25']).flat(), 'done "finished"');

  interface World {
    workers: TestService;
    key: string;
    env: Record<string, string>;
    stop(): Promise<void>;
  }

  /** The agent and clock workers in this process, on a Redis prefix of this test's own (under the world's). */
  async function world(extra: Record<string, string> = {}): Promise<World> {
    const env = {
      DESKHAND_SCRIPTED_MODELS: '1',
      DESKHAND_REDIS_PREFIX: `${testEnv().DESKHAND_REDIS_PREFIX}-web-restart-${++run}`,
      ...extra,
    };
    const workers = await startTestService(env, ['worker-agent', 'worker-clock']);
    const { key } = await workers.newOrg();
    return { workers, key, env, stop: () => workers.stop() };
  }

  type Line = { event: string; at: number } & Record<string, unknown>;

  /** `count` reference desktop clients reaching the service at `baseUrl`, each on a new session. */
  async function computers(world: World, baseUrl: string, count: number, options: Partial<DesktopClientOptions> = {}) {
    const service = { baseUrl, api: (key: string | null, method: string, route: string, body?: unknown) => request(baseUrl, key, method, route, body) } as TestService;
    return Promise.all(
      Array.from({ length: count }, async () => {
        const lines: Line[] = [];
        const connected = await connectDesktop(service, world.key, { ...options, out: (line) => lines.push({ ...(line as { event: string }), at: Date.now() }) });
        return { code: connected.code, client: connected.client, lines };
      }),
    );
  }

  async function startTasks(world: World, baseUrl: string, codes: string[]): Promise<string[]> {
    return Promise.all(
      codes.map(async (code) => {
        const started = await request(baseUrl, world.key, 'POST', `/v1/sessions/${code}/tasks`, { prompt });
        expect(started.status, JSON.stringify(started.body)).to.equal(200);
        return started.body.task_id as string;
      }),
    );
  }

  const tasks = (world: World, ids: string[]): Promise<Array<{ id: string; status: string; error: string | null; actions: number }>> =>
    world.workers.running.container.db('tasks').whereIn('id', ids).select('id', 'status', 'error', 'actions');

  /** Waits until every task has run `actions` actions, so that the fault lands mid-task. */
  async function midTask(world: World, ids: string[], actions = 3): Promise<void> {
    await waitFor(async () => (await tasks(world, ids)).every((row) => row.actions >= actions && row.status === 'running'), 30_000, 'every task to be under way');
  }

  async function outcome(world: World, ids: string[], timeoutMs: number) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const rows = await tasks(world, ids);
      if (rows.every((row) => ['completed', 'failed', 'stopped'].includes(row.status)) || Date.now() > deadline) return rows;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  const tally = (rows: Array<{ status: string; error: string | null }>) =>
    rows.reduce<Record<string, number>>((counts, row) => ({ ...counts, [`${row.status}${row.error ? `: ${row.error}` : ''}`]: (counts[`${row.status}${row.error ? `: ${row.error}` : ''}`] ?? 0) + 1 }), {});

  const firstAfter = (lines: Line[], at: number, match: (line: Line) => boolean) => lines.find((line) => line.at >= at && match(line))?.at ?? null;
  const acting = (line: Line) => line.event === 'act' || line.event === 'act_repeated';
  const welcomed = (line: Line) => line.event === 'hello' && line.ok === true;

  it('kill -9 of the only web process: every computer reconnects, unanswered actions are sent again, 10 of 10 tasks complete', async () => {
    // The default act timeout (60 s): old code's lost actions fail within the test's wait (120 s).
    const w = await world();
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    let web = await startWeb(w.env, port);
    const desktops = await computers(w, baseUrl, COMPUTERS);
    try {
      const ids = await startTasks(w, baseUrl, desktops.map((desktop) => desktop.code));
      await midTask(w, ids);
      const killedAt = Date.now();
      await stopWeb(web.child, 'SIGKILL');
      const restartAt = Date.now();
      web = await startWeb(w.env, port);
      const readyAt = Date.now();
      const rows = await outcome(w, ids, 120_000);
      const reconnected = desktops.map((desktop) => firstAfter(desktop.lines, killedAt, welcomed));
      const resumed = desktops.map((desktop) => firstAfter(desktop.lines, readyAt, acting));
      const repeated = desktops.reduce((sum, desktop) => sum + desktop.lines.filter((line) => line.event === 'act_repeated' && line.at >= killedAt).length, 0);
      const ms = (values: Array<number | null>, from: number) => values.map((value) => (value === null ? 'never' : value - from));
      process.stdout.write(
        `      web kill -9: outcome ${JSON.stringify(tally(rows))}; restart (fork to ready) ${readyAt - restartAt} ms; ` +
          `ready -> reconnected ms ${JSON.stringify(ms(reconnected, readyAt))}; ready -> acting again ms ${JSON.stringify(ms(resumed, readyAt))}; ` +
          `kill -> acting again max ${Math.max(...resumed.map((value) => (value ?? Infinity) - killedAt))} ms; acts answered again from the client's memory: ${repeated}\n`,
      );
      expect(reconnected.every((at) => at !== null), 'every computer reconnects by itself').to.equal(true);
      expect(tally(rows)).to.deep.equal({ completed: COMPUTERS });
    } finally {
      await Promise.all(desktops.map((desktop) => desktop.client.close()));
      await stopWeb(web.child, 'SIGKILL');
      await w.stop();
    }
  });

  it('a SIGTERM rolling restart of two web processes: computers move to the other process, 10 of 10 tasks complete', async () => {
    const w = await world();
    const ports = [await freePort(), await freePort()];
    const balancer = new TcpBalancer(ports);
    const baseUrl = await balancer.listen();
    const webs = [await startWeb(w.env, ports[0]!), await startWeb(w.env, ports[1]!)];
    const desktops = await computers(w, baseUrl, COMPUTERS);
    try {
      const ids = await startTasks(w, baseUrl, desktops.map((desktop) => desktop.code));
      await midTask(w, ids);
      const rollStart = Date.now();
      // One process at a time: stopped with SIGTERM (its computers are disconnected and come
      // back through the balancer to the other), then started again.
      for (const index of [0, 1]) {
        await stopWeb(webs[index]!.child, 'SIGTERM');
        webs[index] = await startWeb(w.env, ports[index]!);
      }
      const rows = await outcome(w, ids, 90_000);
      // How long each computer was away: from each disconnect to its next welcome.
      const gaps = desktops.flatMap((desktop) =>
        desktop.lines.filter((line) => line.event === 'disconnected' && line.at >= rollStart).map((line) => (firstAfter(desktop.lines, line.at, welcomed) ?? Infinity) - line.at),
      );
      const offline = await w.workers.running.container.db('org_events').whereIn('session_id', desktops.map((desktop) => desktop.code)).where({ type: 'session.disconnected' }).count({ n: '*' }).first();
      process.stdout.write(
        `      web SIGTERM rolling restart: outcome ${JSON.stringify(tally(rows))}; computers moved ${gaps.length} times; ` +
          `disconnect -> welcomed again ms min ${Math.min(...gaps)} max ${Math.max(...gaps)}; session.disconnected events ${offline?.n}\n`,
      );
      expect(gaps.length).to.be.at.least(COMPUTERS);
      // The sessions went offline and came back as the spec says (session.disconnected, then connected).
      expect(Number(offline?.n)).to.be.at.least(COMPUTERS);
      expect(tally(rows)).to.deep.equal({ completed: COMPUTERS });
    } finally {
      await Promise.all(desktops.map((desktop) => desktop.client.close()));
      for (const web of webs) await stopWeb(web.child, 'SIGKILL');
      await balancer.close();
      await w.stop();
    }
  });

  it('a computer that does not come back within the grace: its task fails saying so, while one that comes back goes on', async () => {
    // Longer than the web process takes to restart here (2 to 4 s) and the staying computer to retry.
    const w = await world({ DESKHAND_RECONNECT_GRACE_MS: '10000' });
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    let web = await startWeb(w.env, port);
    const [staying] = await computers(w, baseUrl, 1, { reconnectDelayMs: 200 });
    // The computer that goes for good: a bare connection that never reconnects.
    const { body: session } = await request(baseUrl, w.key, 'POST', '/v1/sessions', {});
    const leaving = new RawDesktop(baseUrl);
    try {
      expect((await leaving.hello(session.code)).ok).to.equal(true);
      const ids = await startTasks(w, baseUrl, [staying!.code, session.code]);
      await waitFor(() => leaving.received.some((entry) => entry.event === DesktopEvents.act), 10_000, 'the act to the leaving computer');
      const stoppingAt = Date.now();
      await stopWeb(web.child, 'SIGTERM');
      web = await startWeb(w.env, port);
      const rows = await outcome(w, ids, 60_000);
      expect(rows.find((row) => row.id === ids[0])).to.include({ status: 'completed' });
      expect(rows.find((row) => row.id === ids[1])).to.include({ status: 'failed', error: 'The computer disconnected and did not come back within 10 seconds' });
      const { db } = w.workers.running.container;
      const failedAt = (await db('tasks').where({ id: ids[1] }).first('ended_at')).ended_at.getTime();
      const offlineAt = (await db('sessions').where({ code: session.code }).first('last_active_at')).last_active_at.getTime();
      process.stdout.write(`      grace 10 s: the absent computer's task failed ${failedAt - offlineAt} ms after its session went offline\n`);
      expect(failedAt - stoppingAt).to.be.at.least(10_000);
    } finally {
      leaving.close();
      await staying!.client.close();
      await stopWeb(web.child, 'SIGKILL');
      await w.stop();
    }
  });
});

