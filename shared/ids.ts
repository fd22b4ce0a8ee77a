import { randomBytes } from 'node:crypto';

/** Id prefixes of the spec; one place so that every id is recognisable by its shape. */
export const ID_PREFIX = {
  org: 'org',
  apiKey: 'key',
  task: 'task',
  runner: 'rn',
  testSet: 'ts',
  testCase: 'tc',
  startState: 'ss',
  event: 'evt',
  question: 'q',
  approval: 'appr',
  audit: 'aud',
  delivery: 'dlv',
  toolCall: 'call',
  machine: 'mc',
  testRun: 'tr',
  try: 'try',
  runnerCommand: 'cmd',
  user: 'usr',
  ledgerEntry: 'led',
  invitation: 'inv',
} as const;

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Random lowercase alphanumeric string of `length` characters (≈5.17 bits each). */
export function randomString(length: number, alphabet = ALPHABET): string {
  // Rejection sampling keeps every character equally likely.
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

/** A new id such as `task_3k9x…` (20 random characters, ≈103 bits). */
export function newId(prefix: (typeof ID_PREFIX)[keyof typeof ID_PREFIX]): string {
  return `${prefix}_${randomString(20)}`;
}
