import type { Notifier } from '../notifier';
import type { JobQueues } from '../queues/job-queues';
import { dispatchOrgEvents } from '../events/org-events';
import { encodeTaskNote, taskChannel, type TaskChangeObserver } from './task-change';

/**
 * Wakes the task's long-pollers, on whichever web process they wait: the note carries what the
 * change wrote when it is small (`encodeTaskNote`). A change that wrote no event moved no cursor
 * and wakes nobody.
 */
export function followerNotes(notifier: Notifier): TaskChangeObserver {
  return {
    name: 'follower-notes',
    taskChanged({ row, events }) {
      if (events.length) return notifier.publish(taskChannel(row.id), encodeTaskNote(row, events));
    },
  };
}

/**
 * Hands the change's org events to the webhooks queue. One Redis does not take now stays
 * undispatched in PostgreSQL, and the maintenance sweep dispatches it later.
 */
export function orgEventDispatch(queues: JobQueues): TaskChangeObserver {
  return {
    name: 'org-event-dispatch',
    taskChanged({ orgEventIds }) {
      if (orgEventIds.length) return dispatchOrgEvents(queues, [...orgEventIds]);
    },
  };
}
