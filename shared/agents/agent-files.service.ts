/**
 * The agent's own file store (AgentTools `files`): text files kept per agent, separate from the
 * person's computer, shared by every version of the agent. The org's team reads and writes them
 * through the API; during a task the agent lists, reads and searches them, and writes and
 * deletes them when `tools.files.access` is `read_write`.
 */
import type { Knex } from '../db/knex';
import type { Actor } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { ApiError, conflict, invalidRequest, notFound } from '../errors';
import type { AgentTools } from './agent-config';
import {
  agentExists,
  deleteFile,
  filesContaining,
  findFile,
  listFiles,
  lockAgent,
  upsertFile,
  usage,
  type AgentFileRow,
} from './agent-files.repository';

/** The store's limits (documented in docs/agents.md). */
export const AGENT_FILE_LIMITS = Object.freeze({
  /** UTF-8 bytes of one file. */
  fileBytes: 256 * 1024,
  filesPerAgent: 1_000,
  /** UTF-8 bytes of all of an agent's files together. */
  bytesPerAgent: 10 * 1024 * 1024,
  pathChars: 200,
  searchQueryChars: 200,
  /** Matching lines one search returns at most. */
  searchMatches: 100,
  /** A matching line longer than this comes back cut to this many characters. */
  searchLineChars: 500,
});

const PATH_CHARS = /^[A-Za-z0-9._\-/]+$/;

/**
 * Who uses the store. The team (API) may always read and write. The agent (during a task) is
 * held to the `tools` of the version the task runs: nothing when `files.enabled` is false, and
 * no writes or deletes when `files.access` is `read_only`.
 */
export type FileAccessor =
  | { kind: 'team'; actor: Actor; requestId?: string | null }
  | { kind: 'agent'; tools: AgentTools; taskId?: string | null };

/** A file as the API returns it (`object: agent_file`); `content` only when one file is read. */
export interface AgentFileObject {
  object: 'agent_file';
  agent_id: string;
  path: string;
  size_bytes: number;
  created_at: string;
  created_by: Actor;
  updated_at: string;
  updated_by: Actor;
  content?: string;
}

export interface FileSearchMatch {
  path: string;
  /** 1-based line number. */
  line: number;
  text: string;
}

export interface FileSearchResult {
  matches: FileSearchMatch[];
  /** True when more lines matched than `AGENT_FILE_LIMITS.searchMatches`. */
  truncated: boolean;
}

const TEAM: FileAccessor = { kind: 'team', actor: null };

/**
 * Checks a file path and returns it in canonical form (a leading `/` is dropped): 1 to 200
 * characters of letters, digits, `.`, `_`, `-` and `/`, folders separated by single slashes,
 * no `.` or `..` parts. Throws 400 naming `path`.
 */
export function normalizeFilePath(value: unknown): string {
  if (typeof value !== 'string') throw invalidRequest('path must be a string');
  const path = value.replace(/^\/+/, '');
  if (path.length < 1 || path.length > AGENT_FILE_LIMITS.pathChars) {
    throw invalidRequest(`path must be 1 to ${AGENT_FILE_LIMITS.pathChars} characters`);
  }
  if (!PATH_CHARS.test(path)) throw invalidRequest("path may hold only letters, digits, '.', '_', '-' and '/'");
  const parts = path.split('/');
  if (parts.some((part) => part === '')) throw invalidRequest('path must not end with / or hold an empty folder name (//)');
  if (parts.some((part) => part === '.' || part === '..')) throw invalidRequest('path must not hold . or .. as a folder or file name');
  return path;
}

function toObject(row: AgentFileRow, content?: string): AgentFileObject {
  return {
    object: 'agent_file',
    agent_id: row.agent_id,
    path: row.path,
    size_bytes: row.size_bytes,
    created_at: row.created_at.toISOString(),
    created_by: row.created_by ?? null,
    updated_at: row.updated_at.toISOString(),
    updated_by: row.updated_by ?? null,
    ...(content !== undefined ? { content } : {}),
  };
}

export class AgentFileService {
  constructor(private readonly deps: { db: Knex }) {}

  /** The agent's files (without content), by path; `folder` keeps those under it. */
  async list(orgId: string, agentId: string, options: { folder?: string | null; accessor?: FileAccessor } = {}): Promise<AgentFileObject[]> {
    this.checkRead(options.accessor ?? TEAM);
    const folder = options.folder ? normalizeFilePath(options.folder.replace(/\/+$/, '')) : null;
    await this.requireAgent(this.deps.db, orgId, agentId);
    return (await listFiles(this.deps.db, orgId, agentId, folder)).map((row) => toObject(row));
  }

  /** One file with its content; 404 when it does not exist. */
  async read(orgId: string, agentId: string, path: string, accessor: FileAccessor = TEAM): Promise<AgentFileObject & { content: string }> {
    this.checkRead(accessor);
    const canonical = normalizeFilePath(path);
    await this.requireAgent(this.deps.db, orgId, agentId);
    const row = await findFile(this.deps.db, orgId, agentId, canonical);
    if (!row) throw notFound(`Agent ${agentId} has no file ${canonical}`);
    return toObject(row, row.content) as AgentFileObject & { content: string };
  }

