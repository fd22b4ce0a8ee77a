import type { JobHelpers } from '../runtime';

/** Runs at a session's expiry time: expires every session then due (the sweep does the same). */
export async function expireSessionProcessor(_payload: unknown, { container }: JobHelpers): Promise<number> {
  return container.sessions.expireDue();
}
