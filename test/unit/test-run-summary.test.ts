import { expect } from 'chai';
import { compareCase, passAtK, passHatK, summarise } from '../../shared/test-runs/summary';

describe('test run figures (pass rate, pass@k, pass^k, flaky, compare)', () => {
  it('pass@k and pass^k as worked out by hand', () => {
    // 5 scored, 2 passed, k = 3: pass@3 = 1 − C(3,3)/C(5,3) = 1 − 1/10; pass^3 = C(2,3)/C(5,3) = 0.
    expect(passAtK(5, 2, 3)).to.equal(0.9);
    expect(passHatK(5, 2, 3)).to.equal(0);
    // 4 scored, 3 passed, k = 2: pass@2 = 1 − C(1,2)/C(4,2) = 1; pass^2 = C(3,2)/C(4,2) = 3/6.
    expect(passAtK(4, 3, 2)).to.equal(1);
    expect(passHatK(4, 3, 2)).to.equal(0.5);
    // k tries exactly: pass@k is "any passed", pass^k "all passed".
    expect(passAtK(3, 1, 3)).to.equal(1);
    expect(passHatK(3, 1, 3)).to.equal(0);
    expect(passHatK(3, 3, 3)).to.equal(1);
    expect(passAtK(3, 0, 3)).to.equal(0);
    // Fewer than k scored: not known yet.
    expect(passAtK(2, 2, 3)).to.equal(null);
    expect(passHatK(2, 2, 3)).to.equal(null);
  });

  it('counts tries by status, scores only passed and failed ones, and calls a case with both flaky', () => {
    const summary = summarise([
      { test_case_id: 'tc_a', key: 'a', repeat: 3, statuses: ['passed', 'failed', 'passed'] },
      { test_case_id: 'tc_b', key: null, repeat: 2, statuses: ['error', 'passed'] },
      { test_case_id: 'tc_c', key: 'c', repeat: 1, statuses: ['queued'] },
    ]);
    expect(summary.tries).to.deep.equal({ queued: 1, running: 0, passed: 3, failed: 1, error: 1, cancelled: 0, total: 6 });
    expect(summary.pass_rate).to.equal(0.75);
    expect(summary.cases[0]).to.deep.include({ scored: 3, passed: 2, pass_rate: 0.6667, pass_at_k: 1, pass_hat_k: 0, flaky: true });
    expect(summary.cases[1]).to.deep.include({ scored: 1, passed: 1, pass_rate: 1, pass_at_k: null, pass_hat_k: null, flaky: false });
    expect(summary.cases[2]).to.deep.include({ scored: 0, pass_rate: null, flaky: false });
  });

  it('labels a case against its baseline: regressed, improved, flaky, unchanged; none when either side is unscored', () => {
    const at = (rate: number | null, flaky = false) => ({ test_case_id: 'x', key: null, tries: 2, scored: 2, passed: 1, pass_rate: rate, pass_at_k: null, pass_hat_k: null, flaky });
    expect(compareCase(at(0.5), at(1))).to.equal('regressed');
    expect(compareCase(at(1), at(0.5))).to.equal('improved');
    expect(compareCase(at(0.5, true), at(0.5))).to.equal('flaky');
    expect(compareCase(at(1), at(1))).to.equal('unchanged');
    expect(compareCase(at(null), at(1))).to.equal(null);
    expect(compareCase(undefined, at(1))).to.equal(null);
  });
});
