import type { AgentForTask } from '../agents/agents.service';
import type { Disk } from '../machines/machine-rows';
import type { SimulatedCustomer } from '../evals/customer';

/** queued → running → completed | cancelled */
export type TestRunStatus = 'queued' | 'running' | 'completed' | 'cancelled';
export type TryStatus = 'queued' | 'running' | 'passed' | 'failed' | 'error' | 'cancelled';
/** Where a running try is. */
export type TryPhase = 'machine' | 'setup' | 'task' | 'check' | 'judge' | 'done';

export interface TestRunRow {
  seq: number;
  id: string;
  org_id: string;
  test_set_id: string | null;
  agent_id: string;
  agent_version: number;
  draft: boolean;
  agent: AgentForTask;
  repeat: number | null;
  status: TestRunStatus;
  metadata: Record<string, string>;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
}

/** A simulated customer (spec: Simulated customer). */
export type { SimulatedCustomer as CustomerSpec } from '../evals/customer';

/** A case as the run fixed it when created: what every try of it does. */
export interface CaseSnapshot {
  name: string;
  prompt: string;
  start_state: string;
  start_state_version: number;
  disk: Disk;
  os: string;
  pinned_runner_id: string | null;
  setup_script: string | null;
  check_script: string | null;
  rubric: string | null;
  customer: SimulatedCustomer | null;
  approvals: 'approve' | 'deny' | 'none';
  limits: { minutes: number; steps: number };
}

export interface RunCaseRow {
  run_id: string;
  position: number;
  test_case_id: string;
  key: string | null;
  repeat: number;
  snapshot: CaseSnapshot;
}

export interface TryRow {
  seq: number;
  id: string;
  org_id: string;
  run_id: string;
  position: number;
  test_case_id: string;
  attempt: number;
  status: TryStatus;
  phase: TryPhase | null;
  infra_retries: number;
  machine_id: string | null;
  task_id: string | null;
  runner_id: string | null;
  start_state_version: number | null;
  /** `output`: stdout then stderr, or a line saying it printed nothing; `stdout`, `stderr` apart when the runner reports them. */
  check: { exit_code: number | null; output: string; stdout?: string; stderr?: string; error?: string } | null;
  rubric: { passed: boolean; criteria: Array<{ criterion: string; passed: boolean; reason: string }>; judge_model: string } | null;
  steps: number | null;
  duration_ms: number | null;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
}

export const ENDED_TRY_STATUSES: readonly TryStatus[] = ['passed', 'failed', 'error', 'cancelled'];
