import { isoTimestamp } from '../db/timestamps';
import type { DeviceInfo } from '../desktop/protocol';
import type { SessionObjectRow, SessionRow } from './sessions.repository';

/** The spec's Session object. */
export interface Session {
  object: 'session';
  session_id: string;
  code: string;
  agent_id: string;
  invite_url: string;
  status: SessionRow['status'];
  device: DeviceInfo | null;
  metadata: Record<string, string>;
  created_at: string;
  paired_at: string | null;
  last_active_at: string | null;
  expires_at: string | null;
  task_count: number;
  latest_task_id: string | null;
}

/** The API object of a person session (the API shows no other kind, and only they have an invite link). */
export function toSession(row: SessionObjectRow): Session {
  return {
    object: 'session',
    session_id: row.code,
    code: row.code,
    agent_id: row.agent_id,
    invite_url: row.invite_url!,
    status: row.status,
    device: row.device,
    metadata: row.metadata,
    created_at: isoTimestamp(row.created_at),
    paired_at: isoTimestamp(row.paired_at),
    last_active_at: isoTimestamp(row.last_active_at),
    expires_at: isoTimestamp(row.expires_at),
    task_count: row.task_count,
    latest_task_id: row.latest_task_id,
  };
}
