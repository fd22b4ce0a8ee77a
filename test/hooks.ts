import { setUpTestWorld, tearDownTestWorld } from './support/environment';
import { installPoolGuard, poolInTransaction } from './support/pool-guard';

installPoolGuard();

/**
 * Global hooks: every run gets its own database and Redis prefix, removed at the end; and a run
 * in which code inside a transaction ran a query on the transaction's pool fails at the end,
 * naming where (test/support/pool-guard.ts).
 */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(60_000);
    await setUpTestWorld();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(30_000);
    await tearDownTestWorld();
    if (poolInTransaction.length) {
      const counts = new Map<string, number>();
      for (const stack of poolInTransaction) {
        counts.set(stack, (counts.get(stack) ?? 0) + 1);
      }
      const places = [...counts].map(([where, count]) => `  ${count}x\n${where}`).join('\n\n');
      throw new Error(`${poolInTransaction.length} queries ran on a pool inside one of its transactions (use the transaction; test/support/pool-guard.ts):\n${places}`);
    }
  },
};
