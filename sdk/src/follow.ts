import type { Task, TaskEvent, TaskEventPage } from './types.js';

export interface FollowOptions {
  /** Stops following: the loop ends by throwing the signal's reason (an AbortError by default). */
  signal?: AbortSignal;
  /** The last cursor you already have; events after it are yielded. Default 0 (every event). */
  after?: number;
  /** How long each long poll waits for new events, in milliseconds (at most 55000). Default 25000. */
  waitMs?: number;
}

/** Reads one page of events after `after`, waiting up to `waitMs` for new ones. */
export type ReadEvents = (after: number, waitMs: number, signal: AbortSignal | undefined) => Promise<TaskEventPage>;

/**
 * A task's events, followed through the long poll (`GET /v1/tasks/{id}/events?after=&wait_ms=`),
 * as an async iterable: each event once, in cursor order, until the task's final event
 * (`completed`, `failed` or `stopped`: the task is `done` and nothing comes after it). It answers
 * nothing itself: on a `question` or `approval` event, respond through `tasks.respond`.
 *
 * `task` is the task as the latest page returned it: after the loop, the ended task.
 */
export class TaskFollow implements AsyncIterable<TaskEvent> {
  /** The task as of the latest page read (null before the first). */
  task: Task | null = null;
  /** The cursor of the last event yielded: pass it as `after` to resume elsewhere. */
  cursor: number;
  private started = false;

  constructor(
    readonly taskId: string,
    private readonly read: ReadEvents,
    private readonly options: FollowOptions = {},
  ) {
    const waitMs = options.waitMs ?? 25_000;
    if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > 55_000) throw new RangeError('waitMs must be an integer from 0 to 55000');
    this.cursor = options.after ?? 0;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<TaskEvent> {
    // One pass only: a second loop over the same follow would yield nothing new and confuse.
    if (this.started) throw new Error('a TaskFollow can be iterated once; call tasks.follow again (with after: follow.cursor) to resume');
    this.started = true;
    const waitMs = this.options.waitMs ?? 25_000;
    for (;;) {
      this.options.signal?.throwIfAborted();
      const page = await this.read(this.cursor, waitMs, this.options.signal);
      this.task = page.task;
      for (const event of page.data) {
        // The service returns events after `after` in order; this guard keeps "once" true even
        // if a retried request overlaps the previous page.
        if (event.cursor <= this.cursor) continue;
        this.cursor = event.cursor;
        yield event;
        this.options.signal?.throwIfAborted();
      }
      this.cursor = Math.max(this.cursor, page.cursor);
      // Ended, and every event up to the task's own cursor read: nothing more will come.
      if (page.task.done && this.cursor >= page.task.cursor) return;
    }
  }
}
