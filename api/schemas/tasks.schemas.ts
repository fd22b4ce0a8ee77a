import { Type } from '@sinclair/typebox';
import { DateTime, Metadata } from './common.schemas';
import { TASK_EVENT_EXAMPLE, TASK_EXAMPLE } from './examples';

const QuestionPending = Type.Object({
  type: Type.Literal('question'),
  question_id: Type.String(),
  question: Type.String(),
  options: Type.Array(Type.String(), { description: 'Empty: a free answer.' }),
  customer_can_answer: Type.Boolean(),
});

const ApprovalPending = Type.Object({
  type: Type.Literal('approval'),
  approval_id: Type.String(),
  what: Type.String({ description: 'What is to be approved, in a sentence.' }),
  kind: Type.Union([Type.Literal('action'), Type.Literal('agent_request'), Type.Literal('tool'), Type.Literal('safety_check')], {
    description: 'action: a step the guardrails hold for approval; agent_request: the agent asked; tool: an HTTP tool with approval always; safety_check: the model raised a safety check, or the screen check found text that tries to instruct the agent (data.rule screen_check).',
  }),
  category: Type.Union([Type.String(), Type.Null()]),
  risk: Type.Union([Type.Literal('normal'), Type.Literal('high')], { description: 'high for a safety-check approval; denying it stops the task.' }),
  customer_can_approve: Type.Boolean(),
  expires_at: Type.Union([DateTime, Type.Null()], { description: 'When it is denied by timeout (approval_timeout_minutes); null: no timeout.' }),
});

/** Every event type the service writes (shared/tasks: `change.event(...)`; the last three end a task, shared/tasks/loop/ending.ts). */
export const TASK_EVENT_TYPES = [
  'started', 'thought', 'step', 'action', 'action_result', 'guardrail', 'question', 'answer', 'approval', 'decision',
  'tool_call', 'tool_result', 'file', 'sleep', 'safety_check', 'secret_typed', 'completed', 'failed', 'stopped',
] as const;

export const TaskEventSchema = Type.Object({
  cursor: Type.Integer({ minimum: 1, description: 'Its place in the task\'s event log: gapless, from 1.' }),
  // A string, not an enum: a client must take event types it does not know yet (new ones come
  // with new features), so the known ones are listed in the description.
  type: Type.String({
    description:
      `What happened; \`message\` says it in a sentence and \`data\` carries its details. Types written today: ${TASK_EVENT_TYPES.map((type) => `\`${type}\``).join(', ')}; ` +
      'completed, failed and stopped end the task. Take a type you do not know as something to show, not an error.',
  }),
  message: Type.String({ description: 'What happened, in a sentence for people.' }),
  ts: DateTime,
  data: Type.Record(Type.String(), Type.Unknown(), { description: 'The details of the event, by type (the question and its options, the action, the decision, …).' }),
}, { title: 'TaskEvent', examples: [TASK_EVENT_EXAMPLE] });

export const TaskSchema = Type.Object({
  object: Type.Literal('task'),
  task_id: Type.String({ description: '`task_<id>`' }),
  session_id: Type.String({ description: 'The session (pairing code) whose computer runs it.' }),
  agent_id: Type.String({ description: 'The agent that runs it.' }),
  agent_version: Type.Integer({ description: 'The published version the task runs; for a draft run, the version the draft is based on.' }),
  agent_draft: Type.Boolean({ description: 'True when the task runs the unpublished draft.' }),
  request_id: Type.Union([Type.String(), Type.Null()], { description: 'The request_id it was started with; null when none was sent.' }),
  status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed'), Type.Literal('stopped')], {
    description: 'queued before it starts, running while it works or waits (see pending); completed, failed and stopped are final.',
  }),
  done: Type.Boolean({ description: 'True once status is completed, failed or stopped: nothing more will happen.' }),
  prompt: Type.String({ description: 'What the task was asked to do.' }),
  result: Type.Union([Type.String(), Type.Null()], { description: 'The agent\'s summary when completed; null otherwise.' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed; null otherwise (a stopped task says why in its stopped event).' }),
  pending: Type.Union([QuestionPending, ApprovalPending, Type.Null()], {
    title: 'TaskPending',
    description: 'What the task waits for: a question to answer or an approval to decide (POST /v1/tasks/{task_id}/respond); null when it waits for nothing.',
  }),
  cursor: Type.Integer({ minimum: 0, description: 'The cursor of its latest event (events are numbered from 1): GET /v1/tasks/{task_id}/events?after=cursor returns what comes next.' }),
  metadata: Metadata,
  created_at: DateTime,
  updated_at: DateTime,
  active_seconds: Type.Integer({ minimum: 0, description: 'Seconds it has spent running (not queued), so far.' }),
  billed_minutes: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Its running time rounded up to whole minutes, once it has ended; null before.' }),
  replay_url: Type.String({ format: 'uri', description: 'The task in the console, to watch it again frame by frame: {BASE_URL}/console/tasks/{task_id} (signing in to the console is needed).' }),
  recording: Type.Object(
    { frames: Type.Integer({ minimum: 0, description: 'Screens recorded so far; fetch each with GET /v1/tasks/{task_id}/recording/{seq}, seq from 1 to frames.' }) },
    { description: 'The screens the computer sent while the task ran.' },
  ),
  trace: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'With include=trace: diagnostics safe to share with support.' })),
}, { title: 'Task', examples: [TASK_EXAMPLE] });

/** What following a task answers: the events after `after`, the cursor to ask from next, and the task as it is now. */
export const TaskEventPageSchema = Type.Object(
  {
    data: Type.Array(TaskEventSchema, { description: 'The events after `after`, oldest first; empty when none came within wait_ms.' }),
    cursor: Type.Integer({ minimum: 0, description: 'The cursor of the last event in data (when none: `after`, or the task\'s cursor if `after` was past it): send it as `after` next time.' }),
    task: TaskSchema,
  },
  { title: 'TaskEventPage', examples: [{ data: [TASK_EVENT_EXAMPLE], cursor: 14, task: TASK_EXAMPLE }] },
);

export const StartTaskBody = Type.Object(
  {
    prompt: Type.String({ minLength: 1, maxLength: 100_000, pattern: '\\S' }),
    agent_id: Type.Optional(Type.String({ pattern: '^[a-z0-9-]{2,40}$', description: 'Default: the session\'s agent.' })),
    agent_version: Type.Optional(
      Type.Union([Type.Literal('draft'), Type.Literal('published'), Type.Integer({ minimum: 1 })], {
        description: 'published (the default) runs the published version; draft runs the unpublished draft; a number runs that published version (404 not_found naming it when the agent has no such version). As for test runs.',
      }),
    ),
    request_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Retrying with the same value returns the same task.' })),
    metadata: Type.Optional(Metadata),
  },
  {
    additionalProperties: false,
    examples: [{ prompt: 'Set up the office printer (HP LaserJet, 10.0.4.21) and print a test page.', request_id: 'ticket-1042-printer', metadata: { ticket: '1042' } }],
  },
);

export const RespondBody = Type.Object(
  {
    question_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    answer: Type.Optional(Type.String({ maxLength: 10_000 })),
    approval_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    decision: Type.Optional(Type.Union([Type.Literal('approve'), Type.Literal('deny')])),
    note: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
  },
  {
    additionalProperties: false,
    description: 'Either question_id with answer, or approval_id with decision and an optional note.',
    examples: [{ question_id: 'q_8d2kf0s7w3k9m4x6c8vb', answer: 'HP LaserJet (office)' }],
  },
);
