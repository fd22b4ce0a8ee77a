import type { Logger } from '../logger';
import type { MachinesService } from '../machines/machines.service';
import type { MachineRow } from '../machines/machine-rows';
import type { RespondInput, AnsweredBy } from '../tasks/loop/answers';
import type { TaskRow } from '../tasks/task-rows';
import type { CaseSnapshot, CustomerSpec } from './test-run-rows';

/** What the simulated customer does (shared/evals/customer.ts). */
export interface CustomerBehaviour {
  answer(input: { customer: CustomerSpec; question: string; options: string[] }): Promise<{ answer: string }>;
  /** The secret's value when the request asks the customer to type one (its label in it); else null. */
  secretToType(customer: CustomerSpec, request: string): string | null;
  /** `does_steps`: the label a question asks the customer to click; else null. */
  stepToClick(customer: CustomerSpec, question: string): string | null;
}

export interface CustomerAtTheMachineDeps {
  logger: Logger;
  machines: Pick<MachinesService, 'input'>;
  respond: (taskId: string, orgId: string, input: RespondInput, answeredBy: AnsweredBy) => Promise<unknown>;
  customer: CustomerBehaviour;
}

/** A try's task with a question or approval open, and where it runs. */
export interface PendingOfTry {
  tryId: string;
  orgId: string;
  snapshot: CaseSnapshot;
  machine: MachineRow;
  /** The task, its `pending` set. */
  task: TaskRow;
}

/**
 * The people at a try's machine, as the case describes them: the operator's policy and the
 * simulated customer. Asked by `TryFlow` (phase `task`) once a change that left something
 * pending has committed; an answer the task no longer takes is logged, never an error.
 */
export class CustomerAtTheMachine {
  constructor(private readonly deps: CustomerAtTheMachineDeps) {}

  /**
   * A question or approval is open. The operator's policy decides approvals at once (`approve`,
   * `deny`); with `none` the customer may approve one shown to them (`clicks_admin_prompts`). A
   * question shown to the customer is answered: by typing a secret it names into the focused
   * field, by clicking what it asks to click (`does_steps`), or from the facts.
   */
  async actOnPending({ tryId, orgId, snapshot, machine, task }: PendingOfTry): Promise<void> {
    const pending = task.pending!;
    const customer = snapshot.customer;
    const respond = (input: RespondInput, by: AnsweredBy) => this.deps.respond(task.id, orgId, input, by).catch((error: Error) => this.deps.logger.info({ try: tryId, err: error }, 'answer not taken'));
    if (pending.type === 'approval') {
      if (snapshot.approvals === 'approve' || snapshot.approvals === 'deny') return void (await respond({ approval_id: pending.approval_id, decision: snapshot.approvals }, 'operator'));
      if (customer?.clicks_admin_prompts && pending.customer_can_approve) await respond({ approval_id: pending.approval_id, decision: 'approve' }, 'customer');
      return;
    }
    if (!customer || !pending.customer_can_answer) return;
    const secret = this.deps.customer.secretToType(customer, pending.question);
    if (secret !== null) {
      await this.deps.machines.input(machine, { type: 'type', text: secret });
      await respond({ question_id: pending.question_id, answer: 'I typed it in.' }, 'customer');
      return;
    }
    const label = customer.does_steps ? this.deps.customer.stepToClick(customer, pending.question) : null;
    if (label !== null) {
      await this.deps.machines.input(machine, { type: 'click_label', label });
      await respond({ question_id: pending.question_id, answer: 'Done' }, 'customer');
      return;
    }
    const { answer } = await this.deps.customer.answer({ customer, question: pending.question, options: pending.options });
    await respond({ question_id: pending.question_id, answer }, 'customer');
  }
}
