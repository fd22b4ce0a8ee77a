'use strict';
// Mocha's spec reporter plus, at the end, the ten slowest test files (where the suite's time
// goes) and one plain closing line, "N passed, N failed, N skipped", which CI and other tools
// read without knowing mocha.
const Mocha = require('mocha');
const path = require('node:path');

const { EVENT_RUN_END, EVENT_SUITE_BEGIN, EVENT_SUITE_END } = Mocha.Runner.constants;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const started = new Map();
    const fileMs = new Map();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent?.root) started.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const at = started.get(suite);
      if (at === undefined) return;
      const file = path.relative(process.cwd(), suite.file);
      fileMs.set(file, (fileMs.get(file) ?? 0) + Date.now() - at);
    });
    runner.once(EVENT_RUN_END, () => {
      const slowest = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, 10);
      if (slowest.length > 1) {
        process.stdout.write('\nSlowest test files:\n');
        for (const [file, ms] of slowest) process.stdout.write(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}\n`);
      }
      const { passes, failures, pending } = runner.stats;
      process.stdout.write(`\n${passes} passed, ${failures} failed, ${pending} skipped\n`);
    });
  }
}

module.exports = SummaryReporter;
