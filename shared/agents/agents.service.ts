import type { Knex } from '../db/knex';
import type { Config } from '../config';
import type { Actor } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { conflict, invalidRequest, notFound } from '../errors';
import { decodeCursor, encodeCursor, PG_INTEGER_MAX, type Page, type PageRequest } from '../pagination';
import { checkUrlForRegistration, type HostResolver } from '../http/address-policy';
import { privateUrlHint } from '../http/private-url-hint';
import {
  AGENT_LIMITS,
  applyChanges,
  defaultAgentConfig,
  effectiveInviteUrlTemplate,
  effectiveModel,
  isAgentId,
  readConfig,
  DEFAULT_EFFORT,
  type AgentConfig,
  type AgentConfigChanges,
  type Effort,
} from './agent-config';
import {
  clearDefault,
  findAgent,
  findDefaultAgentId,
  findVersion,
  insertAgent,
  insertVersion,
  listAgents,
  updateAgent,
  readVersionsPage,
  type AgentWithConfigRow,
} from './agents.repository';
import { toAgent, toAgentDraft, toAgentVersion, type AgentDraftObject, type AgentObject, type AgentVersionObject, type PublishedDraftObject } from './agent-object';
import { lockOrgRow } from '../orgs/orgs.repository';

/** The id of the agent every new org gets. */
export const DEFAULT_AGENT_ID = 'default';
export const DEFAULT_AGENT_NAME = 'Default agent';

/** Who makes a change, for `created_by`/`updated_by`/`saved_by` and the audit log. */
export interface ChangeContext {
  actor: Actor;
  requestId?: string | null;
}

/**
 * Which version of an agent a task or a test run runs (`agent_version`): the published version
 * (the default), the draft, or a published version by its number.
 */
export type AgentVersionChoice = 'published' | 'draft' | number;

/** What a task runs (see {@link AgentService.resolveForTask}). */
export interface AgentForTask {
  agent_id: string;
  /**
   * The version number the task records: the published version; for a draft run, the
   * published version the draft is based on (`based_on_version`).
   */
  version: number;
  /** True when the draft's unpublished changes run (a draft run with no draft runs the published version: false). */
  draft: boolean;
  config: AgentConfig;
  /** `config.model`, or the service's default model when null. */
  model: string;
  /** `config.effort`, or `low` when null. */
  effort: Effort;
  /** The invite link template with the service default filled in. */
  invite_url_template: string;
}

export type CreateAgentInput = AgentConfigChanges & { agent_id: string; is_default?: boolean };
export type PatchAgentInput = AgentConfigChanges & { is_default?: boolean };

const CONFIG_KEYS: readonly (keyof AgentConfigChanges)[] = [
  'name',
  'instructions',
  'model',
  'effort',
  'greeting',
  'display_name',
  'narration',
  'customer_answers',
  'customer_approvals',
  'guardrails',
  'tools',
  'invite_url_template',
];

function configChanges(input: Record<string, unknown>): { changes: AgentConfigChanges; fields: string[] } {
  const changes: Record<string, unknown> = {};
  for (const key of CONFIG_KEYS) if (input[key] !== undefined) changes[key] = input[key];
  return { changes: changes as AgentConfigChanges, fields: Object.keys(changes) };
}

/**
 * Agents: versioned configs with a draft, publishing, restore and the org's default agent.
 *
 * Every change runs in one transaction that first locks the agent row (`select … for update`),
 * so version numbers are handed out one at a time; the primary key of `agent_versions` backs
 * that up. Every change is written to the audit log in the same transaction.
 */
export class AgentService {
  constructor(
    private readonly deps: {
      db: Knex;
      config: Readonly<Config>;
      /** Name resolution for the tool URL check (tests inject it); the system resolver by default. */
      resolve?: HostResolver;
    },
  ) {}

