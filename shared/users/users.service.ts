import { randomBytes } from 'node:crypto';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Knex } from '../db/knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Redis } from '../redis';
import type { Actor } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { orgExists } from '../orgs/orgs.repository';
import { hashSecret } from '../api-keys/key-format';
import { ApiError, conflict, forbidden, invalidRequest, notFound, unauthenticated } from '../errors';
import { newId } from '../ids';
import type { AuthContext, Role } from '../auth/roles';
import { sameSecret } from '../auth/same-secret';
import { checkNewPassword, hashPassword, spendVerifyTime, verifyPassword } from './passwords';
import * as repo from './users.repository';

/** The prefix of a console session token (in the cookie) and of a sign-in link's token. */
export const CONSOLE_TOKEN_PREFIX = 'dhc_';
const LINK_TOKEN_PREFIX = 'dhl_';
const INVITATION_TOKEN_PREFIX = 'dhi_';
/** The refusal of an invitation's password, alike for a wrong password and an account that has none. */
const WRONG_INVITATION_PASSWORD =
  'That password does not match the account of this address. Use your Deskhand password, or sign in to the console first (with the link you were given) and open this invitation again';
/** How long a sign-in link (first owner) or an invitation stays usable. */
const SIGN_IN_LINK_MS = 7 * 24 * 3_600_000;
/** last_seen_at is written at most this often per session. */
const TOUCH_EVERY_MS = 60_000;
/** Failed sign-ins per account per 15 minutes (attempts per client address: config `signInsPerAddress`). */
export const SIGN_IN_LIMITS = { perAccount: 10, windowSeconds: 15 * 60 } as const;

/** A person of an org as the API shows them (`object: member`). */
export interface MemberObject {
  object: 'member';
  user_id: string;
  email: string;
  role: Role;
  /** False until the person has set a password (they signed in with a link only). */
  has_password: boolean;
  created_at: string;
}

/** A console sign-in just made: the cookie's token and what the pages need. */
export interface NewConsoleSession {
  token: string;
  csrfToken: string;
  userId: string;
  orgId: string;
}

/** A live console sign-in, as a page reads it. */
export interface SignedIn {
  auth: AuthContext;
  email: string;
  /** The name of the org the sign-in acts for. */
  orgName: string;
  /** How many orgs the person belongs to: more than one, and the console offers to switch. */
  orgCount: number;
  csrfToken: string;
}

/** An invitation to join an org as the API shows it (`object: invitation`). */
export interface InvitationObject {
  object: 'invitation';
  invitation_id: string;
  email: string;
  role: Role;
  /** Who invited: a person or an API key of the org (null: the operator's CLI). */
  invited_by: Actor;
  created_at: string;
  expires_at: string;
}

/** What an invitation's link page shows. */
export interface InvitationView {
  orgId: string;
  orgName: string;
  email: string;
  role: Role;
  invitedBy: Actor;
  expiresAt: Date;
}

const secretToken = (prefix: string) => prefix + randomBytes(32).toString('base64url');

/** An address as the service keeps it, or the 400 a person reads. */
function checkEmail(value: string): string {
  const email = value.trim();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) throw invalidRequest('email must be an email address such as ada@example.com');
  return email;
}

const toInvitation = (row: { id: string; email: string; role: Role; invited_by: unknown; created_at: Date; expires_at: Date }): InvitationObject => ({
  object: 'invitation',
  invitation_id: row.id,
  email: row.email,
  role: row.role,
  invited_by: (row.invited_by ?? null) as Actor,
  created_at: row.created_at.toISOString(),
  expires_at: row.expires_at.toISOString(),
});

const toMember = (row: repo.MemberRow): MemberObject => ({
  object: 'member',
  user_id: row.user_id,
  email: row.email,
  role: row.role,
  has_password: row.has_password,
  created_at: row.created_at.toISOString(),
});

/**
 * The console's people (docs/console.md): members of orgs with a role, their sign-ins (a password
 * or a one-time link) and the console sessions those make, which the `/v1` API accepts beside API
 * keys. Every sign-in, sign-out, membership and role change is audited, by the person who made it.
 */
export class UsersService {
  private readonly perAddress: RateLimiterRedis;
  private readonly perAccount: RateLimiterRedis;
  private readonly touched = new Map<string, number>();

