import { DesktopClient, type DesktopClientOptions } from '../../shared/simulator/desktop-client';
import type { Knex } from '../../shared/db/knex';
import type { TestService } from './service';

/** Starts the reference desktop client on a new session; returns both, with the session's one-time token. */
export async function connectDesktop(
  service: TestService,
  key: string,
  options: Partial<DesktopClientOptions> = {},
  session: Record<string, unknown> = {},
): Promise<{ code: string; token: string; client: DesktopClient; lines: object[] }> {
  const created = await service.api(key, 'POST', '/v1/sessions', session);
  if (created.status !== 200) throw new Error(`could not create a session: ${JSON.stringify(created.body)}`);
  const lines: object[] = [];
  const client = new DesktopClient({
    baseUrl: service.baseUrl,
    code: created.body.code,
    os: 'mac',
    appVersion: '1.0.20',
    name: 'Test Mac',
    width: 1440,
    height: 900,
    accessibility: true,
    delayMs: 0,
    out: (line) => lines.push(line),
    ...options,
  });
  await client.start();
  return { code: created.body.code, token: created.body.token, client, lines };
}

/**
 * Follows a task through the long-poll endpoint until `until(task)` holds or it ends. With
 * `retryServerErrors`, a 5xx answer is retried after 200 ms, as the spec tells clients to (for
 * fault tests, where one is expected); otherwise it fails the follow.
 */
export async function follow(
  service: TestService,
  key: string,
  taskId: string,
  until: (task: any, events: any[]) => boolean = (task) => task.done,
  timeoutMs = 15_000,
  options: { retryServerErrors?: boolean } = {},
): Promise<{ task: any; events: any[] }> {
  const events: any[] = [];
  let cursor = 0;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor}&wait_ms=2000`);
    if (response.status >= 500 && options.retryServerErrors && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    if (response.status !== 200) throw new Error(`follow failed: ${JSON.stringify(response.body)}`);
    events.push(...response.body.data);
    cursor = response.body.cursor;
    const task = response.body.task;
    if (until(task, events) || task.done) return { task, events };
    if (Date.now() > deadline) throw new Error(`task ${taskId} did not get there in ${timeoutMs} ms: ${JSON.stringify(task)}`);
  }
}

/** Follows a task until it ends, deciding every approval it waits for through the API with `decision`. */
export async function followDecidingApprovals(
  service: TestService,
  key: string,
  taskId: string,
  decision: 'approve' | 'deny',
  timeoutMs = 15_000,
): Promise<{ task: any; events: any[] }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const followed = await follow(service, key, taskId, (task) => task.pending?.type === 'approval', Math.max(0, deadline - Date.now()));
    if (followed.task.done) return followed;
    const decided = await service.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { approval_id: followed.task.pending.approval_id, decision });
    if (decided.status !== 200) throw new Error(`respond failed: ${JSON.stringify(decided.body)}`);
  }
}

/** A script for the scripted model, one step per line. */
export const script = (...lines: string[]) => lines.join('\n');

/**
 * A task that runs and then sleeps for an hour on a new session's reference desktop client, so
 * that nothing of the loop's touches it while a test does; returns it once asleep.
 */
export async function startSleepingTask(service: TestService, key: string): Promise<{ taskId: string; desktop: DesktopClient }> {
  const connected = await connectDesktop(service, key);
  const started = await service.api(key, 'POST', `/v1/sessions/${connected.code}/tasks`, { prompt: script('sleep 3600') });
  if (started.status !== 200) throw new Error(JSON.stringify(started.body));
  const taskId = started.body.task_id as string;
  await follow(service, key, taskId, (_task, events) => events.some((event) => event.type === 'sleep'));
  return { taskId, desktop: connected.client };
}

/** Runs `during` and counts the follow reads (a task's row with its events) sent on `db` meanwhile. */
export async function countFollowReads(db: Knex, during: () => Promise<unknown>): Promise<number> {
  let reads = 0;
  const onQuery = (query: { sql: string }) => {
    if (query.sql.includes('from tasks t')) reads++;
  };
  db.on('query', onQuery);
  try {
    await during();
  } finally {
    db.off('query', onQuery);
  }
  return reads;
}
