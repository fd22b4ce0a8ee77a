import { notFound } from '../../../shared/errors';
import type { ConsoleRouting } from '../console-routing';
import { renderPage } from '../views';

/** A task id as the API takes it (api/routes/tasks.routes.ts); anything else cannot be a task. */
const TASK_ID = /^task_[a-z0-9]{1,40}$/;

const STATUSES = ['queued', 'running', 'completed', 'failed', 'stopped'] as const;

/** A filter value from the query string: its first value, trimmed (the API judges what it means). */
function filterValue(value: string | string[] | undefined): string {
  return (Array.isArray(value) ? value[0] : value)?.trim() ?? '';
}

/**
 * Tasks (docs/console.md, "Pages: Tasks"): the org's tasks with the API's filters, kept current
 * while they run, and each task's page at its `replay_url`: what it was asked and how it ended,
 * its event timeline beside its recording frame by frame, its open question or approval to
 * answer, and Stop. The scripts read and change everything through /v1; the pages only render
 * what the person may see from the start.
 */
export function tasksPages({ router, container, page }: ConsoleRouting): void {
  router.get(
    '/tasks',
    page((ctx, signedIn) => {
      const filters = { session_id: filterValue(ctx.query.session_id), agent_id: filterValue(ctx.query.agent_id), status: filterValue(ctx.query.status) };
      renderPage(ctx, signedIn, 'tasks-list', { filters, statuses: STATUSES }, { title: 'Tasks', section: 'tasks', scripts: ['tasks-list.js'], pageData: { filters } });
    }),
  );

  router.get(
    '/tasks/:task_id',
    page(async (ctx, signedIn) => {
      const taskId = ctx.params.task_id!;
      if (!TASK_ID.test(taskId)) throw notFound(`No task ${taskId}`);
      // Only the signed-in person's org: another org's task is not found, as on /v1.
      const task = await container.tasks.get(signedIn.auth.orgId, taskId);
      renderPage(ctx, signedIn, 'tasks-task', { task }, { title: `Task ${task.task_id}`, section: 'tasks', scripts: ['tasks-task.js'], pageData: { task } });
    }),
  );
}
