import type { SimulatedCustomer } from '../evals/customer';

/** The simulated customer (spec: Simulated customer): what plays the person at the computer in a try. */
export type Customer = SimulatedCustomer;

export type Approvals = 'approve' | 'deny' | 'none';

/** A test case as PostgreSQL keeps it (migrations/20261127000001). */
export interface TestCaseRow {
  seq: number;
  id: string;
  org_id: string;
  key: string | null;
  name: string;
  prompt: string;
  start_state: string;
  setup_script: string | null;
  success: { check_script?: string; rubric?: string };
  customer: Customer | null;
  operator: { approvals?: Approvals };
  limits: { minutes?: number; steps?: number };
  runs_on: string;
  category: string | null;
  tags: string[];
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/** The columns a case's input sets (everything but identity and timestamps). */
export type TestCaseFields = Pick<TestCaseRow, 'key' | 'name' | 'prompt' | 'start_state' | 'setup_script' | 'success' | 'customer' | 'operator' | 'limits' | 'runs_on' | 'category' | 'tags' | 'metadata'>;

/** Defaults of a new case (docs/evals.md): the team never answers approvals; 30 minutes, 150 steps. */
export const CASE_DEFAULTS = { approvals: 'none' as Approvals, minutes: 30, steps: 150, runs_on: 'vm' };
