import { ApiError, conflict, notFound } from '../errors';
import type { RespondRefusal } from './loop/answers';

/*
 * The loop says why it did not take an answer or a stop; this is where that becomes the spec's
 * 404 and 409 errors, for the API and for the person's app alike.
 */

const ANSWERER = { customer: 'person at the computer', timeout: 'timeout', operator: 'team' } as const;

/** The API error for an answer the loop refused. */
export function respondRefusalError(taskId: string, itemId: string, refusal: RespondRefusal): ApiError {
  switch (refusal.reason) {
    case 'no_task':
      return notFound(`No task ${taskId}`);
    case 'no_item':
      return notFound(`Task ${taskId} has no ${refusal.kind} ${itemId}`);
    case 'customer_not_allowed':
      return conflict(`The person cannot answer this ${refusal.kind}`, refusal.kind === 'question' ? 'customer_answers_off' : 'customer_approvals_off');
    case 'already_answered':
      return new ApiError('conflict', `This ${refusal.kind} was already ${refusal.kind === 'question' ? 'answered' : 'decided'} by the ${ANSWERER[refusal.answeredBy ?? 'operator']}`, {
        code: 'already_answered',
        extra: { answered_by: refusal.answeredBy },
      });
    case 'not_pending':
      return conflict(`This ${refusal.kind} is no longer open`, 'not_pending');
  }
}

/** The API error for a stop of a task the org does not have. */
export const stopRefusalError = (taskId: string): ApiError => notFound(`No task ${taskId}`);
