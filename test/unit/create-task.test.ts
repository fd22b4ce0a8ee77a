import { expect } from 'chai';
import { defaultAgentConfig } from '../../shared/agents/agent-config';
import { ApiError } from '../../shared/errors';
import { assertSessionTakesTask, withLimits } from '../../shared/tasks/create-task';

describe('createTask: a task\'s limits and its session', () => {
  describe('withLimits', () => {
    const config = { ...defaultAgentConfig('Agent'), guardrails: { ...defaultAgentConfig('Agent').guardrails, max_steps: 150, max_minutes: null } };

    it('keeps the agent version\'s config as it is without limits', () => {
      expect(withLimits(config, undefined)).to.equal(config);
      expect(withLimits(config, {})).to.equal(config);
    });

    it('replaces only the limits given, in a copy', () => {
      const limited = withLimits(config, { steps: 5 });
      expect(limited.guardrails).to.include({ max_steps: 5, max_minutes: null });
      expect(config.guardrails.max_steps).to.equal(150);
      expect(withLimits(config, { minutes: 3 }).guardrails).to.include({ max_steps: 150, max_minutes: 3 });
      expect({ ...limited, guardrails: undefined }).to.deep.equal({ ...config, guardrails: undefined });
    });

    it('refuses a limit an agent\'s own guardrails could not have, with 400 naming it', () => {
      for (const [limits, field] of [[{ steps: 0 }, 'limits.steps'], [{ steps: 501 }, 'limits.steps'], [{ minutes: 2.5 }, 'limits.minutes'], [{ minutes: 241 }, 'limits.minutes']] as const) {
        let refused: unknown;
        try {
          withLimits(config, limits);
        } catch (error) {
          refused = error;
        }
        expect(refused).to.be.instanceOf(ApiError).and.to.include({ status: 400 });
        expect((refused as ApiError).message).to.contain(field);
      }
    });
  });

  describe('assertSessionTakesTask', () => {
    const session = (status: 'waiting' | 'connected' | 'disconnected' | 'expired', kind: 'person' | 'machine' = 'person') => ({
      code: 'K7QX-M2PD',
      org_id: 'org_1',
      status,
      kind,
      last_active_at: status === 'waiting' ? null : new Date('2026-11-20T09:30:00.000Z'),
      expires_at: status === 'expired' ? new Date('2026-11-21T10:00:00.000Z') : null,
    });
    const refusal = (of: ReturnType<typeof session>): ApiError => {
      try {
        assertSessionTakesTask(of);
      } catch (error) {
        return error as ApiError;
      }
      throw new Error('the session took the task');
    };

    it('lets a task start on a connected session of either kind', () => {
      expect(() => assertSessionTakesTask(session('connected'))).not.to.throw();
      expect(() => assertSessionTakesTask(session('connected', 'machine'))).not.to.throw();
    });

    it('answers 404 for an expired session and 409 not_connected for one without a computer', () => {
      expect(() => assertSessionTakesTask(session('expired'))).to.throw(ApiError).with.property('status', 404);
      for (const status of ['waiting', 'disconnected'] as const) {
        expect(() => assertSessionTakesTask(session(status, 'machine'))).to.throw(ApiError).with.property('code', 'not_connected');
      }
    });

    it('says a dropped session\'s computer is offline, and since when, rather than that it never paired', () => {
      expect(refusal(session('disconnected')).message).to.equal(
        'No computer is connected to session K7QX-M2PD: its computer has been offline since 2026-11-20T09:30:00.000Z; the person must open the app again to reconnect',
      );
      expect(refusal(session('disconnected', 'machine')).message).to.contain('offline since 2026-11-20T09:30:00.000Z');
      expect(refusal(session('waiting')).message).to.equal('No computer is connected to session K7QX-M2PD: none has paired yet; the person must enter the code in the app first');
    });

    it('says an expired session expired, and when, rather than that there is no such session', () => {
      const expired = refusal(session('expired'));
      expect(expired).to.include({ status: 404, type: 'not_found' });
      expect(expired.message).to.equal('Session K7QX-M2PD expired at 2026-11-21T10:00:00.000Z; its code no longer works and it takes no tasks. Create a new session for the person.');
    });
  });
});
