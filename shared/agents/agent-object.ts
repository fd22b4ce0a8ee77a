import { isoTimestamp } from '../db/timestamps';
import type { Actor } from '../audit/actor';
import { effectiveInviteUrlTemplate, readConfig, type AgentConfig } from './agent-config';
import type { AgentWithConfigRow, VersionOrigin, VersionRow } from './agents.repository';

/*
 * The API objects of an agent (spec: "Agent", "Agent draft", "Agent version") and how they are
 * made from the rows. `baseUrl` fills in the default invite link template.
 */

/** The config fields as the API returns them: `invite_url_template` filled in. */
type ConfigFields = Omit<AgentConfig, 'invite_url_template'> & { invite_url_template: string };

/** Fields the published agent and the draft share (spec: "Agent draft"). */
interface AgentFields extends ConfigFields {
  agent_id: string;
  is_default: boolean;
  version: number;
  has_draft: boolean;
  created_by: Actor;
  updated_by: Actor;
  created_at: string | null;
  updated_at: string | null;
  based_on_version: number;
  saved_at: string | null;
  saved_by: Actor;
}

/** The published agent (`object: agent`); `has_draft`, `based_on_version`, `saved_*` describe its draft. */
export interface AgentObject extends AgentFields {
  object: 'agent';
}

/** The agent as its draft would make it (`object: agent_draft`). */
export interface AgentDraftObject extends AgentFields {
  object: 'agent_draft';
  /** The version the draft was restored from, while that draft lasts; null otherwise. */
  restored_from_version: number | null;
}

/** The answer to publishing a draft: the agent and the versions whose changes it replaced. */
export interface PublishedDraftObject extends AgentObject {
  undone_versions: number[];
}

/** One published version (`object: agent_version`). */
export interface AgentVersionObject extends ConfigFields {
  object: 'agent_version';
  agent_id: string;
  version: number;
  /** True for the version the agent runs now. */
  is_published: boolean;
  origin: VersionOrigin;
  based_on_version: number | null;
  restored_from_version: number | null;
  undone_versions: number[];
  created_at: string;
  created_by: Actor;
}

function configFields(config: AgentConfig, baseUrl: string): ConfigFields {
  return {
    name: config.name,
    instructions: config.instructions,
    model: config.model,
    effort: config.effort,
    greeting: config.greeting,
    display_name: config.display_name,
    narration: config.narration,
    customer_answers: config.customer_answers,
    customer_approvals: config.customer_approvals,
    guardrails: config.guardrails,
    tools: config.tools,
    invite_url_template: effectiveInviteUrlTemplate(config, baseUrl),
  };
}

function agentFields(row: AgentWithConfigRow, config: AgentConfig, baseUrl: string): AgentFields {
  const hasDraft = row.draft !== null;
  return {
    agent_id: row.agent_id,
    ...configFields(config, baseUrl),
    is_default: row.is_default,
    version: row.version,
    has_draft: hasDraft,
    created_by: row.created_by ?? null,
    updated_by: row.updated_by ?? null,
    created_at: isoTimestamp(row.created_at),
    updated_at: isoTimestamp(row.updated_at),
    based_on_version: hasDraft ? row.draft_based_on_version! : row.version,
    saved_at: hasDraft ? isoTimestamp(row.draft_saved_at) : null,
    saved_by: hasDraft ? (row.draft_saved_by ?? null) : null,
  };
}

/** The published agent's object. */
export function toAgent(row: AgentWithConfigRow, baseUrl: string): AgentObject {
  return { object: 'agent', ...agentFields(row, readConfig(row.published_config), baseUrl) };
}

/** The agent as its draft would make it (the published agent's config when it has no draft). */
export function toAgentDraft(row: AgentWithConfigRow, baseUrl: string): AgentDraftObject {
  const hasDraft = row.draft !== null;
  return {
    object: 'agent_draft',
    ...agentFields(row, readConfig(hasDraft ? row.draft : row.published_config), baseUrl),
    restored_from_version: hasDraft ? row.draft_restored_from_version : null,
  };
}

/** One published version's object; `published` is the version the agent runs now. */
export function toAgentVersion(row: VersionRow, published: number, baseUrl: string): AgentVersionObject {
  return {
    object: 'agent_version',
    agent_id: row.agent_id,
    version: row.version,
    ...configFields(readConfig(row.config), baseUrl),
    is_published: row.version === published,
    origin: row.origin,
    based_on_version: row.based_on_version,
    restored_from_version: row.restored_from_version,
    undone_versions: row.undone_versions ?? [],
    created_at: isoTimestamp(row.created_at),
    created_by: row.created_by ?? null,
  };
}
