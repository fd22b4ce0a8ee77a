import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { DeskhandEnv } from '../config';

/**
 * API key format: `dh_live_` (production) or `dh_test_` (development), 32 random base62
 * characters (≈190 bits), then 6 base62 characters of CRC-32 over everything before them. The
 * checksum lets a malformed or mistyped key be refused before any database query.
 */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
export const KEY_PREFIXES = { production: 'dh_live_', development: 'dh_test_' } as const;
/** Session tokens belong to the older session-token API; `/v1` refuses them by this prefix. */
export const SESSION_TOKEN_PREFIX = 'dh_sess_';
/**
 * Runner tokens (docs/runners.md): the same scheme with a prefix of their own, so that neither
 * `/v1` nor the `/runners` namespace mistakes one credential for another. The same in every
 * environment: a runner token works only on the service that made it (its hash is looked up).
 */
export const RUNNER_TOKEN_PREFIX = 'dhr_';
const KEY_PATTERN = /^(dh_live_|dh_test_)([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;
const RUNNER_TOKEN_PATTERN = /^(dhr_)([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;

function base62(bytes: Buffer, length: number): string {
  let out = '';
  for (const byte of bytes) {
    if (byte < 248) out += BASE62[byte % 62]; // 248 = 4 × 62: no bias
    if (out.length === length) return out;
  }
  return out + base62(randomBytes(length), length - out.length);
}

function checksum(text: string): string {
  let value = crc32(text);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

function withChecksum(prefix: string): string {
  const head = prefix + base62(randomBytes(BODY_LENGTH * 2), BODY_LENGTH);
  return head + checksum(head);
}

/** A new API key for `env`. */
export function generateApiKey(env: DeskhandEnv): string {
  return withChecksum(KEY_PREFIXES[env]);
}

/** A new session token (older session-token API), same scheme with its own prefix. */
export function generateSessionToken(): string {
  return withChecksum(SESSION_TOKEN_PREFIX);
}

/** A new runner token, same scheme with its own prefix. */
export function generateRunnerToken(): string {
  return withChecksum(RUNNER_TOKEN_PREFIX);
}

/** True when `token` has the shape and a matching checksum of a runner token. */
export function isWellFormedRunnerToken(token: string): boolean {
  const match = RUNNER_TOKEN_PATTERN.exec(token);
  return match !== null && checksum(match[1]! + match[2]) === match[3];
}

/** True when `key` has the shape and a matching checksum of a key of `env`. */
export function isWellFormedApiKey(key: string, env: DeskhandEnv): boolean {
  const match = KEY_PATTERN.exec(key);
  if (!match || match[1] !== KEY_PREFIXES[env]) return false;
  return checksum(match[1] + match[2]) === match[3];
}

/** The part of a key shown to people (`dh_test_AbC1`). */
export function displayPrefix(key: string): string {
  return key.slice(0, 12);
}

/** SHA-256 of the whole key: keys carry 190 random bits, so a fast hash is enough. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}
