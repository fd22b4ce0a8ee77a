import type { Knex } from '../db/knex';
import type { Notifier } from '../notifier';
import { notFound } from '../errors';
import { decodeTaskNote, taskChannel, type TaskNote } from './task-change';
import { isDone, toTaskEvent, type Task, type TaskEvent } from './task-object';
import { readTaskAndEventsAfter, type TaskObjectRow } from './tasks.repository';

/** What a follower is answered: the events after its cursor, the cursor to ask from next, the task. */
export interface FollowAnswer {
  data: TaskEvent[];
  cursor: number;
  task: Task;
}

/** What one follow read sees: the task, then its events after the cursor asked for. */
export interface FollowState {
  row: TaskObjectRow;
  data: TaskEvent[];
}

/** What the last follow read of a task found, and where its channel stood when it was sent. */
interface FollowedTask {
  orgId: string;
  cursor: number;
  done: boolean;
  mark: string;
  /** `performance.now()` of the read. */
  at: number;
}

/**
 * How long a follow read (or a note heard) may stand in for a new one while the task's channel
 * stays subscribed. Only a lost notification (the writer's PUBLISH failed while this process's
 * subscriber stayed connected) can make it wrong: a follower asking within this time then waits
 * for the next event or the end of its wait, as followers already waiting do. As long as a
 * channel lingers: with 1 s, followers that came back later than that under load (five per task,
 * 500 events/s, on two busy cores) each sent a read, the reads queued for the pool, answers ran
 * later still, and the web process fell seconds behind (docs/benchmarks.md, follow).
 */
const FOLLOWED_TTL_MS = 10_000;
const FOLLOWED_MAX = 10_000;

/** A gapless run of a task's newest events, as its notes carried them. */
interface RecentNotes {
  /** Every event after this cursor, up to `task.cursor`, is in `events`. */
  from: number;
  events: TaskEvent[];
  task: TaskObjectRow;
  /** Size of the notes the run came from, to bound memory. */
  chars: number;
  /**
   * The last answer made from this run: the followers a note wakes at one cursor share it (and
   * its JSON) for SHARED_ANSWER_MS, rather than each building the task object anew.
   */
  answered?: { after: number; at: number; answer: FollowAnswer };
}

/** How long followers of one task at one cursor may share an answer (its `active_seconds` is that old). */
const SHARED_ANSWER_MS = 100;

/** Bounds of the recent runs: per task (events, and characters of the notes) and tasks. */
const RECENT_MAX_EVENTS = 50;
const RECENT_MAX_CHARS = 64 * 1024;
const RECENT_MAX_TASKS = 10_000;

/** Most events one answer carries; a follower further behind asks again from its new cursor. */
const EVENTS_PER_PAGE = 500;

export interface FollowedTasksDeps {
  db: Knex;
  notifier: Notifier;
  /** The spec's Task object of a row, as of now. */
  toTask(row: TaskObjectRow): Task;
}

/**
 * What one web process knows of the tasks it serves followers, and the answers it makes from
 * that: the newest events its notes carried, the last read of each task, the reads about to be
 * sent. The waiting itself is `TaskFollowers`'. Everything here is a copy of committed rows that
 * only saves a read: a follower it cannot answer is answered from PostgreSQL, so another process
 * needs none of it.
 */
export class FollowedTasks {
  /** Follow reads not sent yet, by org, task and cursor; see `read`. */
  private readonly unsentReads = new Map<string, Promise<FollowState>>();
  /** The last follow read of each followed task; see `nothingNewSinceLastRead`. */
  private readonly followed = new Map<string, FollowedTask>();
  /** The newest events of followed tasks, from their notes; see `fromRecentNotes`. */
  private readonly recent = new Map<string, RecentNotes>();
  /** The last note decoded: every follower of a task hears the same message. */
  private lastNote: { message: string; note: TaskNote | null } | null = null;

  constructor(private readonly deps: FollowedTasksDeps) {
    // Notes of followed tasks, heard also between one poll of a follower and its next. Once
    // nobody has followed a task for a while its channel is released, its notes go unheard, and
    // what was kept of them goes: it would be out of date, and a web process would otherwise hold
    // the newest events of every task it ever served (up to RECENT_MAX_TASKS).
    const prefix = taskChannel('');
    deps.notifier.observe(prefix, {
      message: (_name, message) => void this.heard(message),
      released: (name) => {
        const taskId = name.slice(prefix.length);
        this.recent.delete(taskId);
        this.followed.delete(taskId);
      },
    });
  }

  /**
   * Decodes a task's note (once per message, however many followers hear it). A note that
   * carries what its change wrote extends the task's recent events (see `fromRecentNotes`) and
   * counts as a read of everything up to its cursor, sent the moment it was heard (see
   * `nothingNewSinceLastRead`).
   */
  heard(message: string): TaskNote | null {
    if (this.lastNote?.message === message) return this.lastNote.note;
    const note = decodeTaskNote(message);
    this.lastNote = { message, note };
    if (note?.task && note.events && note.from !== undefined) {
      const taskId = note.task.id;
      this.rememberRecent(taskId, { from: note.from, events: note.events, task: note.task }, message.length);
      const known = this.followed.get(taskId);
      const mark = this.deps.notifier.mark(taskChannel(taskId));
      if (mark && (!known || known.cursor <= note.cursor)) {
        this.rememberFollowed(taskId, { orgId: note.task.org_id, cursor: note.cursor, done: isDone(note.task.status), mark, at: performance.now() });
      }
    }
    return note;
  }

