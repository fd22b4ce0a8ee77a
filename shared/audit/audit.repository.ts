import { runPrepared, type Knex, type PreparedStatement } from '../db/knex';
import type { IsoTimestamp } from '../db/timestamps';
import { newId } from '../ids';
import { preparedPage, type Page, type PageRequest } from '../pagination';
import type { Actor } from './actor';

export interface AuditEntryInput {
  /** Null for the operator's changes outside any org (a cloud runner): no org's log shows them. */
  orgId: string | null;
  actor: Actor;
  action: string;
  objectType: string;
  objectId: string;
  data?: Record<string, unknown>;
  requestId?: string | null;
}

/** An audit-log entry as the API returns it (`object: audit_log_entry`). */
export interface AuditEntry {
  object: 'audit_log_entry';
  id: string;
  action: string;
  object_type: string;
  object_id: string;
  actor: Actor;
  data: Record<string, unknown>;
  request_id: string | null;
  created_at: string;
}

interface AuditRow extends Record<string, unknown> {
  seq: number;
  id: string;
  actor: Actor;
  action: string;
  object_type: string;
  object_id: string;
  data: Record<string, unknown>;
  request_id: string | null;
  /** Read as the API's text (shared/db/timestamps.ts). */
  created_at: IsoTimestamp;
}

function toEntry(row: AuditRow): AuditEntry {
  return {
    object: 'audit_log_entry',
    id: row.id,
    action: row.action,
    object_type: row.object_type,
    object_id: row.object_id,
    actor: row.actor ?? null,
    data: row.data,
    request_id: row.request_id,
    created_at: row.created_at,
  };
}

/** Records a change; call it inside the transaction that makes the change. Prepared: nearly every change writes one. */
export async function recordAudit(db: Knex | Knex.Transaction, entry: AuditEntryInput): Promise<void> {
  const row = auditRow(entry);
  await runPrepared(db, INSERT_AUDIT, [row.id, row.org_id, row.actor, row.action, row.object_type, row.object_id, row.data, row.request_id]);
}

/**
 * The start of a statement that writes an audit row, its values in `auditRow`'s order (id,
 * org_id, actor, action, object_type, object_id, data, request_id; actor and data as JSON text).
 */
export const INSERT_AUDIT_ROW = 'insert into audit_log (id, org_id, actor, action, object_type, object_id, data, request_id)';

const INSERT_AUDIT: PreparedStatement = {
  name: 'audit:insert',
  text: `${INSERT_AUDIT_ROW} values ($1, $2, $3::jsonb, $4, $5, $6, $7::jsonb, $8)`,
};

/**
 * Runs `change` (an insert, update or delete that returns its rows) and writes the audit row of
 * `entry` in the same statement, when the change touched a row: one round trip for both. Returns
 * the changed rows.
 */
export async function changeAudited<Row>(db: Knex | Knex.Transaction, change: Knex.QueryBuilder, entry: AuditEntryInput): Promise<Row[]> {
  const row = auditRow(entry);
  const audited = db.raw(`${INSERT_AUDIT_ROW} select ?, ?, ?::jsonb, ?, ?, ?, ?::jsonb, ? where exists (select 1 from changed)`, [
    row.id,
    row.org_id,
    row.actor,
    row.action,
    row.object_type,
    row.object_id,
    row.data,
    row.request_id,
  ]);
  return (await db.with('changed', change).with('audited', audited).select('*').from('changed')) as Row[];
}

/** The audit-log row of an entry, for a statement that writes it beside the change (`recordAudit`). */
export function auditRow(entry: AuditEntryInput) {
  return {
    id: newId('aud'),
    org_id: entry.orgId,
    actor: entry.actor === null ? null : JSON.stringify(entry.actor),
    action: entry.action,
    object_type: entry.objectType,
    object_id: entry.objectId,
    data: JSON.stringify(entry.data ?? {}),
    request_id: entry.requestId ?? null,
  };
}

export interface AuditFilter {
  objectType?: string;
  objectId?: string;
  action?: string;
}

const AUDIT_COLUMNS = ['seq', 'id', 'actor', 'action', 'object_type', 'object_id', 'data', 'request_id', 'created_at'] as const;

/** A page of the org's audit log, newest first, with one prepared statement per shape of filter. */
export function listAudit(db: Knex, orgId: string, filter: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>> {
  return preparedPage<AuditRow, AuditEntry>(
    db,
    { table: 'audit_log', columns: AUDIT_COLUMNS, timestamps: ['created_at'] },
    orgId,
    { object_type: filter.objectType || undefined, object_id: filter.objectId || undefined, action: filter.action || undefined },
    page,
    toEntry,
  );
}
