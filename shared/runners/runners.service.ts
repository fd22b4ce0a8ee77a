import type { Knex } from '../db/knex';
import type { Logger } from '../logger';
import type { Actor, Caller } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { newId, randomString } from '../ids';
import { ApiError, invalidRequest, notFound } from '../errors';
import type { Page } from '../pagination';
import { displayPrefix, generateRunnerToken, hashSecret, isWellFormedRunnerToken } from '../api-keys/key-format';
import type { RunnerLink } from './runner-link';
import { toRunner, type Runner } from './runner-object';
import { lockOrgRow } from '../orgs/orgs.repository';
import {
  connectRunner,
  countLiveRunnersOfOrg,
  findRunnerByTokenHash,
  holdsRunner,
  isRevoked,
  insertRunner,
  listRunnersVisibleTo,
  readRunnerVisibleTo,
  recordHeartbeat,
  releaseRunner,
  revokeRunner,
  type RunnerReport,
  type RunnerRow,
  type RunnerScope,
} from './runners.repository';

export type { Runner } from './runner-object';

/** Spec limit: a runner's name is 1 to 80 characters (after trimming). */
export const RUNNER_NAME_MAX = 80;
/** Runners an org may have at once (not deleted): `GET /v1/runners` answers them in one page. */
export const RUNNERS_PER_ORG_MAX = 100;

/** Why a runner's hello was refused, in words its operator can act on. */
export class RunnerRefused extends Error {
  constructor(
    readonly code: 'unknown_token' | 'revoked',
    message: string,
  ) {
    super(message);
  }
}

/** A hello taken: the runner, and the id of the connection that holds it from now on. */
export interface RunnerConnection {
  runnerId: string;
  connectionId: string;
  orgId: string | null;
  scope: RunnerScope;
  name: string;
}

export interface RunnersDeps {
  db: Knex;
  link: RunnerLink;
  logger: Logger;
  /** How often a connected runner heartbeats (told in the hello reply). */
  heartbeatMs: number;
  /** Silence after which a connected runner reads `offline`. */
  offlineAfterMs: number;
  /** After a revocation commits: the runner's machines and unanswered commands are given up (`MachinesService.runnerLost`). */
  revoked?: (runnerId: string) => Promise<void>;
}

/**
 * Runners (docs/runners.md): registering and revoking them (audited in the same transaction),
 * reading them, and what their connections on the `/runners` namespace do: hello, heartbeat,
 * goodbye. What runs on them is `MachinesService`'s; `busy` is the service's own count of the
 * machines it placed there.
 */
export class RunnersService {
  constructor(private readonly deps: RunnersDeps) {}

  get heartbeatMs(): number {
    return this.deps.heartbeatMs;
  }

  /** Registers a runner of the org's own; its token is returned once. */
  async create(caller: Caller, name: string, requestId?: string): Promise<{ runner: Runner; token: string }> {
    return this.register({ orgId: caller.orgId, scope: 'org' }, name, caller.actor, requestId);
  }

  /** Registers a cloud runner (the operator's, serving every org); its token is returned once. */
  async createCloud(name: string, actor: Actor = null): Promise<{ runner: Runner; token: string }> {
    return this.register({ orgId: null, scope: 'cloud' }, name, actor);
  }

  private async register(owner: { orgId: string | null; scope: RunnerScope }, rawName: string, actor: Actor, requestId?: string): Promise<{ runner: Runner; token: string }> {
    const name = rawName.trim();
    if (!name || name.length > RUNNER_NAME_MAX) throw invalidRequest(`name must be 1 to ${RUNNER_NAME_MAX} characters (leading and trailing spaces are trimmed)`);
    const token = generateRunnerToken();
    const row = await this.deps.db.transaction(async (trx) => {
      if (owner.orgId) await assertRoomForRunner(trx, owner.orgId);
      const inserted = await insertRunner(trx, { id: newId('rn'), org_id: owner.orgId, scope: owner.scope, name, token_hash: hashSecret(token), token_prefix: displayPrefix(token) });
      await recordAudit(trx, {
        orgId: owner.orgId,
        actor,
        action: 'runner.created',
        objectType: 'runner',
        objectId: inserted.id,
        data: { name, scope: owner.scope, token_prefix: inserted.token_prefix },
        requestId,
      });
      return inserted;
    });
    return { runner: toRunner({ ...row, online: false, machines_busy: 0 }), token };
  }

  /** The org's runners and the cloud runners, newest first, in one page. */
  async list(orgId: string): Promise<Page<Runner>> {
    const rows = await listRunnersVisibleTo(this.deps.db, orgId, this.deps.offlineAfterMs);
    return { data: rows.map(toRunner), has_more: false, next_cursor: null };
  }

  /** One of the org's runners or a cloud runner; another org's is 404. */
  async get(orgId: string, runnerId: string): Promise<Runner> {
    const row = await readRunnerVisibleTo(this.deps.db, orgId, runnerId, this.deps.offlineAfterMs);
    if (!row) throw notFound(`No runner ${runnerId}`);
    return toRunner(row);
  }

