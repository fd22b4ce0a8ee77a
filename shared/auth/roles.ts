import type { Actor } from '../audit/actor';
import { forbidden } from '../errors';

/**
 * Roles of the people of an org (docs/console.md, "Roles"). API keys act as `admin`. Which calls
 * need which role is declared on each route (`role` in api/routing.ts) and checked there, in one
 * place.
 */
export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { member: 0, admin: 1, owner: 2 };

/** Who a `/v1` request acts for: an org API key, or a person signed in to the console. */
export interface AuthContext {
  orgId: string;
  /** The API key used; null for a signed-in person. */
  keyId: string | null;
  /** The signed-in person; null for an API key. */
  userId: string | null;
  role: Role;
  actor: Exclude<Actor, null>;
}

export function hasRole(role: Role, needed: Role): boolean {
  return RANK[role] >= RANK[needed];
}

/** Throws 403 `permission` unless `auth` has at least the `needed` role. */
export function requireRole(auth: AuthContext, needed: Role): void {
  if (hasRole(auth.role, needed)) return;
  const who = auth.keyId ? 'API keys act as admin' : `your role is ${auth.role}`;
  throw forbidden(`This needs the ${needed} role (${who}); ask an ${needed === 'owner' ? 'owner' : 'admin or owner'} of the org`);
}
