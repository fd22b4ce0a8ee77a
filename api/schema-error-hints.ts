import { AGENT_ID_PATTERN, HTTP_TOOL_NAME_PATTERN } from '../shared/agents/agent-config';

/**
 * Words for the formats a request's strings must have, so that a 400 says what is expected
 * ("agent_id must be 2 to 40 lowercase letters, digits and dashes") instead of "is malformed".
 * A schema's `description` is written for the reference, not for an error, so it is never used:
 * a schema may carry its own `x-format-hint`, otherwise the hint is looked up here by pattern
 * (the schemas share a handful of patterns), then by `format`.
 */

/** The schema keyword a string schema may carry to word its own pattern or format. */
export const FORMAT_HINT_KEYWORD = 'x-format-hint';

const PATTERN_HINTS: Readonly<Record<string, string>> = Object.freeze({
  [AGENT_ID_PATTERN]: '2 to 40 lowercase letters, digits and dashes',
  [HTTP_TOOL_NAME_PATTERN]: 'a letter followed by up to 63 letters, digits, dashes and underscores',
  '\\S': 'text, not only spaces',
  '^task_[a-z0-9]{1,40}$': 'a task id: task_ followed by 1 to 40 lowercase letters and digits (task_…)',
  '^[A-Za-z0-9]{4}-[A-Za-z0-9]{4}$': 'a pairing code: 4 letters or digits, a dash, 4 more (e.g. K7QX-M2PD)',
  '^[A-Z0-9]{4}-[A-Z0-9]{4}$': 'a pairing code: 4 capital letters or digits, a dash, 4 more (e.g. K7QX-M2PD)',
});

const FORMAT_HINTS: Readonly<Record<string, string>> = Object.freeze({
  uri: 'an absolute URL (https://…)',
  email: 'an email address',
  'date-time': 'a date and time in RFC 3339 (2026-01-31T12:00:00Z)',
  date: 'a date (2026-01-31)',
  uuid: 'a UUID',
});

/** What a string failing `pattern` or `format` should have been, in words; null when nobody wrote them down. */
export function formatHint(schema: unknown): string | null {
  if (typeof schema !== 'object' || schema === null) return null;
  const record = schema as Record<string, unknown>;
  const own = record[FORMAT_HINT_KEYWORD];
  if (typeof own === 'string') return own;
  if (typeof record.pattern === 'string' && PATTERN_HINTS[record.pattern]) return PATTERN_HINTS[record.pattern]!;
  if (typeof record.format === 'string' && FORMAT_HINTS[record.format]) return FORMAT_HINTS[record.format]!;
  return null;
}

/** The known name closest to a misspelt one (at most a third of its letters off), or null. */
export function closestName(given: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(1, Math.floor(given.length / 3)) + 1;
  for (const name of known) {
    const distance = editDistance(given.toLowerCase(), name.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return best;
}

/** Levenshtein distance (field names are short; no dependency carries its weight for this). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
