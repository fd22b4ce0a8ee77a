import { componentOf, type JsonSchema } from './openapi-components';

/**
 * The `example` of a request or response body, composed from the examples written beside the
 * schemas (api/schemas/*: each resource carries `examples`): a route's body is mostly a resource,
 * a list of one, or a resource with a field or two more, so writing each resource's example once
 * gives every operation a realistic one. test/integration/openapi-examples.test.ts checks every
 * example against its schema, so they cannot drift.
 */

const EXAMPLE_TIME = '2026-03-02T09:14:05.000Z';

/**
 * Values of Deskhand's own fields, by name, for strings that no schema gives an example of: ids
 * with the prefixes of shared/ids.ts, rather than a meaningless word. Used only where the field
 * is a plain string (the test checks each example against its schema all the same).
 */
const STRING_BY_FIELD: Record<string, string> = {
  agent_id: 'support',
  session_id: 'K7QX-M2PD',
  code: 'K7QX-M2PD',
  task_id: 'task_3k9xq7m2pd8w4tz1vn5c',
  latest_task_id: 'task_3k9xq7m2pd8w4tz1vn5c',
  org_id: 'org_5tq2w8e1rzk3m7n9p4vb',
  key_id: 'key_9m3c2x7a4w8e1q5r6t0y',
  runner_id: 'rn_4hd8s2kq9w3m7x1c5v2b',
  start_state_id: 'ss_7pw2m9xd3k8q1n5c4v6b',
  test_case_id: 'tc_2j8f5n1q7w3k9m4x6c8v',
  test_set_id: 'ts_6v3k9w2r8m1x5q7c4n2b',
  test_run_id: 'tr_8x1m4c7e2k9w5q3n6v1b',
  with: 'tr_2w7k4m9x1c8q5n3v6b0e',
  try_id: 'try_3n7b2k5p9w1m4x8c6q2v',
  delivery_id: 'dlv_5c2n8q1w7k3m9x4v6b2e',
  event_id: 'evt_7m2x9k4d1w8q3n5c6v0b',
  id: 'aud_1q8w3k7m2x9c4n5v6b0e',
  name: 'Office printer setup',
  display_name: 'Acme Helper',
  email: 'ada@example.com',
  prefix: 'dh_live_4f9a',
  url: 'https://hooks.example.com/deskhand',
  invite_url: 'https://deskhand.example.com/invite/K7QX-M2PD',
  invite_url_template: 'https://example.com/join?code={code}',
  instructions: 'Help people set up their office devices. Ask before changing system settings.',
  greeting: 'Hi! I will set up your printer; it takes a few minutes.',
  prompt: 'Set up the office printer (HP LaserJet, 10.0.4.21) and print a test page.',
  description: 'Sets up the office printer and prints a test page.',
  message: 'Printed a test page on the HP LaserJet.',
  secret: 'whsec_MfKQ9r8GKYqrTZnSvCzk0V1a',
  token: 'dh_sess_8Kq2mX7wP4nC9vB1zR5t',
  scope: 'Office devices: printers, scanners and their drivers.',
  path: 'notes/printers.md',
  content: 'The office printer is an HP LaserJet at 10.0.4.21.',
  provider: 'simulated',
  version: '1.4.0',
  os: 'mac',
  key: 'printer-setup',
  category: 'devices',
  action: 'agent.created',
  object_type: 'agent',
  object_id: 'support',
  request_id: 'ticket-1042-printer',
  question_id: 'q_8d2kf0s7w3k9m4x6c8vb',
  approval_id: 'appr_4n8c2w7k1m9x3q5v6b0e',
  answer: 'HP LaserJet (office)',
  note: 'Fine, the driver is from HP.',
  question: 'Which printer should be the default?',
  what: 'Install the HP LaserJet driver (needs an administrator password).',
  start_state: 'macos-15',
  from: 'macos-15',
  persona: 'An office manager in a hurry.',
  rubric: 'The LaserJet is the default printer and a test page was printed.',
  check_script: 'lpstat -d | grep -q LaserJet',
  setup_script: 'reset-printers',
  script: 'install-driver hp-laserjet',
  instruction: 'Install the HP LaserJet driver from support.hp.com.',
  result: 'Printed a test page on the HP LaserJet.',
};

/** An example value of `schema` (refs resolved through `components`), or undefined when none can be said. */
export function exampleOf(schema: unknown, components: Record<string, JsonSchema>, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 12) return undefined;
  const s = schema as JsonSchema;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if ('const' in s) return s.const;
  if (s.default !== undefined) return s.default;
  if (typeof s.$ref === 'string') return exampleOf(componentOf(components, s.$ref), components, depth + 1);
  if (Array.isArray(s.enum)) return s.enum[0];
  if (Array.isArray(s.allOf)) {
    const parts = s.allOf.map((part) => exampleOf(part, components, depth + 1));
    return Object.assign({}, ...parts.filter((part) => typeof part === 'object' && part !== null));
  }
  const choices = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(choices)) {
    // The first variant that is not null: an example shows the field filled in.
    const filled = choices.find((choice) => (choice as JsonSchema).type !== 'null') ?? choices[0];
    return exampleOf(filled, components, depth + 1);
  }
  switch (s.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) {
        const value = fieldValue(name, property) ?? exampleOf(property, components, depth + 1);
        if (value !== undefined) out[name] = value;
      }
      return out;
    }
    case 'array': {
      const item = exampleOf(s.items, components, depth + 1);
      return item === undefined ? [] : [item];
    }
    case 'string':
      return s.format === 'date-time' ? EXAMPLE_TIME : s.format === 'uri' ? 'https://example.com/' : 'text';
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' && s.minimum > 1 ? s.minimum : 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return undefined;
  }
}

/**
 * The value STRING_BY_FIELD gives `name`, when its schema is a string (or a nullable one) with no
 * example, enum or format of its own, and the value fits its pattern and length.
 */
function fieldValue(name: string, schema: unknown): string | undefined {
  const value = STRING_BY_FIELD[name];
  if (value === undefined) return undefined;
  let s = schema as JsonSchema;
  if (Array.isArray(s.anyOf)) {
    const filled = (s.anyOf as JsonSchema[]).filter((choice) => choice.type !== 'null');
    if (filled.length !== 1 || s.examples) return undefined;
    s = filled[0]!;
  }
  if (s.type !== 'string' || s.examples || s.enum || 'const' in s || s.format) return undefined;
  if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value)) return undefined;
  if (typeof s.maxLength === 'number' && value.length > s.maxLength) return undefined;
  return value;
}
