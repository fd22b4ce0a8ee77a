import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Notifier } from '../notifier';
import { invalidRequest } from '../errors';
import { taskChannel } from './task-change';
import { FollowedTasks, type FollowAnswer } from './followed-tasks';
import { toTask } from './task-object';

export type { FollowAnswer };

/** Longest long poll. */
export const MAX_WAIT_MS = 55_000;

export interface TaskFollowersDeps {
  db: Knex;
  clock: Clock;
  notifier: Notifier;
  baseUrl: string;
}

/** A wait on a task's channel: `woken` resolves once, on a note past the cursor, the time limit, a hang-up or `endWaits`. */
interface Wait {
  woken: Promise<void>;
  wake: () => void;
}

/** A follower on its way to waiting: what it follows from where, for how long, its subscription and its hang-up. */
interface Follower {
  orgId: string;
  taskId: string;
  after: number;
  waitMs: number;
  wait: Wait;
  unsubscribe: () => Promise<void>;
  signal: AbortSignal | undefined;
}

/** A follower hung up (its signal aborted) before it was answered: there is nobody to answer. */
export class FollowerGone extends Error {
  constructor() {
    super('The follower hung up');
  }
}

/**
 * The long-poll followers of tasks in this process (GET /v1/tasks/{task_id}/events, the older
 * API's `/wait`): each is answered with the events after its cursor, at once when there are any,
 * else when a note on the task's Redis channel says there are, when its wait ends, or when the
 * process stops (`endWaits`). A follower that hangs up aborts its `signal`: its wait ends at once
 * and nothing is read for it. What the process knows of followed tasks, and the answers made from
 * it, are `FollowedTasks`'.
 *
 * Tuned for thousands of followers at once (docs/benchmarks.md, follow): nothing on the way to
 * waiting is an async function, and a waiting follower keeps only its wait (its wake-up, its
 * channel listener, the step that answers it): the wake-up is the one function its timer, its
 * signal, `endWaits` and the channel's note all call.
 */
export class TaskFollowers {
  private readonly known: FollowedTasks;
  /** Wake-ups of the followers waiting now; see `endWaits`. */
  private readonly waits = new Set<() => void>();
  /**
   * Wake-ups of the followers waiting under each signal, told by one 'abort' listener per
   * signal. A signal is its connection's, shared by the polls that follow on it one at a time
   * (api/hang-ups.ts): adding and removing an EventTarget listener for every poll cost the web
   * process about 8 µs an answer (a tenth of its CPU in the follow bench); a Set costs nothing.
   */
  private readonly hangUps = new WeakMap<AbortSignal, Set<() => void>>();
  /** Set by `endWaits`: followers are answered without waiting. */
  private ending = false;

  constructor(private readonly deps: TaskFollowersDeps) {
    this.known = new FollowedTasks({ db: deps.db, notifier: deps.notifier, toTask: (row) => toTask(row, deps.baseUrl, deps.clock.now()) });
  }

  /**
   * Events after `after`; when there are none yet, waits up to `waitMs` for one. A Redis
   * notification wakes the wait within milliseconds of the write; nothing polls the database.
   * When `signal` aborts (the follower hung up) the wait ends at once, without an answer: the
   * promise rejects with `FollowerGone`, as it does for a signal already aborted.
   */
  follow(orgId: string, taskId: string, after: number, waitMs: number, signal?: AbortSignal): Promise<FollowAnswer> {
    if (waitMs > MAX_WAIT_MS) return Promise.reject(invalidRequest(`wait_ms must be at most ${MAX_WAIT_MS}`));
    if (signal?.aborted) return Promise.reject(new FollowerGone());
    if (waitMs === 0 || this.ending) return Promise.resolve(this.known.answerNow(orgId, taskId, after));
    // Listen before the first read: an event committed after that read is then always heard.
    const wait = this.listen(taskId, after);
    // Not an async function (nor is what it chains to on the way to waiting): a follower asking
    // again right after its answer, as most do, usually finds nothing new and goes straight to
    // waiting, and an async function's frame for each of thousands of polls a second is garbage
    // the web process's scavenger runs for (docs/benchmarks.md, follow).
    return wait.subscribed.then((unsubscribe) => {
      const follower: Follower = { orgId, taskId, after, waitMs, wait, unsubscribe, signal };
      return this.known.nothingNewSinceLastRead(orgId, taskId, after) ? this.answerWhenWoken(follower) : this.answerOrWait(follower);
    });
  }

