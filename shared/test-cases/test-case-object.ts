import { CASE_DEFAULTS, type Approvals, type Customer, type TestCaseRow } from './test-case-rows';

/** The Test case object (spec: Test case). */
export interface TestCase {
  object: 'test_case';
  test_case_id: string;
  key: string | null;
  name: string;
  prompt: string;
  start_state: string;
  setup_script: string | null;
  success: { check_script?: string; rubric?: string };
  customer: Customer | null;
  operator: { approvals: Approvals };
  limits: { minutes: number; steps: number };
  runs_on: 'vm';
  category: string | null;
  tags: string[];
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
}

export function toTestCase(row: TestCaseRow): TestCase {
  return {
    object: 'test_case',
    test_case_id: row.id,
    key: row.key,
    name: row.name,
    prompt: row.prompt,
    start_state: row.start_state,
    setup_script: row.setup_script,
    success: row.success,
    customer: row.customer,
    operator: { approvals: row.operator.approvals ?? CASE_DEFAULTS.approvals },
    limits: { minutes: row.limits.minutes ?? CASE_DEFAULTS.minutes, steps: row.limits.steps ?? CASE_DEFAULTS.steps },
    runs_on: 'vm',
    category: row.category,
    tags: row.tags,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
