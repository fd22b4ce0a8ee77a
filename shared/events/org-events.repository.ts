/** SQL for `org_events`: the org-level event log that webhooks deliver. */
import type { Knex } from '../db/knex';

/** The columns an event is written with; `seq`, `created_at` and `dispatched_at` start at their defaults. */
export interface NewOrgEventRow {
  id: string;
  org_id: string;
  type: string;
  session_id: string | null;
  task_id: string | null;
  /** JSON text. */
  data: string;
}

export async function insertOrgEvent(db: Knex | Knex.Transaction, row: NewOrgEventRow): Promise<void> {
  await db('org_events').insert(row);
}
