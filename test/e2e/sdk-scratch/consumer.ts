// A TypeScript integrator's file, type-checked in the scratch project against the installed
// package's declarations: what should compile does, and each `@ts-expect-error` line must be an
// error (tsc fails on an unused one).
import { Deskhand, ConflictError, type Task, type TaskEvent, type Webhook } from '@deskhand/sdk';
import { verifyWebhook, type WebhookEvent } from '@deskhand/sdk/webhooks';

export async function integrate(deskhand: Deskhand, code: string): Promise<string | null> {
  const started: Task = await deskhand.sessions.startTask(code, { prompt: 'Print a test page', metadata: { ticket: '1042' } });
  const status: 'queued' | 'running' | 'completed' | 'failed' | 'stopped' = started.status;
  const follow = deskhand.tasks.follow(started.task_id, { waitMs: 25_000 });
  for await (const event of follow) {
    const seen: TaskEvent = event;
    if (seen.type === 'question') await deskhand.tasks.respond(started.task_id, { question_id: String(seen.data.question_id), answer: 'M' });
  }
  const hook: Webhook = await deskhand.webhook.update({ url: 'https://example.com/hooks', events: ['task.completed'] });
  const runner = await deskhand.request('get', '/v1/runners/{runner_id}', { path: { runner_id: 'rn_1' } });
  const runnerName: string = runner.name;
  const runners = await deskhand.request('get', '/v1/runners');
  const firstRunner: string | undefined = runners.data[0]?.runner_id;
  try {
    await deskhand.tasks.stop(started.task_id);
  } catch (error) {
    if (error instanceof ConflictError) return error.active_task_id ?? error.code ?? null;
  }

  // @ts-expect-error: a misspelt field is refused (prompt is required)
  await deskhand.sessions.startTask(code, { promt: 'x' });
  // @ts-expect-error: no such route
  await deskhand.request('get', '/v1/nothing', {});
  // @ts-expect-error: the path parameters are required
  await deskhand.request('get', '/v1/tasks/{task_id}', {});
  // @ts-expect-error: and so are the options that carry them
  await deskhand.request('get', '/v1/tasks/{task_id}');
  // @ts-expect-error: not an event type
  await deskhand.webhook.update({ events: ['task.exploded'] });
  // @ts-expect-error: a decision is approve or deny
  await deskhand.tasks.respond(started.task_id, { approval_id: 'appr_1', decision: 'maybe' });

  return `${status} ${hook.url} ${runnerName} ${firstRunner} ${follow.task?.result}`;
}

export function receive(rawBody: Buffer, header: string | string[] | undefined, secret: string): WebhookEvent | null {
  return verifyWebhook(rawBody, header, secret) ? (JSON.parse(rawBody.toString()) as WebhookEvent) : null;
}
