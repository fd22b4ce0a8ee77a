/**
 * The older session-token API lives at six root paths. The error middleware, the rate limiter
 * and the OpenAPI document all tell its requests apart by path, with this one rule.
 */
export const LEGACY_PATHS = ['/start', '/wait', '/stop', '/tasks', '/trace', '/health'] as const;

const legacyPaths = new Set<string>(LEGACY_PATHS);

/** True for a request to the older session-token API (its errors are `{ error: "<message>" }`). */
export function isLegacyPath(path: string): boolean {
  return legacyPaths.has(path);
}

/**
 * OpenAPI `security` of a legacy route: a session token, or an org API key with `code`. `GET
 * /health` also answers without any (the empty requirement).
 */
export function legacySecurity(path: string): Array<Record<string, string[]>> {
  const schemes: Array<Record<string, string[]>> = [{ sessionToken: [] }, { apiKey: [] }];
  return path === '/health' ? [{}, ...schemes] : schemes;
}
