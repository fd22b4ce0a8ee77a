import { osOfImage } from '../machines/machine-rows';
import type { StartStateRow } from './start-state-rows';

/** The Start state object (spec: Start state; docs/evals.md). */
export interface StartState {
  object: 'start_state';
  start_state_id: string;
  kind: 'image' | 'state';
  name: string;
  description: string;
  from: string | null;
  method: StartStateRow['method'] | null;
  script: string | null;
  instruction: string | null;
  agent_id: string | null;
  task_id: string | null;
  status: StartStateRow['status'];
  version: number;
  os: string;
  labels: string[];
  runner_id: string | null;
  error: string | null;
  view: { screen_url: string; input_url: string; expires_at: string } | null;
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
}

/** The live view's two addresses: a page and the JSON input, with the capability token in the path. */
export function viewUrls(baseUrl: string, token: string): { screen_url: string; input_url: string } {
  return { screen_url: `${baseUrl}/view/${token}`, input_url: `${baseUrl}/view/${token}/input` };
}

export function toStartState(row: StartStateRow, baseUrl: string): StartState {
  const open = row.status === 'open' && row.view_token !== null && row.view_expires_at !== null;
  return {
    object: 'start_state',
    start_state_id: row.id,
    kind: 'state',
    name: row.name,
    description: row.description,
    from: row.from_id,
    method: row.method,
    script: row.script,
    instruction: row.instruction,
    agent_id: row.agent_id,
    task_id: row.task_id,
    status: row.status,
    version: row.version,
    os: row.os,
    labels: row.labels,
    runner_id: row.runner_id,
    error: row.error,
    view: open ? { ...viewUrls(baseUrl, row.view_token!), expires_at: row.view_expires_at!.toISOString() } : null,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A runner's image as a start state: read-only, ready, version 0, visible to every org. */
export function imageStartState(image: { image: string; labels: string[]; created_at: Date; updated_at: Date | null }): StartState {
  return {
    object: 'start_state',
    start_state_id: image.image,
    kind: 'image',
    name: image.image,
    description: '',
    from: null,
    method: null,
    script: null,
    instruction: null,
    agent_id: null,
    task_id: null,
    status: 'ready',
    version: 0,
    os: osOfImage(image.image),
    labels: image.labels,
    runner_id: null,
    error: null,
    view: null,
    metadata: {},
    created_at: new Date(image.created_at).toISOString(),
    updated_at: new Date(image.updated_at ?? image.created_at).toISOString(),
  };
}
