// Every test file is TypeScript, run through tsx. Integration and e2e tests share one
// PostgreSQL and one Redis, so files run one after another.
module.exports = {
  require: ['tsx/cjs', 'test/hooks.ts'],
  extension: ['ts'],
  spec: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
  timeout: 20000,
  exit: true,
};
