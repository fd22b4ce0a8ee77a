import type { SessionsService } from '../../shared/sessions/sessions.service';
import type { Processor } from '../runtime';

/** Runs at a session's expiry time: expires every session then due (the sweep does the same). */
export function createExpireSessionProcessor(sessions: Pick<SessionsService, 'expireDue'>): Processor {
  return async () => sessions.expireDue();
}