  /**
   * Creates or replaces a file. 400 for a bad path or content over 256 KB; 409 `file_store_full`
   * past 1,000 files or 10 MB for the agent; 403 for an agent whose files are read-only or off.
   */
  async write(
    orgId: string,
    agentId: string,
    path: string,
    content: string,
    accessor: FileAccessor,
  ): Promise<AgentFileObject & { created: boolean }> {
    this.checkWrite(accessor);
    const canonical = normalizeFilePath(path);
    if (typeof content !== 'string') throw invalidRequest('content must be a string');
    if (content.includes('\u0000')) throw invalidRequest('content must be text: it holds a NUL character');
    const size = Buffer.byteLength(content, 'utf8');
    if (size > AGENT_FILE_LIMITS.fileBytes) {
      throw invalidRequest(`content must be at most ${AGENT_FILE_LIMITS.fileBytes} bytes (256 KB) of UTF-8; it is ${size}`);
    }
    return this.deps.db.transaction(async (trx) => {
      if (!(await lockAgent(trx, orgId, agentId))) throw notFound(`No agent ${agentId}`);
      const others = await usage(trx, orgId, agentId, canonical);
      // `others` leaves this path out, so the count after the write is others + 1 either way.
      if (others.files + 1 > AGENT_FILE_LIMITS.filesPerAgent) {
        throw conflict(`Agent ${agentId} already holds ${AGENT_FILE_LIMITS.filesPerAgent} files, the most it can`, 'file_store_full');
      }
      if (others.bytes + size > AGENT_FILE_LIMITS.bytesPerAgent) {
        throw conflict(
          `Agent ${agentId}'s files would take ${others.bytes + size} bytes; the most is ${AGENT_FILE_LIMITS.bytesPerAgent} (10 MB)`,
          'file_store_full',
        );
      }
      const actor = accessor.kind === 'team' ? accessor.actor : null;
      const row = await upsertFile(trx, { org_id: orgId, agent_id: agentId, path: canonical, content, size_bytes: size, actor });
      await recordAudit(trx, {
        orgId,
        actor,
        action: 'agent.file_written',
        objectType: 'agent',
        objectId: agentId,
        requestId: accessor.kind === 'team' ? (accessor.requestId ?? null) : null,
        data: { path: canonical, size_bytes: size, created: row.created, ...(accessor.kind === 'agent' ? { task_id: accessor.taskId ?? null } : {}) },
      });
      return { ...toObject(row), created: row.created };
    });
  }

  /** Deletes a file; 404 when it does not exist. Returns the file as it was (without content). */
  async delete(orgId: string, agentId: string, path: string, accessor: FileAccessor): Promise<AgentFileObject> {
    this.checkWrite(accessor);
    const canonical = normalizeFilePath(path);
    return this.deps.db.transaction(async (trx) => {
      if (!(await lockAgent(trx, orgId, agentId))) throw notFound(`No agent ${agentId}`);
      const row = await deleteFile(trx, orgId, agentId, canonical);
      if (!row) throw notFound(`Agent ${agentId} has no file ${canonical}`);
      const actor = accessor.kind === 'team' ? accessor.actor : null;
      await recordAudit(trx, {
        orgId,
        actor,
        action: 'agent.file_deleted',
        objectType: 'agent',
        objectId: agentId,
        requestId: accessor.kind === 'team' ? (accessor.requestId ?? null) : null,
        data: { path: canonical, ...(accessor.kind === 'agent' ? { task_id: accessor.taskId ?? null } : {}) },
      });
      return toObject(row);
    });
  }

  /**
   * Lines that contain `query` (case-insensitive), by path then line, at most 100; longer lines
   * are cut to 500 characters. The query is 1 to 200 characters on one line.
   */
  async search(orgId: string, agentId: string, query: string, accessor: FileAccessor = TEAM): Promise<FileSearchResult> {
    this.checkRead(accessor);
    if (typeof query !== 'string' || query.length < 1 || query.length > AGENT_FILE_LIMITS.searchQueryChars) {
      throw invalidRequest(`query must be 1 to ${AGENT_FILE_LIMITS.searchQueryChars} characters`);
    }
    if (/[\r\n]/.test(query)) throw invalidRequest('query must be on one line');
    await this.requireAgent(this.deps.db, orgId, agentId);
    const needle = query.toLowerCase();
    const matches: FileSearchMatch[] = [];
    for (const file of await filesContaining(this.deps.db, orgId, agentId, query)) {
      const lines = file.content.split(/\r?\n/);
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i]!;
        if (!line.toLowerCase().includes(needle)) continue;
        if (matches.length === AGENT_FILE_LIMITS.searchMatches) return { matches, truncated: true };
        matches.push({ path: file.path, line: i + 1, text: line.slice(0, AGENT_FILE_LIMITS.searchLineChars) });
      }
    }
    return { matches, truncated: false };
  }

  private checkRead(accessor: FileAccessor): void {
    if (accessor.kind === 'agent' && !accessor.tools.files.enabled) {
      throw new ApiError('permission', "This agent's file store is turned off (tools.files.enabled is false)", { code: 'files_disabled' });
    }
  }

  private checkWrite(accessor: FileAccessor): void {
    this.checkRead(accessor);
    if (accessor.kind === 'agent' && accessor.tools.files.access !== 'read_write') {
      throw new ApiError('permission', "This agent's files are read-only (tools.files.access is read_only)", { code: 'files_read_only' });
    }
  }

  private async requireAgent(db: Knex | Knex.Transaction, orgId: string, agentId: string): Promise<void> {
    if (!(await agentExists(db, orgId, agentId))) throw notFound(`No agent ${agentId}`);
  }
}