  constructor(private readonly deps: { db: Knex; redis: Redis; config: Readonly<Config>; logger: Logger }) {
    const limiter = (name: string, points: number) =>
      new RateLimiterRedis({
        storeClient: deps.redis,
        keyPrefix: `${deps.config.redisPrefix}:rl:${name}`,
        points,
        duration: SIGN_IN_LIMITS.windowSeconds,
        insuranceLimiter: new RateLimiterMemory({ points, duration: SIGN_IN_LIMITS.windowSeconds }),
      });
    this.perAddress = limiter('sign-in-address', deps.config.signInsPerAddress);
    this.perAccount = limiter('sign-in-account', SIGN_IN_LIMITS.perAccount);
  }

  /**
   * The operator's way in (the CLI's `users create`): a new address gets its account, the
   * membership and a one-time sign-in link at once. An address that already has an account gets
   * an invitation instead, which only that account's owner can accept (docs/console.md, "Joining
   * an org"): the operator hands the link to a person, and whoever holds it must still prove the
   * account is theirs.
   */
  async addMember(
    caller: { orgId: string; actor: Actor },
    input: { email: string; role: Role },
  ): Promise<{ userId: string | null; member: MemberObject | null; invitation: InvitationObject | null; signInUrl: string }> {
    const email = checkEmail(input.email);
    return this.deps.db.transaction(async (trx) => {
      if (!(await orgExists(trx, caller.orgId))) throw notFound(`No org ${caller.orgId}`);
      const existing = await repo.findUserByEmail(trx, email);
      if (existing) {
        const { invitation, inviteUrl } = await this.newInvitation(trx, caller, { email, role: input.role });
        return { userId: existing.id, member: null, invitation: { ...invitation, invite_url: inviteUrl }, signInUrl: inviteUrl };
      }
      const id = newId('usr');
      await repo.insertUser(trx, { id, email });
      await repo.insertMembership(trx, { org_id: caller.orgId, user_id: id, role: input.role });
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'member.added', objectType: 'user', objectId: id, data: { email, role: input.role } });
      const signInUrl = await this.newSignInLink(trx, id, caller.orgId);
      const member: MemberObject = { object: 'member', user_id: id, email, role: input.role, has_password: false, created_at: new Date().toISOString() };
      return { userId: id, member, invitation: null, signInUrl };
    });
  }

  /**
   * Invites a person to the org with a role (`POST /v1/members`). The answer is the same whether
   * or not the address has an account anywhere: the invitation and its one-time link, which the
   * inviter sends to the person. Inviting the same address again replaces the open invitation.
   * Only an owner invites an owner; an address that is already a member is refused (409).
   */
  async invite(caller: { orgId: string; actor: Actor; role?: Role }, input: { email: string; role: Role }, requestId?: string): Promise<InvitationObject & { invite_url: string }> {
    const email = checkEmail(input.email);
    if (input.role === 'owner' && caller.role && caller.role !== 'owner') throw forbidden('Only an owner can make someone an owner');
    return this.deps.db.transaction(async (trx) => {
      if (await repo.isMemberByEmail(trx, caller.orgId, email)) throw conflict(`${email} is already a member of this org`, 'already_member');
      const { invitation, inviteUrl } = await this.newInvitation(trx, caller, { email, role: input.role }, requestId);
      return { ...invitation, invite_url: inviteUrl };
    });
  }

  private async newInvitation(
    trx: Knex.Transaction,
    caller: { orgId: string; actor: Actor },
    input: { email: string; role: Role },
    requestId?: string,
  ): Promise<{ invitation: InvitationObject; inviteUrl: string }> {
    const token = secretToken(INVITATION_TOKEN_PREFIX);
    const id = newId('inv');
    const now = new Date();
    const expiresAt = new Date(now.getTime() + SIGN_IN_LINK_MS);
    const replaced = await repo.replaceInvitation(trx, {
      id,
      org_id: caller.orgId,
      email: input.email,
      role: input.role,
      token_hash: hashSecret(token),
      invited_by: caller.actor === null ? null : JSON.stringify(caller.actor),
      expires_at: expiresAt,
    });
    await recordAudit(trx, {
      orgId: caller.orgId,
      actor: caller.actor,
      action: 'member.invited',
      objectType: 'invitation',
      objectId: id,
      data: { email: input.email, role: input.role, ...(replaced ? { replaced } : {}) },
      requestId,
    });
    const invitation = toInvitation({ id, email: input.email, role: input.role, invited_by: caller.actor, created_at: now, expires_at: expiresAt });
    return { invitation, inviteUrl: `${this.deps.config.baseUrl}/console/invitations/${token}` };
  }

  /** The org's open invitations, newest first (their links are shown only when made). */
  async invitations(orgId: string): Promise<InvitationObject[]> {
    return (await repo.listOpenInvitations(this.deps.db, orgId)).map(toInvitation);
  }

  /** Revokes an open invitation: its link stops working at once. */
  async revokeInvitation(caller: AuthContext, invitationId: string, requestId?: string): Promise<void> {
    await this.deps.db.transaction(async (trx) => {
      const revoked = await repo.revokeInvitation(trx, caller.orgId, invitationId);
      if (!revoked) throw notFound(`No open invitation ${invitationId}`);
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'invitation.revoked', objectType: 'invitation', objectId: invitationId, data: { email: revoked.email, role: revoked.role }, requestId });
    });
  }

  /**
   * What an invitation's link shows before it is accepted: the org, the address and the role, and
   * who invited. Nothing about the address's account: the page is the same whether it has one.
   */
  async invitationByLink(token: string): Promise<InvitationView | null> {
    if (!token.startsWith(INVITATION_TOKEN_PREFIX)) return null;
    const row = await repo.findOpenInvitation(this.deps.db, hashSecret(token));
    return row ? { orgId: row.org_id, orgName: row.org_name, email: row.email, role: row.role, invitedBy: row.invited_by as Actor, expiresAt: row.expires_at } : null;
  }

  /**
   * Accepts an invitation from its link, for the person who proves the invited address is theirs:
   * signed in to the console as that account (`signedInToken`), or with that account's password;
   * an address without an account gets one with the password given. Whoever only holds the link
   * can neither sign in as an existing account nor set its password. Opens a console session in
   * the org (ending the one it was accepted from). Attempts are limited as sign-ins are.
   */
  async acceptInvitation(token: string, proof: { password: string } | { signedInToken: string }, address: string): Promise<NewConsoleSession> {
    await this.consume(this.perAddress, address, 'sign-in attempts from this address');
    const gone = () => unauthenticated('This invitation has been used, revoked or has expired; ask the org for a new one');
    const invitation = token.startsWith(INVITATION_TOKEN_PREFIX) ? await repo.findOpenInvitation(this.deps.db, hashSecret(token)) : undefined;
    if (!invitation) throw gone();
    const account = invitation.email.toLowerCase();

    let userId: string | null;
    let endSession: string | null = null;
    let newPasswordHash: string | null = null;
    if ('signedInToken' in proof) {
      const signedIn = await this.signedIn(proof.signedInToken);
      if (!signedIn) throw unauthenticated('Your console sign-in has ended; sign in again, then open this invitation');
      if (signedIn.email.toLowerCase() !== account) throw forbidden(`This invitation is for ${invitation.email}, and you are signed in as ${signedIn.email}`);
      userId = signedIn.auth.userId;
      endSession = hashSecret(proof.signedInToken);
    } else {
      checkNewPassword(proof.password);
      await this.refuseIfLocked(account);
      const user = await repo.findUserByEmail(this.deps.db, account);
      if (user) {
        const valid = user.password_hash ? await verifyPassword(user.password_hash, proof.password) : (await spendVerifyTime(proof.password), false);
        if (!valid) {
          await this.consume(this.perAccount, account, 'failed sign-ins for this account');
          throw unauthenticated(WRONG_INVITATION_PASSWORD);
        }
        userId = user.id;
      } else {
        userId = null;
        newPasswordHash = await hashPassword(proof.password);
      }
    }

    return this.deps.db.transaction(async (trx) => {
      const locked = await repo.findOpenInvitation(trx, hashSecret(token), { forUpdate: true });
      if (!locked) throw gone();
      if (userId === null) {
        userId = newId('usr');
        // Another acceptance may have made the account meanwhile: then this password proves nothing.
        const made = await repo.insertUserIfNew(trx, { id: userId, email: locked.email, password_hash: newPasswordHash! });
        if (!made) throw unauthenticated(WRONG_INVITATION_PASSWORD);
        await recordAudit(trx, { orgId: locked.org_id, actor: { type: 'user', email: locked.email }, action: 'user.password_set', objectType: 'user', objectId: userId });
      }
      const joined = await repo.insertMembership(trx, { org_id: locked.org_id, user_id: userId, role: locked.role });
      await repo.markInvitationAccepted(trx, locked.id, userId);
      await recordAudit(trx, {
        orgId: locked.org_id,
        actor: { type: 'user', email: locked.email },
        action: 'invitation.accepted',
        objectType: 'invitation',
        objectId: locked.id,
        data: { user_id: userId, role: locked.role, ...(joined ? {} : { already_member: true }) },
      });
      if (joined) {
        await recordAudit(trx, { orgId: locked.org_id, actor: { type: 'user', email: locked.email }, action: 'member.added', objectType: 'user', objectId: userId, data: { email: locked.email, role: locked.role, invitation_id: locked.id } });
      }
      if (endSession) await repo.signOutConsoleSession(trx, endSession);
      if (!('signedInToken' in proof)) await this.perAccount.delete(account).catch(() => undefined);
      return this.openSession(trx, userId, locked.org_id, 'invitation');
    });
  }

  /** A fresh one-time sign-in link for a member (the CLI's `users link`, a lost link). */
  async signInLink(orgId: string, userId: string): Promise<string> {
    return this.deps.db.transaction(async (trx) => {
      if (!(await repo.findMembership(trx, orgId, userId))) throw notFound(`No member ${userId} in org ${orgId}`);
      return this.newSignInLink(trx, userId, orgId);
    });
  }

  private async newSignInLink(trx: Knex.Transaction, userId: string, orgId: string): Promise<string> {
    const token = secretToken(LINK_TOKEN_PREFIX);
    await repo.insertSignInLink(trx, { token_hash: hashSecret(token), user_id: userId, org_id: orgId, expires_at: new Date(Date.now() + SIGN_IN_LINK_MS) });
    return `${this.deps.config.baseUrl}/console/sign-in/${token}`;
  }

  async members(orgId: string): Promise<MemberObject[]> {
    return (await repo.listMembers(this.deps.db, orgId)).map(toMember);
  }

  /**
   * Changes a member's role. Only an owner gives or takes the owner role; the org always keeps at
   * least one owner.
   */
  async changeRole(caller: AuthContext, userId: string, role: Role, requestId?: string): Promise<MemberObject> {
    await this.deps.db.transaction(async (trx) => {
      const owners = await repo.lockOwners(trx, caller.orgId);
      const current = await repo.findMembership(trx, caller.orgId, userId, { forUpdate: true });
      if (!current) throw notFound(`No member ${userId}`);
      if ((role === 'owner' || current.role === 'owner') && caller.role !== 'owner') throw forbidden('Only an owner can give or take the owner role');
      if (current.role === 'owner' && role !== 'owner' && owners.length === 1) throw conflict('The org must keep at least one owner: make someone else an owner first', 'last_owner');
      if (current.role === role) return;
      await repo.updateMembershipRole(trx, caller.orgId, userId, role);
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'member.role_changed', objectType: 'user', objectId: userId, data: { from: current.role, to: role }, requestId });
    });
    return toMember((await repo.findMember(this.deps.db, caller.orgId, userId))!);
  }

  /** Removes a member from the org and ends their console sessions in it. */
  async removeMember(caller: AuthContext, userId: string, requestId?: string): Promise<void> {
    await this.deps.db.transaction(async (trx) => {
      const owners = await repo.lockOwners(trx, caller.orgId);
      const current = await repo.findMembership(trx, caller.orgId, userId, { forUpdate: true });
      if (!current) throw notFound(`No member ${userId}`);
      if (current.role === 'owner' && caller.role !== 'owner') throw forbidden('Only an owner can remove an owner');
      if (current.role === 'owner' && owners.length === 1) throw conflict('The org must keep at least one owner: make someone else an owner first', 'last_owner');
      await repo.deleteMembership(trx, caller.orgId, userId);
      await repo.signOutEverywhere(trx, caller.orgId, userId);
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'member.removed', objectType: 'user', objectId: userId, data: { role: current.role }, requestId });
    });
  }

  /** Signs in with a one-time link: the first use opens a console session, any other is refused. */
  async signInWithLink(token: string, address: string): Promise<NewConsoleSession> {
    await this.consume(this.perAddress, address, 'sign-in attempts from this address');
    return this.deps.db.transaction(async (trx) => {
      const link = await repo.useSignInLink(trx, hashSecret(token));
      if (!link) throw unauthenticated('This sign-in link has been used or has expired; ask an admin of your org for a new one');
      if (!(await repo.findMembership(trx, link.org_id, link.user_id))) throw unauthenticated('You are no longer a member of this org');
      return this.openSession(trx, link.user_id, link.org_id, 'link');
    });
  }

  /**
   * Signs in with an email and password, into the org named (`orgId`, which must be one of the
   * person's) or else their first; `orgCount` tells the page whether to offer the others. Attempts
   * are limited per client address and failures per account; a wrong email and a wrong password
   * are refused alike, in about the same time.
   */
  async signInWithPassword(input: { email: string; password: string; orgId?: string }, address: string): Promise<NewConsoleSession & { orgCount: number }> {
    const account = input.email.trim().toLowerCase();
    await this.consume(this.perAddress, address, 'sign-in attempts from this address');
    await this.refuseIfLocked(account);
    const user = await repo.findUserByEmail(this.deps.db, account);
    const valid = user?.password_hash ? await verifyPassword(user.password_hash, input.password) : (await spendVerifyTime(input.password), false);
    if (!user || !valid) {
      await this.consume(this.perAccount, account, 'failed sign-ins for this account').catch((error: unknown) => {
        this.deps.logger.warn({ account_hash: hashSecret(account).slice(0, 12) }, 'sign-ins refused for an account after repeated failures');
        throw error;
      });
      throw unauthenticated('Wrong email or password');
    }
    const memberships = await repo.membershipsOf(this.deps.db, user.id);
    const membership = input.orgId ? memberships.find((m) => m.org_id === input.orgId) : memberships[0];
    if (!membership) throw unauthenticated(input.orgId ? 'This account is not a member of that org' : 'This account is not a member of any org');
    await this.perAccount.delete(account).catch(() => undefined);
    const session = await this.deps.db.transaction((trx) => this.openSession(trx, user.id, membership.org_id, 'password'));
    return { ...session, orgCount: memberships.length };
  }

  /** The orgs the signed-in person belongs to, oldest membership first, for choosing among them. */
  async orgsOf(signedIn: SignedIn): Promise<Array<{ org_id: string; name: string; role: Role; current: boolean }>> {
    const memberships = await repo.membershipsOf(this.deps.db, signedIn.auth.userId!);
    return memberships.map((m) => ({ org_id: m.org_id, name: m.org_name, role: m.role, current: m.org_id === signedIn.auth.orgId }));
  }

  /**
   * Moves a console sign-in to another of the person's own orgs: the current session ends and a
   * new one opens there. An org the person does not belong to is refused (404), as any unknown one.
   */
  async switchOrg(token: string, orgId: string): Promise<NewConsoleSession> {
    const signedIn = await this.signedIn(token);
    if (!signedIn) throw unauthenticated('Your console sign-in has ended; sign in again at /console/sign-in');
    const userId = signedIn.auth.userId!;
    return this.deps.db.transaction(async (trx) => {
      if (!(await repo.findMembership(trx, orgId, userId))) throw notFound(`You are not a member of org ${orgId}`);
      await repo.signOutConsoleSession(trx, hashSecret(token));
      return this.openSession(trx, userId, orgId, 'switch');
    });
  }

  private async openSession(trx: Knex.Transaction, userId: string, orgId: string, method: 'link' | 'password' | 'invitation' | 'switch'): Promise<NewConsoleSession> {
    const token = secretToken(CONSOLE_TOKEN_PREFIX);
    const csrfToken = randomBytes(24).toString('base64url');
    await repo.insertConsoleSession(trx, {
      token_hash: hashSecret(token),
      user_id: userId,
      org_id: orgId,
      csrf_token: csrfToken,
      expires_at: new Date(Date.now() + this.deps.config.consoleSessionMs),
    });
    const user = (await repo.findUser(trx, userId))!;
    await recordAudit(trx, { orgId, actor: { type: 'user', email: user.email }, action: 'user.signed_in', objectType: 'user', objectId: userId, data: { method } });
    return { token, csrfToken, userId, orgId };
  }

  /** Ends a console session (sign-out); a token that was not live is ignored. */
  async signOut(token: string): Promise<void> {
    const hash = hashSecret(token);
    const ended = await repo.signOutConsoleSession(this.deps.db, hash);
    this.touched.delete(hash);
    if (!ended) return;
    const user = await repo.findUser(this.deps.db, ended.user_id);
    await recordAudit(this.deps.db, { orgId: ended.org_id, actor: { type: 'user', email: user?.email ?? null }, action: 'user.signed_out', objectType: 'user', objectId: ended.user_id });
  }

  /** The live sign-in of a console session token, or null (signed out, expired, idle, removed). */
  async signedIn(token: string | undefined): Promise<SignedIn | null> {
    if (!token?.startsWith(CONSOLE_TOKEN_PREFIX)) return null;
    const hash = hashSecret(token);
    const row = await repo.findSignedIn(this.deps.db, hash, Math.floor(this.deps.config.consoleIdleMs / 1000));
    if (!row || !row.role) return null;
    const last = this.touched.get(hash) ?? row.last_seen_at.getTime();
    if (Date.now() - last > TOUCH_EVERY_MS) {
      this.touched.set(hash, Date.now());
      if (this.touched.size > 10_000) this.touched.clear();
      repo.touchConsoleSession(this.deps.db, hash).catch((error: unknown) => this.deps.logger.warn({ err: error }, 'could not touch a console session'));
    }
    return {
      auth: { orgId: row.org_id, keyId: null, userId: row.user_id, role: row.role, actor: { type: 'user', email: row.email } },
      email: row.email,
      orgName: row.org_name,
      orgCount: row.org_count,
      csrfToken: row.csrf_token,
    };
  }

  /**
   * What a `/v1` request made with a console session acts as: 401 when the session is not live;
   * a request that changes something (`unsafe`) must carry the session's CSRF token.
   */
  async authenticate(token: string, request: { unsafe: boolean; csrfToken: string | undefined }): Promise<AuthContext> {
    const signedIn = await this.signedIn(token);
    if (!signedIn) throw unauthenticated('Your console sign-in has ended; sign in again at /console/sign-in');
    if (request.unsafe && !(request.csrfToken && sameSecret(request.csrfToken, signedIn.csrfToken))) {
      throw new ApiError('permission', 'Missing or wrong CSRF token: send the X-CSRF-Token header the console page gives', { code: 'csrf' });
    }
    return signedIn.auth;
  }

  /** Sets the signed-in person's password; once one is set, the current one is needed to change it. */
  async setPassword(auth: AuthContext, input: { password: string; currentPassword?: string }): Promise<void> {
    if (!auth.userId) throw forbidden('API keys have no password; sign in to the console to set yours');
    checkNewPassword(input.password);
    const user = await repo.findUser(this.deps.db, auth.userId);
    if (!user) throw notFound('No such user');
    if (user.password_hash && !(input.currentPassword && (await verifyPassword(user.password_hash, input.currentPassword)))) {
      throw invalidRequest('current_password is wrong');
    }
    await this.deps.db.transaction(async (trx) => {
      await repo.setPasswordHash(trx, user.id, await hashPassword(input.password));
      await recordAudit(trx, { orgId: auth.orgId, actor: auth.actor, action: 'user.password_set', objectType: 'user', objectId: user.id });
    });
  }

  private async refuseIfLocked(account: string): Promise<void> {
    const state = await this.perAccount.get(account).catch(() => null);
    if (state && state.consumedPoints >= SIGN_IN_LIMITS.perAccount) throw this.tooMany('failed sign-ins for this account', state);
  }

  private async consume(limiter: RateLimiterRedis, key: string, what: string): Promise<void> {
    try {
      await limiter.consume(key);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) throw this.tooMany(what, rejection);
      throw rejection;
    }
  }

  private tooMany(what: string, state: RateLimiterRes): ApiError {
    const seconds = Math.max(1, Math.ceil(state.msBeforeNext / 1000));
    return new ApiError('rate_limit', `Too many ${what}; try again in ${Math.ceil(seconds / 60)} min`, { headers: { 'Retry-After': String(seconds) } });
  }
}