  /** A follower who may have missed something: answered from the notes or a read when there is news, else waits. */
  private async answerOrWait(follower: Follower): Promise<FollowAnswer> {
    const { orgId, taskId, after, unsubscribe } = follower;
    let answer: FollowAnswer | null = null;
    try {
      answer = this.known.fromRecentNotes(orgId, taskId, after) ?? this.known.newsIn(after, await this.known.read(orgId, taskId, after));
    } catch (error) {
      await unsubscribe();
      throw error;
    }
    if (answer) {
      await unsubscribe();
      return answer;
    }
    return this.answerWhenWoken(follower);
  }

  /**
   * Listens on the task's channel: `woken` resolves on the first note past `after` (or one that
   * cannot be read), `wake` resolves it early. Not an async function, and neither is
   * `answerWhenWoken`: closures made in one would keep its suspended frame (~0.5 KB) alive for
   * as long as the follower waits, and thousands wait at once (docs/benchmarks.md, follow).
   */
  private listen(taskId: string, after: number): Wait & { subscribed: Promise<() => Promise<void>> } {
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const subscribed = this.deps.notifier.subscribe(taskChannel(taskId), (message) => {
      const note = this.known.heard(message);
      if (!note || note.cursor > after) wake();
    });
    return { woken, wake, subscribed };
  }

  /**
   * Waits for a note, `waitMs`, `endWaits` or the follower's signal, then answers from the
   * newest notes or a read (a follower whose signal aborted is not answered: nothing is read for
   * it). The signal is told the wait's own `wake`, so a hang-up costs no closure per follower,
   * and is let go of when the wait ends.
   */
  private answerWhenWoken(follower: Follower): Promise<FollowAnswer> {
    const { orgId, taskId, after, waitMs, wait, unsubscribe, signal } = follower;
    const timer = setTimeout(wait.wake, waitMs);
    this.waits.add(wait.wake);
    // Stopping began, or the follower hung up, while it was reading: it does not wait.
    if (this.ending || signal?.aborted) wait.wake();
    else if (signal) this.wakeOnAbort(signal, wait.wake);
    return wait.woken.then(() => {
      clearTimeout(timer);
      this.waits.delete(wait.wake);
      if (signal) this.hangUps.get(signal)?.delete(wait.wake);
      void unsubscribe();
      if (signal?.aborted) throw new FollowerGone();
      return this.known.answerNow(orgId, taskId, after);
    });
  }

  /** Calls `wake` when `signal` aborts, through the signal's one listener (see `hangUps`). */
  private wakeOnAbort(signal: AbortSignal, wake: () => void): void {
    let waiting = this.hangUps.get(signal);
    if (!waiting) {
      const wakes = new Set<() => void>();
      signal.addEventListener('abort', () => wakes.forEach((each) => each()), { once: true });
      this.hangUps.set(signal, (waiting = wakes));
    }
    waiting.add(wake);
  }

  /** Followers waiting in this process now (for monitoring, and to see that none is left behind). */
  get waitingFollowers(): number {
    return this.waits.size;
  }

  /**
   * The process is stopping: answers every waiting follower now, with what there is (often no
   * new events and the same cursor), and every later one without waiting, so that followers
   * come back on another process rather than holding this one for up to 55 s.
   */
  endWaits(): void {
    this.ending = true;
    for (const wake of this.waits) wake();
  }
}
