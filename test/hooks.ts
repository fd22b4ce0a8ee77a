import { setUpTestWorld, tearDownTestWorld } from './support/environment';

/** Global hooks: every run gets its own database and Redis prefix, removed at the end. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(60_000);
    await setUpTestWorld();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(30_000);
    await tearDownTestWorld();
  },
};
