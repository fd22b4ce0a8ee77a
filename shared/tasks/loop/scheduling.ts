import { jobId, type JobQueues } from '../../queues/job-queues';
import { QUEUE_NAMES } from '../../queues/catalog';
import type { TaskChange } from '../task-change';
import type { TaskRow } from '../task-rows';
import { enterState, waitsFor } from './transitions';

/** A model turn that failed for a passing reason (429, 5xx, network) is tried three times in all. */
export const STEP_RETRIES = { attempts: 3, backoff: { type: 'exponential', delay: 1000 } } as const;
/** Step jobs are many (one per move of every task): fewer of them stay in Redis once done than the queues' default. */
export const STEP_JOB = { ...STEP_RETRIES, removeOnComplete: { age: 3600, count: 1000 } } as const;

/** The id of a task's `n`th step job (numbered from 1). */
export const stepJobId = (taskId: string, n: number) => jobId('step', taskId, n);
/** The id of a task's scope-check job; numbered like the step job that began the task, so the steps count on from it. */
export const scopeJobId = (taskId: string, n: number) => jobId('scope', taskId, n);
/** The number of the task's latest job (step or scope check); 0 before any. */
export const jobNumber = (row: Pick<TaskRow, 'current_job_id'>) => Number(row.current_job_id?.split('-').pop() ?? 0) || 0;

/**
 * Whether step job `n` is still the task's next move: the latest step scheduled, and the task
 * is waiting for it (not for the computer, a person or a tool since then).
 */
export function isCurrentStep(row: Pick<TaskRow, 'id' | 'status' | 'phase' | 'current_job_id'>, n: number): boolean {
  return waitsFor(row) === 'step' && row.current_job_id === stepJobId(row.id, n);
}

/** Schedules the task's next step job; the job id is derived from the previous one. */
export function scheduleStep(queues: JobQueues, change: TaskChange, delayMs = 0, phase: 'model' | 'sleep' = 'model'): void {
  const n = jobNumber(change.row) + 1;
  const id = stepJobId(change.row.id, n);
  enterState(change, phase === 'sleep' ? 'running/sleep' : 'running/model', { current_job_id: id, phase_since: change.now, awaiting_act_id: null });
  const taskId = change.row.id;
  // Ids only: the step reads the row when it runs (a job carries no state: it would sit in
  // Redis and in Bull Board, and could be out of date by then).
  change.after(() => queues.enqueueOrLeaveToSweep(QUEUE_NAMES.taskSteps, 'step', { task_id: taskId, step: n }, { jobId: id, delay: delayMs, ...STEP_JOB }));
}

/**
 * The first step of a new task (called by the service after the task row commits). When Redis
 * does not take it, the task stays queued and the sweep queues the step once Redis answers.
 */
export function enqueueFirstStep(queues: JobQueues, taskId: string): Promise<boolean> {
  return queues.enqueueOrLeaveToSweep(QUEUE_NAMES.taskSteps, 'step', { task_id: taskId, step: 1 }, { jobId: stepJobId(taskId, 1), ...STEP_JOB });
}

/** Queues step job `n` again with its own id (the sweep, after Redis lost it). */
export function requeueStep(queues: JobQueues, taskId: string, n: number): Promise<unknown> {
  return queues.enqueue(QUEUE_NAMES.taskSteps, 'step', { task_id: taskId, step: n }, { jobId: stepJobId(taskId, n), ...STEP_JOB });
}