  /**
   * Revokes one of the org's runners: its token stops working and its connection closes at once,
   * on whichever web process holds it. Returns the runner as it was, now offline. A cloud runner
   * is the operator's: 403 `cloud_runner`. Another org's is 404.
   */
  async revoke(caller: Caller, runnerId: string, requestId?: string): Promise<Runner> {
    return this.revokeWhere({ id: runnerId, org_id: caller.orgId, scope: 'org' }, caller.actor, requestId, async (trx) => {
      const visible = await readRunnerVisibleTo(trx, caller.orgId, runnerId, this.deps.offlineAfterMs);
      if (visible?.scope === 'cloud') throw new ApiError('permission', `${runnerId} is a cloud runner: the service's own, which an org cannot delete`, { code: 'cloud_runner' });
    });
  }

  /** Revokes a cloud runner (the operator's CLI, `runners revoke`); audited in a row with no org. An org's runner is 404 here. */
  async revokeCloud(runnerId: string, actor: Actor = null): Promise<Runner> {
    return this.revokeWhere({ id: runnerId, org_id: null, scope: 'cloud' }, actor);
  }

  /**
   * Revokes the live runner `where` names (after `check`, in the same transaction): its token stops
   * working, the audit row commits with it, and its connection is closed wherever it is held.
   */
  private async revokeWhere(
    where: { id: string; org_id: string | null; scope: RunnerScope },
    actor: Actor,
    requestId?: string,
    check?: (trx: Knex.Transaction) => Promise<void>,
  ): Promise<Runner> {
    const row = await this.deps.db.transaction(async (trx) => {
      await check?.(trx);
      const revoked = await revokeRunner(trx, where);
      if (!revoked) throw notFound(`No runner ${where.id}`);
      await recordAudit(trx, { orgId: where.org_id, actor, action: 'runner.deleted', objectType: 'runner', objectId: where.id, data: { name: revoked.name, scope: where.scope }, requestId });
      return revoked;
    });
    this.deps.link.disconnect(where.id);
    await this.deps.revoked?.(where.id);
    return toRunner({ ...row, online: false, machines_busy: 0 });
  }

  /**
   * A runner's hello: the token names the runner, and what it reports is stored. Throws
   * `RunnerRefused` for an unknown or revoked token.
   */
  async connect(token: string, report: RunnerReport): Promise<RunnerConnection> {
    if (!isWellFormedRunnerToken(token)) throw new RunnerRefused('unknown_token', 'This is not a runner token (they start with dhr_); create a runner with POST /v1/runners');
    const hash = hashSecret(token);
    const connectionId = randomString(16);
    const row = await connectRunner(this.deps.db, hash, connectionId, report);
    if (!row) {
      const known = await findRunnerByTokenHash(this.deps.db, hash);
      if (known) throw new RunnerRefused('revoked', `Runner ${known.id} has been deleted; its token no longer works`);
      throw new RunnerRefused('unknown_token', 'No runner has this token');
    }
    this.deps.logger.info({ runner: row.id, provider: report.provider, slots: report.slots }, 'runner connected');
    return connectionFrom(row, connectionId);
  }

  /**
   * Whether the connection still holds the runner, asked once it has joined its room: a
   * revocation that committed before is seen here, and one committing after reaches the room.
   */
  stillHolds(connection: RunnerConnection): Promise<boolean> {
    return holdsRunner(this.deps.db, connection.runnerId, connection.connectionId);
  }

  /** A heartbeat; a connection that no longer holds the runner (revoked, replaced) is refused and closed. */
  async heartbeat(connection: RunnerConnection, busy: number | undefined): Promise<void> {
    if (await recordHeartbeat(this.deps.db, connection.runnerId, connection.connectionId, busy)) return;
    // The disconnect at revocation may have been lost (Redis down then): this closes it. A
    // connection replaced by a newer one is not closed this way, which would close the newer too.
    if (await isRevoked(this.deps.db, connection.runnerId)) this.deps.link.disconnect(connection.runnerId);
    throw new ApiError('conflict', 'This connection no longer holds the runner (deleted, or connected again elsewhere)', { code: 'not_connected' });
  }

  /** The connection closed: offline at once. */
  async gone(connection: RunnerConnection): Promise<void> {
    await releaseRunner(this.deps.db, connection.runnerId, connection.connectionId);
    this.deps.logger.info({ runner: connection.runnerId }, 'runner disconnected');
  }
}

/** 409 `runner_limit` when the org has `RUNNERS_PER_ORG_MAX` runners; its row is locked so that two registrations count in turn. */
async function assertRoomForRunner(trx: Knex.Transaction, orgId: string): Promise<void> {
  await lockOrgRow(trx, orgId);
  if ((await countLiveRunnersOfOrg(trx, orgId)) >= RUNNERS_PER_ORG_MAX) {
    throw new ApiError('conflict', `This org has ${RUNNERS_PER_ORG_MAX} runners, the most it may have; delete one it no longer uses first`, { code: 'runner_limit' });
  }
}

function connectionFrom(row: RunnerRow, connectionId: string): RunnerConnection {
  return { runnerId: row.id, connectionId, orgId: row.org_id, scope: row.scope, name: row.name };
}
