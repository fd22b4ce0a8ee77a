import { Type, type Static, type TSchema } from '@sinclair/typebox';

/**
 * Every queue and every job Deskhand has, in one frozen catalog. Job payloads carry ids only:
 * the processor reloads what it needs from PostgreSQL, so a job never holds state or secrets.
 */
export const QUEUE_NAMES = Object.freeze({
  taskSteps: 'task-steps',
  guardrails: 'guardrails',
  webhooks: 'webhooks',
  toolCalls: 'tool-calls',
  evals: 'evals',
  maintenance: 'maintenance',
} as const);

export type QueueName = (typeof QUEUE_NAMES)[keyof typeof QUEUE_NAMES];

/** The Procfile's worker types and the queues each consumes. */
export const WORKER_TYPES = Object.freeze({
  'worker-agent': [QUEUE_NAMES.taskSteps, QUEUE_NAMES.guardrails],
  'worker-delivery': [QUEUE_NAMES.webhooks, QUEUE_NAMES.toolCalls],
  'worker-evals': [QUEUE_NAMES.evals],
  'worker-clock': [QUEUE_NAMES.maintenance],
} as const satisfies Record<string, readonly QueueName[]>);

export type WorkerType = keyof typeof WORKER_TYPES;
export const PROCESS_TYPES = ['web', ...(Object.keys(WORKER_TYPES) as WorkerType[])] as const;
export type ProcessType = (typeof PROCESS_TYPES)[number];

const Id = Type.String({ minLength: 1, maxLength: 100 });

/** Payload schema of each job name, per queue. */
export const JOBS = Object.freeze({
  [QUEUE_NAMES.maintenance]: {
    /**
     * Periodic: reconcile the database with the queues (expiry, time limits, lost jobs). Once
     * at once with `quiet_ms: 0` when Redis came back empty: re-queue from PostgreSQL whatever
     * should be queued, without waiting for it to look lost.
     */
    sweep: Type.Object({ quiet_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })) }, { additionalProperties: false }),
    /** Delayed to a session's expiry time: expires every session then due. */
    'expire-session': Type.Object({ code: Id }, { additionalProperties: false }),
    /** Delayed to `approval_timeout_minutes`: denies the approval if still undecided. */
    'approval-timeout': Type.Object({ task_id: Id, approval_id: Id }, { additionalProperties: false }),
  },
  [QUEUE_NAMES.taskSteps]: {
    step: Type.Object(
      {
        task_id: Id,
        step: Type.Integer({ minimum: 0 }),
        /** Ignored: step jobs queued by earlier releases carried the task row here (still accepted, so they run after an upgrade). */
        seen: Type.Optional(Type.Unknown()),
      },
      { additionalProperties: false },
    ),
  },
  [QUEUE_NAMES.guardrails]: {
    /** Before a task with `guardrails.scope` begins: the judge decides whether the prompt fits the scope. */
    scope: Type.Object({ task_id: Id }, { additionalProperties: false }),
  },
  [QUEUE_NAMES.webhooks]: {
    /** Fan one org event out to the org's endpoint (a delivery row and its attempts). */
    dispatch: Type.Object({ event_id: Id }, { additionalProperties: false }),
    /** A later attempt of a delivery (retry, redelivery, test event); the row says what is due. */
    deliver: Type.Object({ delivery_id: Id }, { additionalProperties: false }),
  },
  [QUEUE_NAMES.toolCalls]: {
    /** Make one HTTP tool call (`tool_calls` row), once. */
    call: Type.Object({ call_id: Id }, { additionalProperties: false }),
  },
  [QUEUE_NAMES.evals]: {
    /** Places the machine just recorded on a runner with a free slot and sends its make; without one it waits (docs/runners.md). */
    'place-machine': Type.Object({ machine_id: Id }, { additionalProperties: false }),
    /**
     * Gives free slots out: waiting machines are placed on runners with free slots, oldest first
     * (their makes sent, docs/runners.md), then queued tries start while slots are left, fairly
     * across orgs and runs (docs/evals.md).
     */
    'use-free-slots': Type.Object({}, { additionalProperties: false }),
    /** Queued by earlier releases (a placement pass, a tries pass): each runs as `use-free-slots`, so those still queued after an upgrade run. */
    'place-machines': Type.Object({}, { additionalProperties: false }),
    'schedule-tries': Type.Object({}, { additionalProperties: false }),
    /** Delayed to a runner command's deadline: still unanswered, it fails with `timeout`. */
    'command-timeout': Type.Object({ command_id: Id }, { additionalProperties: false }),
    /** Delayed after a runner's connection closed: still offline, its machines are lost. */
    'runner-check': Type.Object({ runner_id: Id }, { additionalProperties: false }),
    /** A start state's next step, after its machine changed, a command was answered, its task ended or its open time is up. */
    'start-state-advance': Type.Object({ start_state_id: Id }, { additionalProperties: false }),
    /** A try's next step, after its machine changed, a command was answered or its task changed. */
    'try-advance': Type.Object({ try_id: Id }, { additionalProperties: false }),
  },
} satisfies Record<QueueName, Record<string, TSchema>>);

export type JobCatalog = typeof JOBS;
export type JobName<Q extends QueueName> = keyof JobCatalog[Q] & string;
export type JobPayload<Q extends QueueName, N extends JobName<Q>> = JobCatalog[Q][N] extends TSchema
  ? Static<JobCatalog[Q][N]>
  : never;
