import type { Knex } from '../../db/knex';
import type { ComputerLink } from '../../desktop/computer-link';
import type { ModelRegistry } from '../../models/registry';
import type { AgentFileService } from '../../agents/agent-files.service';
import type { JobQueues } from '../../queues/job-queues';
import type { TaskChangeDeps } from '../task-change';
import type { MeteringService } from '../../billing/metering.service';
import type { PaymentsService } from '../../billing/payments.service';

export interface ToolCaller {
  /** Records the call in `trx` and returns its id; `enqueue` is called after the commit. */
  create(trx: Knex.Transaction, call: { orgId: string; taskId: string; sessionId: string; agentId: string; agentVersion: number; step: number; tool: { name: string; url: string }; arguments: Record<string, unknown> }): Promise<string>;
  enqueue(callId: string): Promise<void>;
  /** The sweep: queues the task's call again when its job is missing or failed. */
  requeue(taskId: string): Promise<boolean>;
}

/** What the task loop's pieces use: the task change's own dependencies, the computer, the model, files and tools. */
export interface TaskLoopDeps extends TaskChangeDeps {
  /** Step, scope-check and approval-timeout jobs. */
  queues: JobQueues;
  link: ComputerLink;
  models: ModelRegistry;
  agentFiles: AgentFileService;
  tools: ToolCaller | null;
  /** How long the computer may take to answer one action. */
  actTimeoutMs: number;
  /** How long a task waits for its computer to come back after its connection dropped. */
  reconnectGraceMs: number;
  /** How long one model turn may take. */
  modelTimeoutMs: number;
  /** Charges running minutes as they pass (metering.ts) and the rest when the task ends. */
  billing: { metering: Pick<MeteringService, 'chargeTaskMinutes' | 'runningTasks'>; payments: Pick<PaymentsService, 'autoTopUpIfDue'> };
}
