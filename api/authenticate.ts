import type { ApiKeyService } from '../shared/api-keys/api-keys.service';
import type { AuthContext } from '../shared/auth/roles';
import type { UsersService } from '../shared/users/users.service';

/** The cookie that carries a console session's token (HTTP-only; see api/console/console-cookies.ts). */
export const CONSOLE_COOKIE = 'deskhand_console';

/** What a request offers to prove who it is, read the same way by Koa and by the long polls. */
export interface Credentials {
  authorization: string | undefined;
  /** The whole `Cookie` header. */
  cookie: string | undefined;
  /** The `X-CSRF-Token` header: needed with a console cookie on anything but GET and HEAD. */
  csrfToken: string | undefined;
  method: string;
}

/** One cookie's value from a `Cookie` header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * Who a `/v1` request acts as: the API key of its `Authorization` header, else the console session
 * of its cookie (a person signed in to the console, with their role), else a 401 asking for a key.
 * A key verified recently is known at once, without waiting for a promise.
 */
export function requestAuthenticator(apiKeys: ApiKeyService, users: UsersService) {
  return (credentials: Credentials): AuthContext | Promise<AuthContext> => {
    if (!credentials.authorization) {
      const token = cookieValue(credentials.cookie, CONSOLE_COOKIE);
      if (token) {
        const unsafe = credentials.method !== 'GET' && credentials.method !== 'HEAD';
        return users.authenticate(token, { unsafe, csrfToken: credentials.csrfToken });
      }
    }
    return apiKeys.known(credentials.authorization) ?? apiKeys.authenticate(credentials.authorization);
  };
}
