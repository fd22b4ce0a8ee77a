import type { Command } from 'commander';
import type { Static } from '@sinclair/typebox';
import type { TaskEventSchema, TaskSchema } from '../api/schemas/tasks.schemas';
import { apiFromEnv, errorMessage, requestJson, UnreachableError, warnOnStderr, type EvalsApi } from './evals-api';

/**
 * `deskhand tasks follow TASK_ID [--json]`: a task's events in the terminal as they happen, through
 * the long poll (`GET /v1/tasks/{id}/events?after=CURSOR&wait_ms=…`), until the task ends. The
 * key comes from `DESKHAND_API_KEY`, the service from `DESKHAND_BASE_URL`, as for `evals`.
 */

type TaskEvent = Static<typeof TaskEventSchema>;
type Task = Static<typeof TaskSchema>;

interface EventsPage {
  data: TaskEvent[];
  cursor: number;
  task: Task;
}

/** How long each long poll waits for new events (below the route's 55 s ceiling and common proxy timeouts). */
const WAIT_MS = 25_000;
/** Consecutive failed polls (unreachable, 5xx) ridden out before giving up: a web process may restart meanwhile. */
const MAX_FAILED_POLLS = 10;
/** The wait after the Nth failed poll in a row: one more second each time, at most five. */
const retryDelayMs = (failed: number): number => Math.min(failed, 5) * 1000;
/** How long the polls are retried before giving up, in seconds (said in the warning). */
const RETRY_SECONDS = Array.from({ length: MAX_FAILED_POLLS - 1 }, (_, i) => retryDelayMs(i + 1)).reduce((sum, ms) => sum + ms, 0) / 1000;

/** Where the command writes; the process's own streams by default. */
export interface TasksCommandIo {
  out(text: string): void;
  /** A line for the person at the terminal (stderr): the service cannot be reached, and what is done about it. */
  warn(message: string): void;
}

const processIo: TasksCommandIo = { out: (text) => process.stdout.write(text), warn: warnOnStderr };

export function registerTasksCommand(program: Command, io: TasksCommandIo = processIo): Command {
  const tasks = program.command('tasks').description('tasks, through the API (DESKHAND_API_KEY, DESKHAND_BASE_URL)');
  tasks
    .command('follow')
    .description("print a task's events as they happen, until it ends (exit 0 when it completed, 1 when it failed or was stopped)")
    .argument('<task_id>', "the task's id (task_…)")
    .option('--json', 'one JSON object per event, then the ended task as the last line')
    .action(async (taskId: string, options: { json?: boolean }) => {
      const task = await followTask(apiFromEnv(io.warn), taskId, io.warn, (page) => {
        for (const event of page.data) io.out(options.json ? `${JSON.stringify(event)}\n` : `${readableEvent(event)}\n`);
      });
      io.out(options.json ? `${JSON.stringify({ task })}\n` : `${readableEnd(task)}\n`);
      if (task.status !== 'completed') process.exitCode = 1;
    });
  return tasks;
}

/**
 * Long-polls the task's events from the start until it is done, handing each page to `onPage`;
 * answers the ended task. A poll that fails for want of the service (unreachable, 5xx) is told
 * through `warn` at once, once per outage, and retried for about `RETRY_SECONDS`.
 */
async function followTask(api: EvalsApi, taskId: string, warn: (message: string) => void, onPage: (page: EventsPage) => void): Promise<Task> {
  let cursor = 0;
  let failed = 0;
  for (;;) {
    let page: EventsPage;
    try {
      const answer = await requestJson<EventsPage>(api, 'GET', `/v1/tasks/${encodeURIComponent(taskId)}/events?after=${cursor}&wait_ms=${WAIT_MS}`);
      if (!answer.ok || !answer.body) {
        if (answer.status < 500) throw new Error(`following ${taskId} refused (${answer.status}): ${errorMessage(answer)}`);
        throw new UnreachableError(`${api.baseUrl} (DESKHAND_BASE_URL) answered ${answer.status}: ${errorMessage(answer)}`);
      }
      page = answer.body;
    } catch (error) {
      if (!(error instanceof UnreachableError)) throw error;
      if (++failed >= MAX_FAILED_POLLS) throw new Error(`gave up following ${taskId} after ${MAX_FAILED_POLLS} failed tries: ${error.message}`);
      if (failed === 1) warn(`${error.message}; retrying for about ${RETRY_SECONDS} s (Ctrl+C stops).`);
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs(failed)));
      continue;
    }
    if (failed > 0) warn(`reached ${api.baseUrl} again; following ${taskId}.`);
    failed = 0;
    onPage(page);
    cursor = page.cursor;
    if (page.task.done) return page.task;
  }
}

/** `12:00:03  #4 action         click "Send"` */
function readableEvent(event: TaskEvent): string {
  const time = event.ts.slice(11, 19);
  return `${time}  #${String(event.cursor).padEnd(4)} ${event.type.padEnd(13)} ${event.message}`;
}

function readableEnd(task: Task): string {
  const detail = task.status === 'completed' ? task.result : task.error;
  return `Task ${task.task_id} ${task.status}${detail ? `: ${detail}` : ''}`;
}
