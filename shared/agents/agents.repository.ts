/**
 * SQL for the agent tables: `agents` (one row per agent: published version number, default
 * flag, draft) and `agent_versions` (each published config, whole). Callers pass the
 * transaction; locking is explicit (`forUpdate`).
 */
import { isTransaction, runPrepared, type Knex, type PreparedStatement } from '../db/knex';
import { keyedReader, listReader, type KeyedRead, type ListParameter } from '../db/batched-reads';
import { selectColumns, type IsoTimestamp } from '../db/timestamps';
import type { Actor } from '../audit/actor';

type Db = Knex | Knex.Transaction;

export type VersionOrigin = 'created' | 'patched' | 'draft';

export interface AgentRow {
  seq: number;
  org_id: string;
  agent_id: string;
  version: number;
  is_default: boolean;
  draft: unknown | null;
  draft_based_on_version: number | null;
  draft_restored_from_version: number | null;
  /** Timestamps are `Date`s read through Knex, the API's text from the prepared reads (shared/db/timestamps.ts). */
  draft_saved_at: Date | IsoTimestamp | null;
  draft_saved_by: Actor;
  created_at: Date | IsoTimestamp;
  created_by: Actor;
  updated_at: Date | IsoTimestamp;
  updated_by: Actor;
}

/** An agent row with the config of its published version. */
export interface AgentWithConfigRow extends AgentRow {
  published_config: unknown;
}

export interface VersionRow extends Record<string, unknown> {
  org_id: string;
  agent_id: string;
  version: number;
  config: unknown;
  origin: VersionOrigin;
  based_on_version: number | null;
  restored_from_version: number | null;
  undone_versions: number[];
  /** A `Date` read through Knex, the API's text from the prepared reads (shared/db/timestamps.ts). */
  created_at: Date | IsoTimestamp;
  created_by: Actor;
}

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

function withConfig(db: Db) {
  return db('agents as a')
    .join('agent_versions as v', function joinPublished() {
      this.on('v.org_id', 'a.org_id').andOn('v.agent_id', 'a.agent_id').andOn('v.version', 'a.version');
    })
    .select('a.*', 'v.config as published_config');
}

/** The columns of `agents`, named for prepared statements (a prepared `select *` fails once a migration adds a column). */
const AGENT_COLUMNS = [
  'seq', 'org_id', 'agent_id', 'version', 'is_default', 'draft', 'draft_based_on_version', 'draft_restored_from_version',
  'draft_saved_at', 'draft_saved_by', 'created_at', 'created_by', 'updated_at', 'updated_by',
] as const;
const AGENT_TIMESTAMPS = ['draft_saved_at', 'created_at', 'updated_at'] as const;
const VERSION_COLUMNS = ['org_id', 'agent_id', 'version', 'config', 'origin', 'based_on_version', 'restored_from_version', 'undone_versions', 'created_at', 'created_by'] as const;
const VERSION_TIMESTAMPS = ['created_at'] as const;
const columnsOf = (alias: string, columns: readonly string[]) => columns.map((column) => `${alias}."${column}"`).join(', ');
const WITH_CONFIG_SQL = `select ${selectColumns(AGENT_COLUMNS, AGENT_TIMESTAMPS, 'a')}, v.config as published_config
   from agents a join agent_versions v on v.org_id = a.org_id and v.agent_id = a.agent_id and v.version = a.version`;

const AGENT_WITH_CONFIG: KeyedRead = {
  name: 'agents-with-config-by-id',
  table: 'agents',
  columns: AGENT_COLUMNS,
  timestamps: AGENT_TIMESTAMPS,
  idColumn: 'agent_id',
  joined: { select: 'v.config as published_config', join: 'join agent_versions v on v.org_id = t.org_id and v.agent_id = t.agent_id and v.version = t.version' },
};

/**
 * The agent with its published config; `forUpdate` locks the agent row until the transaction
 * ends (pass a transaction). Outside a transaction (the API's reads) one prepared statement with
 * the other reads of agents of the same turn (shared/db/batched-reads.ts).
 */
export async function findAgent(
  db: Db,
  orgId: string,
  agentId: string,
  options: { forUpdate?: boolean } = {},
): Promise<AgentWithConfigRow | undefined> {
  if (!isTransaction(db)) return keyedReader<AgentWithConfigRow>(db, AGENT_WITH_CONFIG).read(orgId, agentId);
  if (options.forUpdate) {
    // Lock the agent row on its own first. Locking through the join would not do: when the
    // lock is granted after another publish, PostgreSQL re-checks the new agent row against the
    // old version row, the join no longer matches, and the agent would seem to be gone. Once
    // locked, the next statement sees the latest committed row and its version.
    const locked = await db('agents').where({ org_id: orgId, agent_id: agentId }).forUpdate().first('agent_id');
    if (!locked) return undefined;
  }
  return (await withConfig(db).where({ 'a.org_id': orgId, 'a.agent_id': agentId }).first()) as AgentWithConfigRow | undefined;
}

/** Every agent of the org with its published config, newest first. */
export async function listAgents(db: Knex, orgId: string): Promise<AgentWithConfigRow[]> {
  return listReader<AgentWithConfigRow>(db, 'agents-with-config', [{ name: 'org_id', type: 'text' }], `${WITH_CONFIG_SQL} where a.org_id = k.org_id order by a.seq desc`).read([orgId]);
}

export async function findDefaultAgentId(db: Db, orgId: string): Promise<string | null> {
  const [row] = await runPrepared<{ agent_id: string }>(db, FIND_DEFAULT_AGENT_ID, [orgId]);
  return row ? row.agent_id : null;
}

