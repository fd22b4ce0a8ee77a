import type { Customer } from '../test-cases/test-case-rows';

/** A test set as PostgreSQL keeps it (migrations/20261127000001). */
export interface TestSetRow {
  seq: number;
  id: string;
  org_id: string;
  name: string;
  description: string;
  repeat: number;
  customer: Customer | null;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/** One of a set's cases, in order; `repeat` null: the set's. `key` is the case's. */
export interface SetCaseEntry {
  test_case_id: string;
  repeat: number | null;
  key: string | null;
}
