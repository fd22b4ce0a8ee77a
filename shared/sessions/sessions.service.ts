import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { Actor } from '../audit/actor';
import type { AuthContext } from '../api-keys/api-keys.service';
import type { JobQueues } from '../queues/job-queues';
import type { ComputerLink } from '../desktop/computer-link';
import type { Capabilities, DeviceInfo } from '../desktop/protocol';
import { jobId } from '../queues/job-queues';
import { QUEUE_NAMES } from '../queues/catalog';
import { recordAudit } from '../audit/audit.repository';
import { appendOrgEvent, dispatchOrgEvents } from '../events/org-events';
import { generateSessionToken, hashSecret } from '../api-keys/key-format';
import { notFound } from '../errors';
import type { Page, PageRequest } from '../pagination';
import { normalizePairingCode } from './pairing-code';
import { toSession, type Session } from './session-object';
import { SERVICE_DISPLAY_NAME, type SessionAgent, type SessionAgentDirectory } from './session-agents';
import {
  connectSession,
  disconnectSession,
  expireDueSessions,
  findSession,
  findSessionByCode,
  findSessionsAwayWithTask,
  insertMachineSession,
  insertSessionWithNewCode,
  isNoDefaultAgent,
  listSessions,
  readSessionObject,
  touchSession,
  updateSession,
  type SessionFilter,
  type SessionRow,
  type SessionKind,
  expireSession,
} from './sessions.repository';

// Where they were first written; importers keep working.
export { toSession, type Session } from './session-object';
export type { SessionAgent, SessionAgentDirectory } from './session-agents';

/** An unused code (or a computer gone this long) expires; a machine session's does not: its runner may take long to make it (or bring it back), and it ends only when the service ends it (`endMachineSession`; `disconnectSession`). */
export const SESSION_IDLE_EXPIRY_MS = 72 * 3600 * 1000;

