// Every test file is TypeScript, run through tsx. `npm test` names the folders (unit, then
// integration, then e2e); `npx mocha FILE` runs one file. Integration and e2e tests share one
// PostgreSQL and one Redis, so files run one after another.
module.exports = {
  require: ['tsx/cjs', 'test/hooks.ts'],
  extension: ['ts'],
  reporter: 'test/support/summary-reporter.js',
  timeout: 20000,
  exit: true,
};
