import type { Knex } from '../db/knex';
import type { Role } from '../auth/roles';

/** Rows and SQL of the console's people: users, memberships, invitations, console sessions, sign-in links. */

export interface UserRow {
  id: string;
  email: string;
  password_hash: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface MemberRow {
  user_id: string;
  email: string;
  role: Role;
  has_password: boolean;
  created_at: Date;
}

/** A live console session joined with its person and their role in the session's org now. */
export interface SignedInRow {
  token_hash: string;
  user_id: string;
  email: string;
  org_id: string;
  org_name: string;
  /** How many orgs the person belongs to (more than one: the console offers to switch). */
  org_count: number;
  role: Role | null;
  csrf_token: string;
  last_seen_at: Date;
}

export function findUserByEmail(db: Knex | Knex.Transaction, email: string): Promise<UserRow | undefined> {
  return db<UserRow>('users').whereRaw('lower(email) = lower(?)', [email]).first();
}

export function findUser(db: Knex | Knex.Transaction, userId: string): Promise<UserRow | undefined> {
  return db<UserRow>('users').where({ id: userId }).first();
}

export async function insertUser(trx: Knex.Transaction, row: { id: string; email: string }): Promise<void> {
  await trx('users').insert(row);
}

/** Makes an account with its password unless the address has one already (any case); returns whether it did. */
export async function insertUserIfNew(trx: Knex.Transaction, row: { id: string; email: string; password_hash: string }): Promise<boolean> {
  const rows = await trx.raw<{ rows: unknown[] }>('insert into users (id, email, password_hash) values (?, ?, ?) on conflict ((lower(email))) do nothing returning id', [row.id, row.email, row.password_hash]);
  return rows.rows.length > 0;
}

export async function setPasswordHash(db: Knex | Knex.Transaction, userId: string, hash: string): Promise<void> {
  await db('users').where({ id: userId }).update({ password_hash: hash, updated_at: db.fn.now() });
}

export function findMembership(db: Knex | Knex.Transaction, orgId: string, userId: string, options: { forUpdate?: boolean } = {}): Promise<{ role: Role } | undefined> {
  const query = db('memberships').select('role').where({ org_id: orgId, user_id: userId }).first();
  return (options.forUpdate ? query.forUpdate() : query) as Promise<{ role: Role } | undefined>;
}

/** The orgs a person belongs to, with their names, oldest membership first (the one a password sign-in opens). */
export function membershipsOf(db: Knex | Knex.Transaction, userId: string): Promise<Array<{ org_id: string; org_name: string; role: Role }>> {
  return db('memberships as m')
    .join('orgs as o', 'o.id', 'm.org_id')
    .select('m.org_id', 'o.name as org_name', 'm.role')
    .where('m.user_id', userId)
    .orderBy('m.created_at', 'asc');
}

/** Adds a membership; returns false when the person already belonged to the org. */
export async function insertMembership(trx: Knex.Transaction, row: { org_id: string; user_id: string; role: Role }): Promise<boolean> {
  const rows = await trx('memberships').insert(row).onConflict(['org_id', 'user_id']).ignore().returning('user_id');
  return rows.length > 0;
}

/** Whether an account with this address (any case) belongs to the org. */
export async function isMemberByEmail(db: Knex | Knex.Transaction, orgId: string, email: string): Promise<boolean> {
  const row = await db('memberships as m').join('users as u', 'u.id', 'm.user_id').where('m.org_id', orgId).whereRaw('lower(u.email) = lower(?)', [email]).first('m.user_id');
  return row !== undefined;
}

export async function updateMembershipRole(trx: Knex.Transaction, orgId: string, userId: string, role: Role): Promise<void> {
  await trx('memberships').where({ org_id: orgId, user_id: userId }).update({ role });
}

export async function deleteMembership(trx: Knex.Transaction, orgId: string, userId: string): Promise<void> {
  await trx('memberships').where({ org_id: orgId, user_id: userId }).delete();
}

/** The org's owners, locked: the last owner cannot be demoted or removed. */
export async function lockOwners(trx: Knex.Transaction, orgId: string): Promise<string[]> {
  const rows: Array<{ user_id: string }> = await trx('memberships').select('user_id').where({ org_id: orgId, role: 'owner' }).forUpdate();
  return rows.map((row) => row.user_id);
}

const memberRows = (db: Knex, orgId: string) =>
  db('memberships as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where('m.org_id', orgId)
    .select('u.id as user_id', 'u.email', 'm.role', db.raw('u.password_hash is not null as has_password'), 'm.created_at');

export function listMembers(db: Knex, orgId: string): Promise<MemberRow[]> {
  return memberRows(db, orgId).orderBy('m.created_at', 'asc');
}

export function findMember(db: Knex, orgId: string, userId: string): Promise<MemberRow | undefined> {
  return memberRows(db, orgId).andWhere('m.user_id', userId).first();
}

export async function insertConsoleSession(
  db: Knex | Knex.Transaction,
  row: { token_hash: string; user_id: string; org_id: string; csrf_token: string; expires_at: Date },
): Promise<void> {
  await db('console_sessions').insert(row);
}

/**
 * The live session of `tokenHash` (not signed out, not past its absolute expiry, seen within
 * `idleSeconds`), with the person's role in its org now: null role when they left the org.
 */
export async function findSignedIn(db: Knex, tokenHash: string, idleSeconds: number): Promise<SignedInRow | undefined> {
  const result = await db.raw<{ rows: SignedInRow[] }>(
    `select s.token_hash, s.user_id, u.email, s.org_id, o.name as org_name, m.role, s.csrf_token, s.last_seen_at,
            (select count(*)::int from memberships mm where mm.user_id = s.user_id) as org_count
       from console_sessions s
       join users u on u.id = s.user_id
       join orgs o on o.id = s.org_id
       left join memberships m on m.org_id = s.org_id and m.user_id = s.user_id
      where s.token_hash = ? and s.signed_out_at is null and s.expires_at > now()
        and s.last_seen_at > now() - make_interval(secs => ?)`,
    [tokenHash, idleSeconds],
  );
  return result.rows[0];
}

export async function touchConsoleSession(db: Knex, tokenHash: string): Promise<void> {
  await db('console_sessions').where({ token_hash: tokenHash }).update({ last_seen_at: db.fn.now() });
}

/** Signs a session out; returns its person and org, or undefined when it was not live. */
export async function signOutConsoleSession(db: Knex, tokenHash: string): Promise<{ user_id: string; org_id: string } | undefined> {
  const rows: Array<{ user_id: string; org_id: string }> = await db('console_sessions')
    .where({ token_hash: tokenHash })
    .whereNull('signed_out_at')
    .update({ signed_out_at: db.fn.now() })
    .returning(['user_id', 'org_id']);
  return rows[0];
}

/** Ends every session of a person in an org (removed from it). */
export async function signOutEverywhere(trx: Knex.Transaction, orgId: string, userId: string): Promise<void> {
  await trx('console_sessions').where({ org_id: orgId, user_id: userId }).whereNull('signed_out_at').update({ signed_out_at: trx.fn.now() });
}

export async function insertSignInLink(trx: Knex.Transaction, row: { token_hash: string; user_id: string; org_id: string; expires_at: Date }): Promise<void> {
  await trx('sign_in_links').insert(row);
}

/** Uses a sign-in link once: the first caller gets its person and org, every later one nothing. */
export async function useSignInLink(trx: Knex.Transaction, tokenHash: string): Promise<{ user_id: string; org_id: string } | undefined> {
  const rows: Array<{ user_id: string; org_id: string }> = await trx('sign_in_links')
    .where({ token_hash: tokenHash })
    .whereNull('used_at')
    .where('expires_at', '>', trx.fn.now())
    .update({ used_at: trx.fn.now() })
    .returning(['user_id', 'org_id']);
  return rows[0];
}

/** An invitation as its link's page and its acceptance read it: open (neither accepted nor revoked) and unexpired. */
export interface OpenInvitationRow {
  id: string;
  org_id: string;
  org_name: string;
  email: string;
  role: Role;
  invited_by: unknown;
  created_at: Date;
  expires_at: Date;
}

/** An open invitation as the org's list shows it. */
export interface InvitationRow {
  id: string;
  email: string;
  role: Role;
  invited_by: unknown;
  created_at: Date;
  expires_at: Date;
}

/**
 * Records an invitation, revoking the org's open one for the same address (inviting again makes
 * a new link and spends the old). Returns the id of the invitation it replaced, if any.
 */
export async function replaceInvitation(
  trx: Knex.Transaction,
  row: { id: string; org_id: string; email: string; role: Role; token_hash: string; invited_by: string | null; expires_at: Date },
): Promise<string | null> {
  const replaced: Array<{ id: string }> = await trx('invitations')
    .where({ org_id: row.org_id })
    .whereRaw('lower(email) = lower(?)', [row.email])
    .whereNull('accepted_at')
    .whereNull('revoked_at')
    .update({ revoked_at: trx.fn.now() })
    .returning('id');
  await trx('invitations').insert(row);
  return replaced[0]?.id ?? null;
}

/** The open, unexpired invitation of a link's token, with its org's name; locked when asked. */
export function findOpenInvitation(db: Knex | Knex.Transaction, tokenHash: string, options: { forUpdate?: boolean } = {}): Promise<OpenInvitationRow | undefined> {
  const query = db('invitations as i')
    .join('orgs as o', 'o.id', 'i.org_id')
    .select('i.id', 'i.org_id', 'o.name as org_name', 'i.email', 'i.role', 'i.invited_by', 'i.created_at', 'i.expires_at')
    .where('i.token_hash', tokenHash)
    .whereNull('i.accepted_at')
    .whereNull('i.revoked_at')
    .where('i.expires_at', '>', db.fn.now())
    .first();
  return (options.forUpdate ? query.forUpdate('i') : query) as Promise<OpenInvitationRow | undefined>;
}

/** The org's open, unexpired invitations, newest first. */
export function listOpenInvitations(db: Knex, orgId: string): Promise<InvitationRow[]> {
  return db('invitations')
    .select('id', 'email', 'role', 'invited_by', 'created_at', 'expires_at')
    .where({ org_id: orgId })
    .whereNull('accepted_at')
    .whereNull('revoked_at')
    .where('expires_at', '>', db.fn.now())
    .orderBy('created_at', 'desc');
}

/** Revokes an open invitation of the org; returns its address, or undefined when there was none open. */
export async function revokeInvitation(trx: Knex.Transaction, orgId: string, invitationId: string): Promise<{ email: string; role: Role } | undefined> {
  const rows: Array<{ email: string; role: Role }> = await trx('invitations')
    .where({ org_id: orgId, id: invitationId })
    .whereNull('accepted_at')
    .whereNull('revoked_at')
    .update({ revoked_at: trx.fn.now() })
    .returning(['email', 'role']);
  return rows[0];
}

export async function markInvitationAccepted(trx: Knex.Transaction, invitationId: string, userId: string): Promise<void> {
  await trx('invitations').where({ id: invitationId }).update({ accepted_at: trx.fn.now(), accepted_by: userId });
}
