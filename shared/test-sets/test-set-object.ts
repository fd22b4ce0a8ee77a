import type { Customer } from '../test-cases/test-case-rows';
import type { SetCaseEntry, TestSetRow } from './test-set-rows';

/** The Test set object (spec: Test set). */
export interface TestSet {
  object: 'test_set';
  test_set_id: string;
  name: string;
  description: string;
  repeat: number;
  customer: Customer | null;
  cases: SetCaseEntry[];
  case_count: number;
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
}

export function toTestSet(row: TestSetRow, cases: SetCaseEntry[]): TestSet {
  return {
    object: 'test_set',
    test_set_id: row.id,
    name: row.name,
    description: row.description,
    repeat: row.repeat,
    customer: row.customer,
    cases,
    case_count: cases.length,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
