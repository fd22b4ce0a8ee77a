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
    const session = (status: 'waiting' | 'connected' | 'disconnected' | 'expired', kind: 'person' | 'machine' = 'person') => ({ code: 'K7QX-M2PD', org_id: 'org_1', status, kind });

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
  });
});
