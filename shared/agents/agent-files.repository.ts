/** SQL for `agent_files`: the agent's own text files. */
import type { Knex } from '../db/knex';
import type { Actor } from '../audit/actor';

type Db = Knex | Knex.Transaction;

export interface AgentFileRow {
  org_id: string;
  agent_id: string;
  path: string;
  size_bytes: number;
  created_at: Date;
  created_by: Actor;
  updated_at: Date;
  updated_by: Actor;
}

export interface AgentFileWithContentRow extends AgentFileRow {
  content: string;
}

const META_COLUMNS = ['org_id', 'agent_id', 'path', 'size_bytes', 'created_at', 'created_by', 'updated_at', 'updated_by'];

/** `%`, `_` and `\` taken literally in a LIKE pattern. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** The agent's files without their content, by path; `folder` keeps those under `folder/`. */
export async function listFiles(db: Db, orgId: string, agentId: string, folder: string | null): Promise<AgentFileRow[]> {
  const query = db('agent_files').where({ org_id: orgId, agent_id: agentId }).select(META_COLUMNS).orderBy('path', 'asc');
  if (folder !== null) query.whereRaw("path like ? escape '\\'", [`${escapeLike(folder)}/%`]);
  return (await query) as AgentFileRow[];
}

export async function findFile(db: Db, orgId: string, agentId: string, path: string): Promise<AgentFileWithContentRow | undefined> {
  return (await db('agent_files').where({ org_id: orgId, agent_id: agentId, path }).first()) as AgentFileWithContentRow | undefined;
}

/** How many files and bytes the agent holds, leaving out `exceptPath` (the file being replaced). */
export async function usage(db: Db, orgId: string, agentId: string, exceptPath: string): Promise<{ files: number; bytes: number }> {
  const row = await db('agent_files')
    .where({ org_id: orgId, agent_id: agentId })
    .whereNot({ path: exceptPath })
    .first(db.raw('count(*)::int as files'), db.raw('coalesce(sum(size_bytes), 0)::bigint as bytes'));
  return { files: Number(row?.files ?? 0), bytes: Number(row?.bytes ?? 0) };
}

/** Creates or replaces a file; `created` says which. */
export async function upsertFile(
  trx: Knex.Transaction,
  row: { org_id: string; agent_id: string; path: string; content: string; size_bytes: number; actor: Actor },
): Promise<AgentFileRow & { created: boolean }> {
  const actor = row.actor === null ? null : JSON.stringify(row.actor);
  const [written] = await trx('agent_files')
    .insert({
      org_id: row.org_id,
      agent_id: row.agent_id,
      path: row.path,
      content: row.content,
      size_bytes: row.size_bytes,
      created_by: actor,
      updated_by: actor,
    })
    .onConflict(['org_id', 'agent_id', 'path'])
    .merge({ content: row.content, size_bytes: row.size_bytes, updated_at: trx.fn.now(), updated_by: actor })
    // xmax is 0 on a freshly inserted row and set on one the upsert updated.
    .returning([...META_COLUMNS, trx.raw('(xmax = 0) as created')]);
  return written as AgentFileRow & { created: boolean };
}

export async function deleteFile(trx: Knex.Transaction, orgId: string, agentId: string, path: string): Promise<AgentFileRow | undefined> {
  const [deleted] = await trx('agent_files').where({ org_id: orgId, agent_id: agentId, path }).delete().returning(META_COLUMNS);
  return deleted as AgentFileRow | undefined;
}

/** Files whose text contains `query` (case-insensitive), with their content, by path. */
export async function filesContaining(db: Db, orgId: string, agentId: string, query: string): Promise<Array<{ path: string; content: string }>> {
  return (await db('agent_files')
    .where({ org_id: orgId, agent_id: agentId })
    .whereRaw("content ilike ? escape '\\'", [`%${escapeLike(query)}%`])
    .orderBy('path', 'asc')
    .select('path', 'content')) as Array<{ path: string; content: string }>;
}

/** Locks the agent row so that the file-store limits are checked one write at a time. */
export async function lockAgent(trx: Knex.Transaction, orgId: string, agentId: string): Promise<boolean> {
  return Boolean(await trx('agents').where({ org_id: orgId, agent_id: agentId }).forUpdate().first('agent_id'));
}

export async function agentExists(db: Db, orgId: string, agentId: string): Promise<boolean> {
  return Boolean(await db('agents').where({ org_id: orgId, agent_id: agentId }).first('agent_id'));
}