  /** Creates an agent at version 1 (published, no draft). 409 when the id exists. */
  async create(orgId: string, input: CreateAgentInput, ctx: ChangeContext): Promise<AgentObject> {
    if (typeof input.agent_id !== 'string' || !isAgentId(input.agent_id)) {
      throw invalidRequest('agent_id must be 2 to 40 lowercase letters, digits and dashes');
    }
    const { changes, fields } = configChanges(input as unknown as Record<string, unknown>);
    await this.checkToolUrls(changes);
    const config = applyChanges(defaultAgentConfig(input.agent_id), changes, this.applyOptions());
    try {
      return await this.deps.db.transaction(async (trx) => {
        await this.insertNewAgent(trx, orgId, input.agent_id, config, input.is_default === true, ctx, fields);
        return this.get(orgId, input.agent_id, trx);
      });
    } catch (error) {
      if ((error as { code?: string }).code === '23505' && /agents_pkey/.test(String((error as { constraint?: string }).constraint))) {
        throw conflict(`Agent ${input.agent_id} already exists`);
      }
      throw error;
    }
  }

  /** The org's `default` agent, made inside the org-creation transaction (`OrgService.onCreated`). */
  async createDefaultAgent(trx: Knex.Transaction, orgId: string, actor: Actor): Promise<void> {
    await this.insertNewAgent(trx, orgId, DEFAULT_AGENT_ID, defaultAgentConfig(DEFAULT_AGENT_NAME), true, { actor }, []);
  }

  /** Every agent of the org, newest first, in one page. */
  async list(orgId: string): Promise<Page<AgentObject>> {
    const rows = await listAgents(this.deps.db, orgId);
    return { data: rows.map((row) => toAgent(row, this.deps.config.baseUrl)), has_more: false, next_cursor: null };
  }

  /** The published agent (`object: agent`). 404 when the org has no such agent. */
  async get(orgId: string, agentId: string, db: Knex | Knex.Transaction = this.deps.db): Promise<AgentObject> {
    return toAgent(await this.load(db, orgId, agentId), this.deps.config.baseUrl);
  }

  /** The draft (`object: agent_draft`): the published version with `has_draft: false` when there is none. */
  async getDraft(orgId: string, agentId: string, db: Knex | Knex.Transaction = this.deps.db): Promise<AgentDraftObject> {
    return toAgentDraft(await this.load(db, orgId, agentId), this.deps.config.baseUrl);
  }

  /**
   * `PATCH /v1/agents/{agent_id}`: publishes the sent fields over the published version as the
   * next version. The draft, if any, stays as it is (its `based_on_version` is now lower than
   * `version`). `is_default: true` makes this the org's default agent without a new version
   * when no config field is sent.
   */
  async patch(orgId: string, agentId: string, input: PatchAgentInput, ctx: ChangeContext): Promise<AgentObject> {
    const { changes, fields } = configChanges(input as unknown as Record<string, unknown>);
    if (fields.length === 0 && input.is_default === undefined) {
      throw invalidRequest('body must hold at least one field to change');
    }
    await this.checkToolUrls(changes);
    // Every answer is read inside its transaction: it shows this change, not a later one.
    return this.deps.db.transaction(async (trx) => {
      const defaultChange = await this.prepareDefaultChange(trx, orgId, agentId, input.is_default);
      const row = await this.load(trx, orgId, agentId, true);
      const audit = { orgId, actor: ctx.actor, objectType: 'agent', objectId: agentId, requestId: ctx.requestId ?? null };
      if (fields.length === 0) {
        if (!defaultChange.moved) return toAgent(row, this.deps.config.baseUrl);
        await updateAgent(trx, orgId, agentId, { is_default: true, updated_by: ctx.actor });
        await recordAudit(trx, { ...audit, action: 'agent.default_set', data: { previous_default: defaultChange.previous } });
        return this.get(orgId, agentId, trx);
      }
      const config = applyChanges(readConfig(row.published_config), changes, this.applyOptions());
      const version = row.version + 1;
      await insertVersion(trx, {
        org_id: orgId,
        agent_id: agentId,
        version,
        config,
        origin: 'patched',
        based_on_version: row.version,
        restored_from_version: null,
        undone_versions: [],
        created_by: ctx.actor,
      });
      await updateAgent(trx, orgId, agentId, { version, ...(defaultChange.moved ? { is_default: true } : {}), updated_by: ctx.actor });
      await recordAudit(trx, {
        ...audit,
        action: 'agent.published',
        data: { version, fields, ...(defaultChange.moved ? { is_default: true, previous_default: defaultChange.previous } : {}) },
      });
      return this.get(orgId, agentId, trx);
    });
  }

