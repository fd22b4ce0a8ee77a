import type { Knex } from '../db/knex';
import type { Page, PageRequest } from '../pagination';
import { listAudit, type AuditEntry, type AuditFilter } from './audit.repository';

/**
 * The org's audit log as `GET /v1/audit_log` reads it. Rows are written by each change's own
 * transaction (`recordAudit`, `changeAudited`); this only reads them.
 */
export class AuditLogService {
  constructor(private readonly deps: { db: Knex }) {}

  /** A page of the org's entries, newest first, narrowed by `filter`. */
  list(orgId: string, filter: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>> {
    return listAudit(this.deps.db, orgId, filter, page);
  }
}
