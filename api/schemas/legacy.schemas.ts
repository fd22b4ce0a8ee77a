import { Type } from '@sinclair/typebox';
import { SessionCode } from './sessions.schemas';
import { RespondBody, StartTaskBody, TaskEventSchema, TaskSchema } from './tasks.schemas';

/** Schemas of the older session-token API (`/start`, `/wait`, `/stop`, `/tasks`, `/trace`, `/health`). */

/** The older API's error body: the message as a string, with `code`, `answered_by` and other fields beside it. */
export const LegacyErrorSchema = Type.Object(
  {
    error: Type.String({ description: 'What went wrong, for people.' }),
    code: Type.Optional(Type.String()),
    answered_by: Type.Optional(Type.Union([Type.Literal('customer'), Type.Literal('operator'), Type.Literal('timeout')])),
  },
  { additionalProperties: true, $id: 'LegacyError', title: 'LegacyError' },
);

const Code = Type.Optional(
  Type.String({
    ...SessionCode,
    description: 'With an org API key: the session (pairing code) to act on. With a session token: leave it out (or send the token\'s own).',
  }),
);
const TaskId = Type.String({ pattern: '^task_[a-z0-9]{1,40}$', description: 'The task id (task_…).', examples: ['task_3k9xq7m2pd8w4tz1vn5c'] });

export const LegacyStartBody = Type.Object(
  { prompt: StartTaskBody.properties.prompt, request_id: StartTaskBody.properties.request_id, code: Code },
  { additionalProperties: false },
);

export const LegacyWaitBody = Type.Object(
  {
    id: TaskId,
    after: Type.Integer({ minimum: 0, description: 'The last cursor you have; 0 for everything.' }),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 55000, description: 'Wait up to this long for new events; default 25000.' })),
    ...RespondBody.properties,
    code: Code,
  },
  {
    additionalProperties: false,
    description: 'Answering is optional: question_id with answer, or approval_id with decision (and note). The answer is given first, then the wait.',
    examples: [{ id: 'task_3k9xq7m2pd8w4tz1vn5c', after: 12, timeout_ms: 25000, question_id: 'q_8d2kf0s7w3k9m4x6c8vb', answer: 'HP LaserJet (office)' }],
  },
);

export const LegacyIdBody = Type.Object({ id: TaskId, code: Code }, { additionalProperties: false });

export const LegacyTasksBody = Type.Object({ code: Code }, { additionalProperties: false, description: 'Empty (or no body) with a session token.' });

export const LegacyHealthQuery = Type.Object(
  { code: Type.Optional(Type.String({ ...SessionCode, description: 'With an org API key as bearer: the session to report on.' })) },
  { additionalProperties: false },
);

const [QuestionPending, ApprovalPending] = TaskSchema.properties.pending.anyOf;

export const LegacyTaskSchema = Type.Object({
  id: Type.String(),
  request_id: Type.Union([Type.String(), Type.Null()]),
  status: TaskSchema.properties.status,
  done: Type.Boolean(),
  cursor: Type.Integer({ minimum: 0, description: 'The cursor this response covers: pass it as after to /wait.' }),
  events: Type.Array(TaskEventSchema, { description: '/wait: the events after after, as the follow endpoint returns them. Empty elsewhere.' }),
  update: Type.String({
    description:
      'One line for people of what the task is doing now: "Waiting for an answer: …" or "Waiting for approval: …" while something is open; otherwise from the latest step, answer, decision or ending ("Completed: …", "Failed: …", "Stopped by the team"); "Queued" before it starts.',
  }),
  question: Type.Optional(Type.Omit(QuestionPending, ['type'], { description: 'The open question, when the task waits for one.' })),
  approval: Type.Optional(Type.Omit(ApprovalPending, ['type'], { description: 'The open approval, when the task waits for one.' })),
  result: Type.Optional(Type.String({ description: 'Summary, when completed.' })),
  error: Type.Optional(Type.String({ description: 'Reason, when failed.' })),
}, { title: 'LegacyTask' });

export const LegacyTraceSchema = Type.Intersect([LegacyTaskSchema, Type.Object({ trace: Type.Record(Type.String(), Type.Unknown()) })]);

export const LegacyTaskListSchema = Type.Object({
  tasks: Type.Array(LegacyTaskSchema, { description: 'This session\'s tasks, newest first, at most 100.' }),
  has_more: Type.Boolean({ description: 'True when the session has older tasks than these 100 (list them with GET /v1/tasks).' }),
});

export const LegacyHealthSchema = Type.Object({
  status: Type.Literal('ok'),
  code: Type.Optional(Type.String({ description: 'With a token: the session\'s code.' })),
  computer_connected: Type.Optional(Type.Boolean({ description: 'With a token: whether the session\'s computer is connected now.' })),
});
