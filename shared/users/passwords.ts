import argon2 from 'argon2';
import { invalidRequest } from '../errors';

/**
 * Passwords are hashed with argon2id (the `argon2` library's defaults: 64 MiB, 3 passes), the
 * salt and parameters kept in the encoded hash itself.
 */
export const PASSWORD_MIN_LENGTH = 10;
const PASSWORD_MAX_LENGTH = 200;

/** Throws the 400 a person reads on the page when a new password is too weak to keep. */
export function checkNewPassword(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH) throw invalidRequest(`password must be at least ${PASSWORD_MIN_LENGTH} characters`);
  if (password.length > PASSWORD_MAX_LENGTH) throw invalidRequest(`password must be at most ${PASSWORD_MAX_LENGTH} characters`);
}

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, { type: argon2.argon2id });
}

export function verifyPassword(hash: string, password: string): Promise<boolean> {
  return argon2.verify(hash, password);
}

/**
 * A hash verified when the account does not exist or has no password, so that a wrong email
 * takes as long to refuse as a wrong password (no account discovery by timing).
 */
let decoy: Promise<string> | null = null;
export async function spendVerifyTime(password: string): Promise<void> {
  decoy ??= hashPassword('decoy password that matches nothing');
  await argon2.verify(await decoy, password).catch(() => false);
}
