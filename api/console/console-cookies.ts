import { randomBytes } from 'node:crypto';
import { sameSecret } from '../../shared/auth/same-secret';
import type { Context } from 'koa';
import { CONSOLE_COOKIE, cookieValue } from '../authenticate';

/**
 * The console's cookies, written by hand rather than through Koa's `ctx.cookies` (which refuses a
 * `Secure` cookie on a plain-HTTP request even on localhost, where browsers keep it):
 * - the session cookie: the console session's token; HttpOnly, Secure, SameSite=Lax, Path=/.
 * - the sign-in form's CSRF cookie (double submit): the form carries the same random value.
 */
const SIGN_IN_CSRF_COOKIE = 'deskhand_sign_in_csrf';

function setCookie(ctx: Context, name: string, value: string, maxAgeSeconds: number, path: string): void {
  const cookie = `${name}=${value}; Path=${path}; Max-Age=${maxAgeSeconds}; HttpOnly; Secure; SameSite=Lax`;
  ctx.append('Set-Cookie', cookie);
}

export function consoleToken(ctx: Context): string | undefined {
  return cookieValue(ctx.get('cookie'), CONSOLE_COOKIE);
}

export function setConsoleCookie(ctx: Context, token: string, maxAgeMs: number): void {
  setCookie(ctx, CONSOLE_COOKIE, token, Math.floor(maxAgeMs / 1000), '/');
}

export function clearConsoleCookie(ctx: Context): void {
  setCookie(ctx, CONSOLE_COOKIE, '', 0, '/');
}

/**
 * A fresh token for a form that signs in (the sign-in form, an invitation's), also set as its
 * cookie for the path the form posts to.
 */
export function signInFormToken(ctx: Context, path = '/console/sign-in'): string {
  const token = randomBytes(24).toString('base64url');
  setCookie(ctx, SIGN_IN_CSRF_COOKIE, token, 3600, path);
  return token;
}

/** True when the sign-in form's `_csrf` field matches its cookie. */
export function signInFormTokenMatches(ctx: Context, field: unknown): boolean {
  const cookie = cookieValue(ctx.get('cookie'), SIGN_IN_CSRF_COOKIE);
  return cookie !== undefined && typeof field === 'string' && sameSecret(field, cookie);
}

/** True when a console form's `_csrf` field is the signed-in session's CSRF token. */
export function sessionFormTokenMatches(field: unknown, signedIn: { csrfToken: string }): boolean {
  return typeof field === 'string' && sameSecret(field, signedIn.csrfToken);
}