/** Why a computer's connection was refused, in words the app can show. */
export class ConnectRefused extends Error {
  constructor(
    readonly code: 'unknown_code' | 'expired' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

/** What the service mints a machine session with (`SessionsService.createMachineSession`). */
export interface MachineSessionInput {
  orgId: string;
  /** The org's default agent when left out. */
  agentId?: string;
  metadata?: Record<string, string>;
  /** What the machine is, for people reading the session row (e.g. "try 3 of run X"). */
  label?: string;
}

/** Work other domains do when a session's computer goes away (the running task stops or fails). */
export type ComputerGoneHook = (session: SessionRow, why: 'offline' | 'released' | 'expired') => Promise<void>;

export interface SessionsDeps {
  db: Knex;
  clock: Clock;
  queues: JobQueues;
  link: ComputerLink;
  agents: SessionAgentDirectory;
  /** Counts session creations per org (600 an hour); throws 429. */
  limitCreation: (orgId: string) => Promise<void>;
  logger: Logger;
  /**
   * How long the task of a computer whose connection dropped waits for it to say hello again
   * (a web process restarting, a network blip) before it fails; 0 fails it at once.
   */
  reconnectGraceMs: number;
}

/** Past the reconnect grace, the job that ends the task runs a little later, so that a clock a few ms apart still finds it due. */
const GRACE_CHECK_SLACK_MS = 250;

export class SessionsService {
  private readonly goneHooks: ComputerGoneHook[] = [];

  constructor(private readonly deps: SessionsDeps) {}

  onComputerGone(hook: ComputerGoneHook): void {
    this.goneHooks.push(hook);
  }

  private async computerGone(row: SessionRow, why: 'offline' | 'released' | 'expired'): Promise<void> {
    for (const hook of this.goneHooks) {
      await hook(row, why).catch((error) => this.deps.logger.error({ err: error, code: row.code }, 'computer-gone hook failed'));
    }
  }

  private expiryFrom(now: Date): Date {
    return new Date(now.getTime() + SESSION_IDLE_EXPIRY_MS);
  }

  /** Puts (or moves) the delayed job that expires `code` at `at` (none for null); the sweep covers a lost job. */
  private async scheduleExpiry(code: string, at: Date | null, generation: number): Promise<void> {
    if (!at) return;
    const delay = Math.max(0, at.getTime() - this.deps.clock.now().getTime());
    await this.deps.queues.enqueueOrLeaveToSweep(QUEUE_NAMES.maintenance, 'expire-session', { code }, { jobId: jobId('expire', code, generation), delay });
  }

  async create(auth: AuthContext, input: { agent_id?: string; metadata?: Record<string, string> }, requestId: string): Promise<{ session: Session; token: string }> {
    await this.deps.limitCreation(auth.orgId);
    const agent = await this.deps.agents.forSession(auth.orgId, input.agent_id ?? null);
    const token = generateSessionToken();
    const now = this.deps.clock.now();
    const row = await insertSessionWithNewCode(
      this.deps.db,
      (code) => ({
        code,
        org_id: auth.orgId,
        agent_id: agent.agentId,
        token_hash: hashSecret(token),
        invite_url: agent.inviteUrlTemplate.split('{code}').join(code),
        metadata: input.metadata ?? {},
        created_at: now,
        expires_at: this.expiryFrom(now),
      }),
      (code) => ({ orgId: auth.orgId, actor: auth.actor, action: 'session.created', objectType: 'session', objectId: code, data: { agent_id: agent.agentId }, requestId }),
    );
    await this.scheduleExpiry(row.code, row.expires_at, 0);
    return { session: toSession(row), token };
  }

  /**
   * Mints a machine session: a pairing code the machine's desktop client says hello with, as a
   * person's app does, but no invite link, no token for the older API, and no idle expiry. It
   * is the service's own object: the API's session endpoints, the older API and the invite page
   * do not know it. Written in `db`'s transaction when it is one, else in its own. Not in the
   * org's audit log (which records what people and keys change): the try that asked for the
   * machine records it.
   */
  async createMachineSession(db: Knex | Knex.Transaction, input: MachineSessionInput): Promise<{ session: SessionRow; code: string }> {
    // The session's agent is only a default for its tasks: a machine shows nobody a greeting. The
    // org's default agent is read by the insert itself. Through `db`: a caller in a transaction
    // must not wait for a second connection of the pool.
    const row = { orgId: input.orgId, agentId: input.agentId ?? null, label: input.label ?? null, metadata: input.metadata ?? {}, createdAt: this.deps.clock.now() };
    const session = await insertMachineSession(db, row).catch((error: unknown) => {
      throw isNoDefaultAgent(error) ? notFound('The org has no default agent') : error;
    });
    return { session, code: session.code };
  }

  async get(orgId: string, code: string): Promise<Session> {
    const row = await readSessionObject(this.deps.db, orgId, code);
    if (!row || row.kind !== 'person') throw notFound(`No session ${code}`);
    return toSession(row);
  }

  async getRow(orgId: string, code: string, db: Knex | Knex.Transaction = this.deps.db): Promise<SessionRow> {
    const row = await findSession(db, orgId, code);
    if (!row) throw notFound(`No session ${code}`);
    return row;
  }

  list(orgId: string, filter: SessionFilter, page: PageRequest): Promise<Page<Session>> {
    return listSessions(this.deps.db, orgId, filter, page, toSession);
  }

  /**
   * The team lets go of the computer: the session is disconnected (its code and token stay
   * valid), a running task stops, the app is told and forgets the code.
   */
  async disconnect(auth: AuthContext, code: string, requestId: string): Promise<Session> {
    const now = this.deps.clock.now();
    const { row, eventId } = await this.deps.db.transaction(async (trx) => {
      const current = await findSessionByCode(trx, code, true);
      if (!current || current.org_id !== auth.orgId || current.kind !== 'person') throw notFound(`No session ${code}`);
      if (current.status !== 'connected') return { row: current, eventId: null };
      const updated = await updateSession(trx, code, {
        status: 'disconnected',
        connection_epoch: current.connection_epoch + 1,
        last_active_at: now,
        expires_at: this.expiryFrom(now),
      });
      await recordAudit(trx, { orgId: auth.orgId, actor: auth.actor, action: 'session.disconnected', objectType: 'session', objectId: code, requestId });
      const id = await this.sessionOrgEvent(trx, updated, 'session.disconnected');
      return { row: updated, eventId: id };
    });
    if (eventId) {
      this.deps.link.release(code, 'The team disconnected this computer.');
      await this.afterOffline(row, eventId, 'released');
    }
    return toSession(row);
  }

  /** The team ends the session: code and token stop working, a running task stops. */
  async expire(auth: AuthContext, code: string, requestId: string): Promise<Session> {
    const row = await this.end(code, { orgId: auth.orgId, kind: 'person' }, { actor: auth.actor, requestId });
    return toSession(row);
  }

  /**
   * The service ends a machine session (its runner is done with the machine, or gave up making
   * it): the code stops working, a running task stops, a connected machine is let go. The only
   * way a machine session expires. 404 for a code of another org or of a person's session. No
   * audit row (see `createMachineSession`); `reason` goes to the service's log.
   */
  async endMachineSession(orgId: string, code: string, options: { reason?: string } = {}): Promise<SessionRow> {
    const row = await this.end(code, { orgId, kind: 'machine' }, { actor: null });
    this.deps.logger.info({ code, org_id: orgId, reason: options.reason ?? null }, 'machine session ended');
    return row;
  }

  /** Expires the org's session of the kind given (404 for any other), once; a person's audit row commits with it. */
  private async end(code: string, owner: { orgId: string; kind: SessionKind }, audit: { actor: Actor; requestId?: string; data?: Record<string, unknown> }): Promise<SessionRow> {
    const ended = await expireSession(this.deps.db, code, owner, this.deps.clock.now(), audit);
    if (!ended) throw notFound(`No session ${code}`);
    const { row, changed, wasConnected } = ended;
    if (changed) {
      if (wasConnected) this.deps.link.release(code, 'This session has ended.');
      await this.computerGone(row, 'expired');
    }
    return row;
  }

  /**
   * A computer presents a code. Refuses unknown and expired codes; otherwise the session is
   * connected (a reconnect included) and the new connection's epoch returned.
   */
  async connect(input: { code: string; device: DeviceInfo; capabilities: Capabilities }): Promise<{ session: SessionRow; epoch: number; agent: SessionAgent }> {
    const code = normalizePairingCode(input.code);
    if (!code) throw new ConnectRefused('invalid', 'That is not a pairing code: it has four characters, a dash, and four more.');
    const now = this.deps.clock.now();
    // A machine's hello is one statement: nothing is written with it. A person's goes with its
    // org event, in a transaction (after this statement found no machine's session with the code).
    const machine = await connectSession(this.deps.db, code, now, input, 'machine');
    const { row, eventId } = machine ? { row: machine, eventId: null } : await this.deps.db.transaction(async (trx) => {
      const updated = await connectSession(trx, code, now, input, 'person');
      if (!updated) {
        const current = await findSessionByCode(trx, code);
        if (!current) throw new ConnectRefused('unknown_code', 'This code is not known. Check it, or ask for a new invite.');
        throw new ConnectRefused('expired', 'This code has expired. Ask for a new invite.');
      }
      const id = await this.sessionOrgEvent(trx, updated, 'session.connected');
      return { row: updated, eventId: id };
    });
    await dispatchOrgEvents(this.deps.queues, eventId ? [eventId] : []);
    // Nobody sits at a machine: its hello names the service and greets nobody, and its agent is not read.
    const unnamed = { agentId: row.agent_id, displayName: '', greeting: '', inviteUrlTemplate: row.invite_url ?? '' };
    const agent = row.kind === 'machine' ? { ...unnamed, displayName: SERVICE_DISPLAY_NAME } : await this.deps.agents.forSession(row.org_id, row.agent_id).catch(() => unnamed);
    return { session: row, epoch: row.connection_epoch, agent };
  }

  /**
   * A connection of the computer closed; the session goes offline (event `session.disconnected`)
   * unless a newer connection exists. Its running task waits `reconnectGraceMs` for the computer
   * to come back (`expireDue` ends it after that).
   */
  async markOffline(connection: { code: string; epoch: number; kind: SessionKind }): Promise<void> {
    const { code, epoch, kind } = connection;
    const now = this.deps.clock.now();
    // A machine's is one statement, as its hello is; a person's goes with its org event, in a transaction.
    const result =
      kind === 'machine'
        ? await disconnectSession(this.deps.db, code, epoch, now, this.expiryFrom(now)).then((row) => row && { row, eventId: null })
        : await this.deps.db.transaction(async (trx) => {
            const updated = await disconnectSession(trx, code, epoch, now, this.expiryFrom(now));
            if (!updated) return null;
            const eventId = await this.sessionOrgEvent(trx, updated, 'session.disconnected');
            return { row: updated, eventId };
          });
    if (result) await this.afterOffline(result.row, result.eventId, 'offline');
  }

  /**
   * The org event (for webhooks) of a person session's change; none for a machine session,
   * which the org's API does not show (docs/desktop-protocol.md, "Session kinds").
   */
  private async sessionOrgEvent(trx: Knex.Transaction, row: SessionRow, type: 'session.connected' | 'session.disconnected'): Promise<string | null> {
    if (row.kind !== 'person') return null;
    return appendOrgEvent(trx, { orgId: row.org_id, type, sessionId: row.code, data: { session: toSession(row) } });
  }

  /**
   * After a disconnect commits: deliver its event, stop the running task (released) or give the
   * computer the reconnect grace to come back (offline), schedule the code's expiry.
   */
  private async afterOffline(row: SessionRow, eventId: string | null, why: 'offline' | 'released'): Promise<void> {
    await dispatchOrgEvents(this.deps.queues, eventId ? [eventId] : []);
    const grace = this.deps.reconnectGraceMs;
    if (why === 'released' || grace === 0) {
      await this.computerGone(row, why);
    } else {
      // The delayed job runs `expireDue`, which ends the task if the computer is still away; the
      // sweep does the same should the job be lost. One job per connection that dropped.
      await this.deps.queues.enqueue(QUEUE_NAMES.maintenance, 'expire-session', { code: row.code }, {
        jobId: jobId('reconnect-grace', row.code, row.connection_epoch),
        delay: grace + GRACE_CHECK_SLACK_MS,
      });
    }
    await this.scheduleExpiry(row.code, row.expires_at, row.connection_epoch);
  }

  /** What the invite page shows for a code; null when no person's session has it (a machine has no invite). */
  async invite(code: string): Promise<{ status: SessionRow['status']; paired: boolean; deviceName: string | null; agent: SessionAgent } | null> {
    const row = await findSessionByCode(this.deps.db, code);
    if (!row || row.kind !== 'person') return null;
    const agent = await this.deps.agents.forSession(row.org_id, row.agent_id);
    return { status: row.status, paired: row.paired_at !== null, deviceName: row.device?.name ?? null, agent };
  }

  /** Records activity of a connected computer. */
  async touch(code: string): Promise<void> {
    await touchSession(this.deps.db, code, this.deps.clock.now());
  }

  /**
   * What is due on sessions at the clock's now: ends the task of every computer away for longer
   * than the reconnect grace, and expires every session past its expiry. Returns how many tasks
   * it ended and sessions it expired. Used by the `expire-session` job and the sweep.
   */
  async expireDue(): Promise<number> {
    return (await this.endTasksOfAwayComputers()) + (await this.expireDueSessions());
  }

  /** Fails the task of every computer that went offline more than `reconnectGraceMs` ago and has not come back. */
  private async endTasksOfAwayComputers(): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - this.deps.reconnectGraceMs);
    const away = await findSessionsAwayWithTask(this.deps.db, before);
    for (const row of away) await this.computerGone(row, 'offline');
    return away.length;
  }

  private async expireDueSessions(): Promise<number> {
    const expired = await this.deps.db.transaction(async (trx) => {
      const rows = await expireDueSessions(trx, this.deps.clock.now());
      for (const row of rows) {
        await recordAudit(trx, { orgId: row.org_id, actor: null as Actor, action: 'session.expired', objectType: 'session', objectId: row.code, data: { reason: 'unused for 72 hours' } });
      }
      return rows;
    });
    for (const row of expired) await this.computerGone(row, 'expired');
    return expired.length;
  }
}