  /** Appends a note's events to the task's recent run when they follow on from it; else starts a new run. */
  private rememberRecent(taskId: string, note: { from: number; events: TaskEvent[]; task: TaskObjectRow }, chars: number): void {
    const held = this.recent.get(taskId);
    if (held && note.from === held.task.cursor && held.chars + chars <= RECENT_MAX_CHARS) {
      held.answered = undefined;
      held.events.push(...note.events);
      held.task = note.task;
      held.chars += chars;
      if (held.events.length > RECENT_MAX_EVENTS) {
        held.events.splice(0, held.events.length - RECENT_MAX_EVENTS);
        held.from = held.events[0]!.cursor - 1;
      }
      return;
    }
    // A note older than the run (notes may arrive out of order) changes nothing.
    if (held && note.task.cursor <= held.task.cursor) return;
    if (this.recent.size >= RECENT_MAX_TASKS && !held) this.recent.clear();
    this.recent.set(taskId, { from: note.from, events: [...note.events], task: note.task, chars });
  }

  /**
   * The answer to a follower at `after` from the task's recent notes, when they hold every event
   * after it: a gapless run of committed events and the task as the newest of them left it. It
   * is the answer a read would have given a moment earlier; null sends the follower to the
   * database (events before the run, another org's task, or nothing new to tell).
   */
  fromRecentNotes(orgId: string, taskId: string, after: number): FollowAnswer | null {
    const held = this.recent.get(taskId);
    if (!held || held.task.org_id !== orgId || after < held.from || after >= held.task.cursor) return null;
    const now = performance.now();
    if (held.answered && held.answered.after === after && now - held.answered.at < SHARED_ANSWER_MS) return held.answered.answer;
    const answer = this.answer(after, { row: held.task, data: held.events.slice(after - held.from) });
    held.answered = { after, at: now, answer };
    return answer;
  }

  /**
   * The task and its events after `after`, read now. Identical reads asked for in the same turn
   * of the event loop share one pair of queries: the followers of a task that one notification
   * wakes, or that ask again together, cost one read, not one each. A read is shared only until
   * it is sent, so whoever joins it still sees everything committed before they asked.
   */
  read(orgId: string, taskId: string, after: number): Promise<FollowState> {
    const key = `${orgId} ${taskId} ${after}`;
    let read = this.unsentReads.get(key);
    if (!read) {
      read = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        this.unsentReads.delete(key);
        const mark = this.deps.notifier.mark(taskChannel(taskId));
        const found = await readTaskAndEventsAfter(this.deps.db, orgId, taskId, after, EVENTS_PER_PAGE);
        if (!found) throw notFound(`No task ${taskId}`);
        const { row, events } = found;
        if (mark) this.rememberFollowed(taskId, { orgId: row.org_id, cursor: row.cursor, done: isDone(row.status), mark, at: performance.now() });
        return { row, data: events.map(toTaskEvent) };
      });
      this.unsentReads.set(key, read);
    }
    return read;
  }

  private rememberFollowed(taskId: string, state: FollowedTask): void {
    if (this.followed.size >= FOLLOWED_MAX && !this.followed.has(taskId)) {
      const stale = performance.now() - FOLLOWED_TTL_MS;
      for (const [id, entry] of this.followed) if (entry.at < stale) this.followed.delete(id);
      if (this.followed.size >= FOLLOWED_MAX) this.followed.clear();
    }
    this.followed.set(taskId, state);
  }

  /**
   * Whether a follower at `after` can go straight to waiting: a read sent while the task's
   * channel was already subscribed (or a note heard on it) found no event after `after` and the
   * task not done, and the channel has heard nothing since. Anything committed after that read is
   * published after it, so it will wake the wait; there is nothing to read before then.
   */
  nothingNewSinceLastRead(orgId: string, taskId: string, after: number): boolean {
    const known = this.followed.get(taskId);
    return (
      known !== undefined &&
      known.orgId === orgId &&
      known.cursor <= after &&
      !known.done &&
      performance.now() - known.at < FOLLOWED_TTL_MS &&
      known.mark === this.deps.notifier.mark(taskChannel(taskId))
    );
  }

  /** What there is after `after` now: from the task's recent notes, else read. */
  answerNow(orgId: string, taskId: string, after: number): FollowAnswer | Promise<FollowAnswer> {
    return this.fromRecentNotes(orgId, taskId, after) ?? this.read(orgId, taskId, after).then((state) => this.answer(after, state));
  }

  /** The answer to a follower at `after` from what a read (or the notes) found; null when there is nothing to tell yet. */
  newsIn(after: number, state: FollowState): FollowAnswer | null {
    return state.data.length > 0 || isDone(state.row.status) ? this.answer(after, state) : null;
  }

  private answer(after: number, { row, data }: FollowState): FollowAnswer {
    // An `after` past the task's cursor is answered with the task's cursor, not echoed back.
    const cursor = data.length ? data[data.length - 1]!.cursor : Math.min(Math.max(after, 0), row.cursor);
    return { data, cursor, task: this.deps.toTask(row) };
  }
}
