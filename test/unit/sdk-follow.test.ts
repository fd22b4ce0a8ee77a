import { expect } from 'chai';
import { TaskFollow, type ReadEvents } from '../../sdk/src/follow';
import type { Task, TaskEvent, TaskEventPage } from '../../sdk/src/types';

const event = (cursor: number, type = 'step'): TaskEvent => ({ cursor, type, message: `${type} ${cursor}`, ts: '2026-03-02T09:14:05.000Z', data: {} });
const task = (cursor: number, done: boolean): Task => ({ task_id: 'task_1', cursor, done, status: done ? 'completed' : 'running' }) as Task;
const page = (data: TaskEvent[], cursor: number, taskCursor: number, done: boolean): TaskEventPage => ({ data, cursor, task: task(taskCursor, done) }) as TaskEventPage;

/** A read function that answers `pages` in turn and records what it was asked. */
function scripted(pages: TaskEventPage[]): { read: ReadEvents; asked: { after: number; waitMs: number }[] } {
  const asked: { after: number; waitMs: number }[] = [];
  return {
    asked,
    read: async (after, waitMs) => {
      asked.push({ after, waitMs });
      const next = pages.shift();
      if (!next) throw new Error('read past the last page');
      return next;
    },
  };
}

async function collect(follow: TaskFollow): Promise<number[]> {
  const cursors: number[] = [];
  for await (const e of follow) cursors.push(e.cursor);
  return cursors;
}

describe('SDK tasks.follow (TaskFollow)', () => {
  it('yields each event once, in order, asking after the last cursor, and ends after the final event', async () => {
    const { read, asked } = scripted([
      page([event(1, 'started'), event(2)], 2, 2, false),
      page([], 2, 2, false),
      page([event(3, 'question')], 3, 3, false),
      page([event(4), event(5, 'completed')], 5, 5, true),
    ]);
    const follow = new TaskFollow('task_1', read, { waitMs: 1000 });
    expect(await collect(follow)).to.deep.equal([1, 2, 3, 4, 5]);
    expect(asked).to.deep.equal([
      { after: 0, waitMs: 1000 },
      { after: 2, waitMs: 1000 },
      { after: 2, waitMs: 1000 },
      { after: 3, waitMs: 1000 },
    ]);
    expect(follow.task).to.include({ done: true, status: 'completed' });
    expect(follow.cursor).to.equal(5);
  });

  it('skips events it already yielded when a page overlaps', async () => {
    const { read } = scripted([page([event(1), event(2)], 2, 2, false), page([event(2), event(3, 'completed')], 3, 3, true)]);
    expect(await collect(new TaskFollow('task_1', read))).to.deep.equal([1, 2, 3]);
  });

  it('keeps reading while the task is done but its last events are not yet read', async () => {
    const { read, asked } = scripted([page([event(1), event(2)], 2, 4, true), page([event(3), event(4, 'failed')], 4, 4, true)]);
    expect(await collect(new TaskFollow('task_1', read))).to.deep.equal([1, 2, 3, 4]);
    expect(asked.map((a) => a.after)).to.deep.equal([0, 2]);
  });

  it('starts after a given cursor', async () => {
    const { read, asked } = scripted([page([event(8), event(9, 'stopped')], 9, 9, true)]);
    expect(await collect(new TaskFollow('task_1', read, { after: 7 }))).to.deep.equal([8, 9]);
    expect(asked[0]!.after).to.equal(7);
  });

  it('ends at once for an ended task followed from its last cursor', async () => {
    const { read } = scripted([page([], 5, 5, true)]);
    expect(await collect(new TaskFollow('task_1', read, { after: 5 }))).to.deep.equal([]);
  });

  it('stops with the signal reason when aborted between events', async () => {
    const controller = new AbortController();
    const { read } = scripted([page([event(1)], 1, 1, false), page([event(2)], 2, 2, false)]);
    const seen: number[] = [];
    const error = await (async () => {
      for await (const e of new TaskFollow('task_1', read, { signal: controller.signal })) {
        seen.push(e.cursor);
        controller.abort(new Error('enough'));
      }
    })().catch((e: unknown) => e);
    expect(seen).to.deep.equal([1]);
    expect(error).to.have.property('message', 'enough');
  });

  it('refuses a wait longer than the service allows, and a second iteration', async () => {
    expect(() => new TaskFollow('task_1', scripted([]).read, { waitMs: 60_000 })).to.throw(RangeError);
    const follow = new TaskFollow('task_1', scripted([page([], 0, 0, true)]).read);
    await collect(follow);
    const again = await collect(follow).catch((e: unknown) => e);
    expect(again).to.be.instanceOf(Error).and.have.property('message').that.includes('iterated once');
  });
});