  /**
   * `PATCH /v1/agents/{agent_id}/draft`: saves the sent fields into the draft. Without a draft,
   * the draft starts from the published version (`based_on_version` = `version`).
   */
  async saveDraft(orgId: string, agentId: string, input: AgentConfigChanges, ctx: ChangeContext): Promise<AgentDraftObject> {
    const { changes, fields } = configChanges(input as unknown as Record<string, unknown>);
    await this.checkToolUrls(changes);
    return this.deps.db.transaction(async (trx) => {
      const row = await this.load(trx, orgId, agentId, true);
      const hadDraft = row.draft !== null;
      const base = hadDraft ? readConfig(row.draft) : readConfig(row.published_config);
      const config = applyChanges(base, changes, this.applyOptions());
      const basedOn = hadDraft ? row.draft_based_on_version! : row.version;
      await updateAgent(trx, orgId, agentId, {
        draft: { config, based_on_version: basedOn, restored_from_version: hadDraft ? row.draft_restored_from_version : null, saved_by: ctx.actor },
        updated_by: ctx.actor,
      });
      await recordAudit(trx, {
        orgId,
        actor: ctx.actor,
        action: 'agent.draft_saved',
        objectType: 'agent',
        objectId: agentId,
        requestId: ctx.requestId ?? null,
        data: { fields, based_on_version: basedOn, started: !hadDraft },
      });
      return this.getDraft(orgId, agentId, trx);
    });
  }

  /**
   * `POST /v1/agents/{agent_id}/draft/publish`: the draft becomes the next version, whole. When
   * its `based_on_version` is below `version`, the versions published since are undone; they
   * are named in `undone_versions` of the response and of the new version. 409 `no_draft`
   * without a draft.
   */
  async publishDraft(orgId: string, agentId: string, ctx: ChangeContext): Promise<PublishedDraftObject> {
    return this.deps.db.transaction(async (trx) => {
      const row = await this.load(trx, orgId, agentId, true);
      if (row.draft === null) throw conflict(`Agent ${agentId} has no draft to publish`, 'no_draft');
      const basedOn = row.draft_based_on_version!;
      const version = row.version + 1;
      const undoneVersions: number[] = [];
      for (let v = basedOn + 1; v <= row.version; v++) undoneVersions.push(v);
      await insertVersion(trx, {
        org_id: orgId,
        agent_id: agentId,
        version,
        config: readConfig(row.draft),
        origin: 'draft',
        based_on_version: basedOn,
        restored_from_version: row.draft_restored_from_version,
        undone_versions: undoneVersions,
        created_by: ctx.actor,
      });
      await updateAgent(trx, orgId, agentId, { version, draft: null, updated_by: ctx.actor });
      await recordAudit(trx, {
        orgId,
        actor: ctx.actor,
        action: 'agent.draft_published',
        objectType: 'agent',
        objectId: agentId,
        requestId: ctx.requestId ?? null,
        data: { version, based_on_version: basedOn, undone_versions: undoneVersions, restored_from_version: row.draft_restored_from_version },
      });
      return { ...(await this.get(orgId, agentId, trx)), undone_versions: undoneVersions };
    });
  }

  /**
   * `DELETE /v1/agents/{agent_id}/draft`: drops the draft; returns the draft object as it now
   * is (the published version, `has_draft: false`). Without a draft nothing changes and nothing
   * is audited.
   */
  async discardDraft(orgId: string, agentId: string, ctx: ChangeContext): Promise<AgentDraftObject> {
    return this.deps.db.transaction(async (trx) => {
      const row = await this.load(trx, orgId, agentId, true);
      if (row.draft === null) return toAgentDraft(row, this.deps.config.baseUrl);
      await updateAgent(trx, orgId, agentId, { draft: null, updated_by: ctx.actor });
      await recordAudit(trx, {
        orgId,
        actor: ctx.actor,
        action: 'agent.draft_discarded',
        objectType: 'agent',
        objectId: agentId,
        requestId: ctx.requestId ?? null,
        data: { based_on_version: row.draft_based_on_version },
      });
      return this.getDraft(orgId, agentId, trx);
    });
  }

