import type { Disk } from '../machines/machine-rows';

/** building: its script or instruction runs. open: its machine runs for someone. saving, then ready. failed: see `error`. */
export type StartStateStatus = 'building' | 'open' | 'saving' | 'ready' | 'failed';
export type StartStateMethod = 'hand' | 'script' | 'instruction';

/** A start state of an org (`kind: state`) as PostgreSQL keeps it (migrations/20261126000003). */
export interface StartStateRow {
  seq: number;
  id: string;
  org_id: string;
  name: string;
  description: string;
  from_id: string;
  method: StartStateMethod;
  script: string | null;
  instruction: string | null;
  agent_id: string | null;
  task_id: string | null;
  status: StartStateStatus;
  version: number;
  image: string;
  /** The disk it was made from: the image, or the version of the state it was made from. */
  from_disk: Disk;
  os: string;
  runner_id: string | null;
  labels: string[];
  error: string | null;
  metadata: Record<string, string>;
  machine_id: string | null;
  machine_attempts: number;
  view_token: string | null;
  view_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/** The disk of a state's saved version. */
export function stateDisk(row: Pick<StartStateRow, 'id' | 'image'>, version: number): Disk {
  return { image: row.image, state: row.id, version };
}
