/**
 * The runner protocol's events (docs/runners.md), one list for the service's gateway and the
 * reference runner alike.
 */
export const RunnerEvents = {
  hello: 'runner:hello',
  heartbeat: 'runner:heartbeat',
  command: 'runner:command',
  done: 'runner:done',
  screen: 'runner:screen',
  input: 'runner:input',
} as const;