  /** The agent's published versions, newest first. */
  async listVersions(orgId: string, agentId: string, page: PageRequest): Promise<Page<AgentVersionObject>> {
    const found = await readVersionsPage(this.deps.db, orgId, agentId, page.cursor === null ? null : decodeCursor(page.cursor, PG_INTEGER_MAX), page.limit + 1);
    if (!found) throw notFound(`No agent ${agentId}`);
    const hasMore = found.versions.length > page.limit;
    const versions = hasMore ? found.versions.slice(0, page.limit) : found.versions;
    return {
      data: versions.map((version) => toAgentVersion(version, found.published, this.deps.config.baseUrl)),
      has_more: hasMore,
      next_cursor: hasMore ? encodeCursor(versions[versions.length - 1]!.version) : null,
    };
  }

  /** One published version; 404 when it does not exist. */
  async getVersion(orgId: string, agentId: string, version: number): Promise<AgentVersionObject> {
    const row = await this.load(this.deps.db, orgId, agentId);
    const found = await findVersion(this.deps.db, orgId, agentId, version);
    if (!found) throw notFound(`Agent ${agentId} has no version ${version}`);
    return toAgentVersion(found, row.version, this.deps.config.baseUrl);
  }

  /**
   * `POST /v1/agents/{agent_id}/versions/{version}/restore`: that version's config replaces the
   * draft (or becomes one). The draft counts as started now, from the current published version
   * (`based_on_version` = `version`), and remembers `restored_from_version`. Nothing runs
   * differently until the draft is published.
   */
  async restoreVersion(orgId: string, agentId: string, version: number, ctx: ChangeContext): Promise<AgentDraftObject> {
    return this.deps.db.transaction(async (trx) => {
      const row = await this.load(trx, orgId, agentId, true);
      const found = await findVersion(trx, orgId, agentId, version);
      if (!found) throw notFound(`Agent ${agentId} has no version ${version}`);
      await updateAgent(trx, orgId, agentId, {
        draft: { config: readConfig(found.config), based_on_version: row.version, restored_from_version: version, saved_by: ctx.actor },
        updated_by: ctx.actor,
      });
      await recordAudit(trx, {
        orgId,
        actor: ctx.actor,
        action: 'agent.version_restored',
        objectType: 'agent',
        objectId: agentId,
        requestId: ctx.requestId ?? null,
        data: { version, based_on_version: row.version, replaced_draft: row.draft !== null },
      });
      return this.getDraft(orgId, agentId, trx);
    });
  }

  /**
   * What a task (or a test run) runs: the published version, with `which: 'draft'` the draft (the
   * published version when there is none), or with a number that published version, current or
   * earlier. The one rule for every caller that takes `agent_version` (docs/agents.md, "Which
   * version runs"). Pass the task's transaction as `db` to read inside it. 404 when the org has
   * no such agent, or the agent no such version.
   */
  async resolveForTask(
    orgId: string,
    agentId: string,
    which: AgentVersionChoice,
    db: Knex | Knex.Transaction = this.deps.db,
  ): Promise<AgentForTask> {
    const row = await this.load(db, orgId, agentId);
    const runsDraft = which === 'draft' && row.draft !== null;
    const version = typeof which === 'number' ? which : runsDraft ? row.draft_based_on_version! : row.version;
    let stored = runsDraft ? row.draft : row.published_config;
    if (typeof which === 'number' && which !== row.version) {
      const found = await findVersion(db, orgId, agentId, which);
      if (!found) throw notFound(`Agent ${agentId} has no version ${which}; its published version is ${row.version}`);
      stored = found.config;
    }
    const config = readConfig(stored);
    return {
      agent_id: agentId,
      version,
      draft: runsDraft,
      config,
      model: effectiveModel(config),
      effort: config.effort ?? DEFAULT_EFFORT,
      invite_url_template: effectiveInviteUrlTemplate(config, this.deps.config.baseUrl),
    };
  }

  /** The id of the org's default agent (every org has one); 404 if it somehow has none. */
  async getDefaultAgentId(orgId: string): Promise<string> {
    const agentId = await findDefaultAgentId(this.deps.db, orgId);
    if (!agentId) throw notFound('The org has no default agent');
    return agentId;
  }

