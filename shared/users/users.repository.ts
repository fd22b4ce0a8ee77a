import type { Knex } from '../db/knex';
import type { Role } from '../auth/roles';

/** Rows and SQL of the console's people: users, memberships, console sessions, sign-in links. */

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

export async function setPasswordHash(db: Knex | Knex.Transaction, userId: string, hash: string): Promise<void> {
  await db('users').where({ id: userId }).update({ password_hash: hash, updated_at: db.fn.now() });
}

export function findMembership(db: Knex | Knex.Transaction, orgId: string, userId: string, options: { forUpdate?: boolean } = {}): Promise<{ role: Role } | undefined> {
  const query = db('memberships').select('role').where({ org_id: orgId, user_id: userId }).first();
  return (options.forUpdate ? query.forUpdate() : query) as Promise<{ role: Role } | undefined>;
}

/** The orgs a person belongs to, oldest membership first (the one a password sign-in opens). */
export function membershipsOf(db: Knex | Knex.Transaction, userId: string): Promise<Array<{ org_id: string; role: Role }>> {
  return db('memberships').select('org_id', 'role').where({ user_id: userId }).orderBy('created_at', 'asc');
}

export async function insertMembership(trx: Knex.Transaction, row: { org_id: string; user_id: string; role: Role }): Promise<void> {
  await trx('memberships').insert(row);
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
    `select s.token_hash, s.user_id, u.email, s.org_id, m.role, s.csrf_token, s.last_seen_at
       from console_sessions s
       join users u on u.id = s.user_id
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