/** The org's default agent's id, the org's id in the parameter `orgParam` (`$1`…): a query of its own, or a subquery in another statement. */
export const defaultAgentIdOf = (orgParam: string) => `select agent_id from agents where org_id = ${orgParam} and is_default limit 1`;

/** Prepared: every new person's session reads it (a machine's reads it in its insert, `insertMachineSession`). */
const FIND_DEFAULT_AGENT_ID: PreparedStatement = {
  name: 'agents:find-default-id',
  text: defaultAgentIdOf('$1'),
};

/** Clears the default flag of the org's agents other than `exceptAgentId`. */
export async function clearDefault(trx: Knex.Transaction, orgId: string, exceptAgentId: string): Promise<void> {
  await trx('agents').where({ org_id: orgId, is_default: true }).whereNot({ agent_id: exceptAgentId }).update({ is_default: false });
}

export async function insertAgent(
  trx: Knex.Transaction,
  row: { org_id: string; agent_id: string; version: number; is_default: boolean; created_by: Actor },
): Promise<void> {
  await trx('agents').insert({
    org_id: row.org_id,
    agent_id: row.agent_id,
    version: row.version,
    is_default: row.is_default,
    created_by: json(row.created_by),
    updated_by: json(row.created_by),
  });
}

export interface AgentUpdate {
  version?: number;
  is_default?: boolean;
  /** A draft to save, or null to clear it (with its based-on version, restore source and saver). */
  draft?: { config: unknown; based_on_version: number; restored_from_version: number | null; saved_by: Actor } | null;
  updated_by: Actor;
}

/** Updates the agent row; `updated_at` is always set to now. */
export async function updateAgent(trx: Knex.Transaction, orgId: string, agentId: string, update: AgentUpdate): Promise<void> {
  const set: Record<string, unknown> = { updated_at: trx.fn.now(), updated_by: json(update.updated_by) };
  if (update.version !== undefined) set.version = update.version;
  if (update.is_default !== undefined) set.is_default = update.is_default;
  if (update.draft === null) {
    Object.assign(set, { draft: null, draft_based_on_version: null, draft_restored_from_version: null, draft_saved_at: null, draft_saved_by: null });
  } else if (update.draft !== undefined) {
    Object.assign(set, {
      draft: json(update.draft.config),
      draft_based_on_version: update.draft.based_on_version,
      draft_restored_from_version: update.draft.restored_from_version,
      draft_saved_at: trx.fn.now(),
      draft_saved_by: json(update.draft.saved_by),
    });
  }
  await trx('agents').where({ org_id: orgId, agent_id: agentId }).update(set);
}

export async function insertVersion(
  trx: Knex.Transaction,
  row: {
    org_id: string;
    agent_id: string;
    version: number;
    config: unknown;
    origin: VersionOrigin;
    based_on_version: number | null;
    restored_from_version: number | null;
    undone_versions: number[];
    created_by: Actor;
  },
): Promise<VersionRow> {
  const [inserted] = await trx('agent_versions')
    .insert({ ...row, config: json(row.config), created_by: json(row.created_by) })
    .returning('*');
  return inserted as VersionRow;
}

export async function findVersion(db: Db, orgId: string, agentId: string, version: number): Promise<VersionRow | undefined> {
  return (await db('agent_versions').where({ org_id: orgId, agent_id: agentId, version }).first()) as VersionRow | undefined;
}

const versionsPage = (withCursor: boolean) => ({
  name: `agent-versions-page${withCursor ? '-after' : ''}`,
  parameters: [
    { name: 'org_id', type: 'text' },
    { name: 'agent_id', type: 'text' },
    { name: 'lim', type: 'integer' },
    ...(withCursor ? [{ name: 'before', type: 'bigint' }] : []),
  ] as ListParameter[],
  query: `select a.version as published_version, ${columnsOf('v', VERSION_COLUMNS)}
       from agents a
       left join lateral (
         select ${selectColumns(VERSION_COLUMNS, VERSION_TIMESTAMPS, 'x')} from agent_versions x
          where x.org_id = a.org_id and x.agent_id = a.agent_id ${withCursor ? 'and x.version < k.before' : ''}
          order by x.version desc limit k.lim
       ) v on true
      where a.org_id = k.org_id and a.agent_id = k.agent_id
      order by v.version desc`,
});
const versionsPageStatements = { first: versionsPage(false), after: versionsPage(true) };

/**
 * One page of an agent's versions, newest first (`limit` rows, pass one more than the page to
 * learn whether there are more), with the agent's published version, in one statement (shared
 * with the other such reads of the same turn, shared/db/batched-reads.ts).
 * Undefined when the org has no such agent.
 */
export async function readVersionsPage(
  db: Knex,
  orgId: string,
  agentId: string,
  beforeVersion: number | null,
  limit: number,
): Promise<{ published: number; versions: VersionRow[] } | undefined> {
  const shape = beforeVersion === null ? versionsPageStatements.first : versionsPageStatements.after;
  const reader = listReader<VersionRow & { published_version: number }>(db, shape.name, shape.parameters, shape.query);
  const rows = await reader.read(beforeVersion === null ? [orgId, agentId, limit] : [orgId, agentId, limit, beforeVersion]);
  if (rows.length === 0) return undefined;
  // An agent without versions on this page still comes back once, its version columns null.
  return { published: rows[0]!.published_version, versions: rows.filter((row) => row.version !== null).map(({ published_version: _, ...version }) => version) };
}