  private async insertNewAgent(
    trx: Knex.Transaction,
    orgId: string,
    agentId: string,
    config: AgentConfig,
    makeDefault: boolean,
    ctx: ChangeContext,
    fields: string[],
  ): Promise<void> {
    if (!(await lockOrgRow(trx, orgId))) throw notFound(`No org ${orgId}`);
    if (await findAgent(trx, orgId, agentId)) throw conflict(`Agent ${agentId} already exists`);
    const previous = await findDefaultAgentId(trx, orgId);
    // The org's first agent is its default whatever was asked: an org always has one.
    const isDefault = makeDefault || previous === null;
    if (isDefault && previous !== null) await clearDefault(trx, orgId, agentId);
    await insertAgent(trx, { org_id: orgId, agent_id: agentId, version: 1, is_default: isDefault, created_by: ctx.actor });
    await insertVersion(trx, {
      org_id: orgId,
      agent_id: agentId,
      version: 1,
      config,
      origin: 'created',
      based_on_version: null,
      restored_from_version: null,
      undone_versions: [],
      created_by: ctx.actor,
    });
    await recordAudit(trx, {
      orgId,
      actor: ctx.actor,
      action: 'agent.created',
      objectType: 'agent',
      objectId: agentId,
      requestId: ctx.requestId ?? null,
      data: { version: 1, fields, is_default: isDefault, ...(isDefault && previous ? { previous_default: previous } : {}) },
    });
  }

  /**
   * Checks an `is_default` change and, for `true`, clears the current default (under the org
   * lock). `false` on the default agent is refused: an org always has exactly one default,
   * moved by making another agent the default.
   */
  private async prepareDefaultChange(
    trx: Knex.Transaction,
    orgId: string,
    agentId: string,
    isDefault: boolean | undefined,
  ): Promise<{ moved: boolean; previous: string | null }> {
    if (isDefault === undefined) return { moved: false, previous: null };
    // The org lock comes before the agent row lock in every transaction that takes both.
    if (!(await lockOrgRow(trx, orgId))) throw notFound(`No agent ${agentId}`);
    const row = await this.load(trx, orgId, agentId, true);
    const previous = await findDefaultAgentId(trx, orgId);
    if (isDefault === false) {
      if (row.is_default) {
        throw conflict(
          `Agent ${agentId} is the org's default agent; make another agent the default (is_default: true on it) instead`,
          'default_agent_required',
        );
      }
      return { moved: false, previous };
    }
    if (row.is_default) return { moved: false, previous };
    await clearDefault(trx, orgId, agentId);
    return { moved: true, previous };
  }

  private async load(db: Knex | Knex.Transaction, orgId: string, agentId: string, forUpdate = false): Promise<AgentWithConfigRow> {
    const row = await findAgent(db, orgId, agentId, { forUpdate });
    if (!row) throw notFound(`No agent ${agentId}`);
    return row;
  }

  /**
   * Resolves the HTTP tool URLs sent and refuses any whose name resolves to a private, local or
   * reserved address (or to nothing), with the same check as a webhook URL; `applyChanges`
   * checks everything that needs no DNS. Done before the transaction: a lookup may take
   * seconds, and no row stays locked for it. The call itself checks again at connection time
   * (docs/outbound-http.md), which is what stops a name that changes its answer later.
   */
  private async checkToolUrls(changes: AgentConfigChanges): Promise<void> {
    const tools = changes.tools?.http;
    // Malformed lists are refused by applyChanges, with their own messages.
    if (!Array.isArray(tools) || tools.length > AGENT_LIMITS.httpTools) return;
    const checks = await Promise.all(
      tools.map((tool) =>
        typeof tool?.url === 'string' && tool.url.length <= AGENT_LIMITS.httpToolUrlChars
          ? checkUrlForRegistration(tool.url, { allowPrivate: this.deps.config.allowPrivateUrls, resolve: this.deps.resolve })
          : null,
      ),
    );
    checks.forEach((check, i) => {
      if (check && !check.ok) throw invalidRequest(`tools.http[${i}].url is refused: ${check.reason}${privateUrlHint(tools[i]!.url, this.deps.config.env, this.deps.config.allowPrivateUrls)}`);
    });
  }

  private applyOptions() {
    return { allowPrivateUrls: this.deps.config.allowPrivateUrls, urlRefusalHint: (url: string) => privateUrlHint(url, this.deps.config.env, this.deps.config.allowPrivateUrls) };
  }
}
