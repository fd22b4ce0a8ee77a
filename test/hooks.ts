// Global mocha hooks; filled in as shared fixtures appear.
export const mochaHooks = {};
