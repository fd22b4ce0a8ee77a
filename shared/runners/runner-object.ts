import type { RunnerReadRow, RunnerScope } from './runners.repository';

/** The spec's Runner (`object: runner`); `token` only in the create response. */
export interface Runner {
  object: 'runner';
  runner_id: string;
  name: string;
  scope: RunnerScope;
  status: 'online' | 'offline';
  /** Null until the runner first says hello. */
  provider: string | null;
  labels: string[];
  slots: number;
  busy: number;
  images: string[];
  /** Null until the runner first says hello. */
  version: string | null;
  /** Its last hello or heartbeat; null until it first connects. */
  last_seen_at: string | null;
  created_at: string;
}

/** The API's Runner from a row read with its `online`. */
export function toRunner(row: RunnerReadRow): Runner {
  return {
    object: 'runner',
    runner_id: row.id,
    name: row.name,
    scope: row.scope,
    status: row.online ? 'online' : 'offline',
    provider: row.provider,
    labels: row.labels,
    slots: row.slots,
    busy: row.machines_busy,
    images: row.images,
    version: row.version,
    last_seen_at: row.last_seen_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
  };
}
