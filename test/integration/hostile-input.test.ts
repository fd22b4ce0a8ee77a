import { expect } from 'chai';
import fc from 'fast-check';
import { startTestService, type ApiResponse, type TestService } from '../support/service';
import { startSleepingTask } from '../support/tasks';

/**
 * Every route of /openapi.json, fed values built from its own schemas with hostile ones mixed
 * in (NUL, unpaired surrogates, integers past PostgreSQL's, deep nesting, long strings, forged
 * cursors), against the real running service: whatever comes in, the answer is never a 5xx.
 * The document is the walk's source, so a route added tomorrow is fuzzed without a change here.
 */

type Schema = Record<string, any>;

const HOSTILE_STRINGS = [
  '\u0000',
  'a\u0000b',
  'task_abc\u0000',
  '\uD800',
  'x\uDC00y',
  '\uDBFF\uDBFF',
  '\uD83D\uDE00', // a well-formed pair: must be fine
  '',
  ' ',
  '%00',
  '../../etc/passwd',
  "'; drop table tasks; --",
  '\u202E\uFEFF',
  'x'.repeat(5000),
  '9'.repeat(40),
];

const HOSTILE_NUMBERS = [0, -1, 1.5, 2147483647, 2147483648, -2147483649, 1e20, Number.MAX_SAFE_INTEGER + 2, 1e308];

/** Query and path text that JSON cannot carry. */
const HOSTILE_TEXT_NUMBERS = ['Infinity', '-Infinity', 'NaN', '1e20', '2147483648', '0x10', '', ' 1', '1.0'];

/** A cursor as the lists make them, around a value: base64url of `{"s":n}`. */
const forgedCursor = (value: unknown) => Buffer.from(JSON.stringify({ s: value })).toString('base64url');
const HOSTILE_CURSORS = [2147483648, 1e20, -1, 0, 1.5, '1', null, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2].map(forgedCursor);

function nested(depth: number): unknown {
  let value: unknown = 'deep';
  for (let n = 0; n < depth; n++) value = n % 2 ? [value] : { a: value };
  return value;
}

const hostileString = fc.constantFrom(...HOSTILE_STRINGS);
const anyJson = fc.oneof(fc.jsonValue({ maxDepth: 3 }), hostileString, fc.constant(nested(3000)), fc.constantFrom(...HOSTILE_NUMBERS));

/** Values for `schema`: mostly what it allows, often something hostile in its place. */
function valuesOf(schema: Schema, known: Record<string, string>, name = '', depth = 0): fc.Arbitrary<unknown> {
  const hostile = fc.oneof(hostileString, fc.constantFrom(...HOSTILE_NUMBERS), fc.constant(null), fc.constant(nested(3000)));
  return fc.oneof({ weight: 3, arbitrary: fitting(schema, known, name, depth) }, { weight: 1, arbitrary: hostile });
}

function fitting(schema: Schema, known: Record<string, string>, name: string, depth: number): fc.Arbitrary<unknown> {
  if (schema.anyOf || schema.oneOf) return fc.oneof(...(schema.anyOf ?? schema.oneOf).map((member: Schema) => valuesOf(member, known, name, depth)));
  if (schema.allOf) return valuesOf(schema.allOf[0], known, name, depth);
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'string': {
      const choices: fc.Arbitrary<unknown>[] = [fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 30 }), hostileString];
      if (schema.pattern) choices.push(fc.stringMatching(new RegExp(schema.pattern)), fc.stringMatching(new RegExp(schema.pattern)).map((text) => `${text}\u0000`));
      if (schema.format === 'uri') choices.push(fc.constantFrom('https://localhost/x', 'https://example.com/\u0000', 'http://127.0.0.1/', 'https://[::1]/'));
      if (name === 'cursor') choices.push(fc.constantFrom(...HOSTILE_CURSORS));
      if (known[name]) choices.push(fc.constant(known[name]), fc.constant(known[name]), fc.constant(`${known[name]}\u0000`));
      return fc.oneof(...choices);
    }
    case 'integer':
    case 'number':
      return fc.oneof(
        fc.integer({ min: schema.minimum ?? -10, max: Math.min(schema.maximum ?? 1000, 1000) }),
        fc.constantFrom(...HOSTILE_NUMBERS),
      );
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      if (depth > 4) return fc.constant([]);
      return fc.array(valuesOf(schema.items ?? {}, known, name, depth + 1), { maxLength: 4 });
    case 'object': {
      if (depth > 4) return fc.constant({});
      const properties: Record<string, Schema> = schema.properties ?? {};
      const record = fc.record(
        Object.fromEntries(Object.entries(properties).map(([key, property]) => [key, valuesOf(property, known, key, depth + 1)])),
        { requiredKeys: [] },
      );
      const open = schema.patternProperties ? (Object.values(schema.patternProperties)[0] as Schema) : null;
      if (!open) return record;
      const keys = fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), hostileString);
      return fc.dictionary(keys, valuesOf(open, known, name, depth + 1), { maxKeys: 4 });
    }
    default:
      return anyJson;
  }
}

/** Percent-encodes `text` as UTF-8, writing an unpaired surrogate as its three bytes (what a hostile client can send). */
function encodeSegment(text: string): string {
  let out = '';
  for (let n = 0; n < text.length; n++) {
    const unit = text.charCodeAt(n);
    const next = text.charCodeAt(n + 1);
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(text.slice(n, n + 2));
      n++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    } else {
      out += encodeURIComponent(text[n]!);
    }
  }
  return out;
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
}

interface Operation {
  method: string;
  path: string;
  operationId: string;
  parameters?: Array<{ name: string; in: 'path' | 'query'; schema: Schema }>;
  requestBody?: { content: { 'application/json': { schema: Schema } } };
}

/** One request for `operation`, with its path, query and body drawn from its schemas. */
function requestsFor(operation: Operation, known: Record<string, string>) {
  const parameters = operation.parameters ?? [];
  const textValue = (parameter: { name: string; schema: Schema }) =>
    fc.oneof(
      { weight: 4, arbitrary: valuesOf(parameter.schema, known, parameter.name).map(asText) },
      { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_TEXT_NUMBERS) },
    );
  const path = fc.record(Object.fromEntries(parameters.filter((p) => p.in === 'path').map((p) => [p.name, textValue(p)])));
  const query = fc.record(
    Object.fromEntries(parameters.filter((p) => p.in === 'query').map((p) => [p.name, textValue(p)])),
    { requiredKeys: [] },
  );
  const bodySchema = operation.requestBody?.content['application/json'].schema;
  const body = bodySchema ? valuesOf(bodySchema, known) : fc.constant(undefined);
  return fc.record({ path, query, body }).map(({ path: pathValues, query: queryValues, body: bodyValue }) => {
    const url = operation.path.replace(/\{([^}]+)\}/g, (_match, name: string) => encodeSegment((pathValues as Record<string, string>)[name] ?? 'x'));
    const search = Object.entries(queryValues as Record<string, string>)
      // A long poll asked to wait would only slow the walk down: waits are not what is fuzzed.
      .map(([name, value]) => `${encodeSegment(name)}=${encodeSegment(name === 'wait_ms' || name === 'timeout_ms' ? '0' : value)}`)
      .join('&');
    if (bodyValue && typeof bodyValue === 'object' && 'timeout_ms' in bodyValue) (bodyValue as Record<string, unknown>).timeout_ms = 0;
    return { url: search ? `${url}?${search}` : url, body: bodyValue };
  });
}

describe('hostile input', () => {
  let service: TestService;
  let key: string;
  let taskId: string;
  let code: string;
  const known: Record<string, string> = {};

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' });
    ({ key } = await service.newOrg());
    const agent = await service.api(key, 'POST', '/v1/agents', { agent_id: 'fuzzed' });
    expect(agent.status).to.equal(200);
    const sleeping = await startSleepingTask(service, key);
    taskId = sleeping.taskId;
    code = (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body.session_id;
    Object.assign(known, { agent_id: 'fuzzed', session_id: code, code, task_id: taskId, id: taskId });
  });
  after(async () => service.stop());

  const expectInvalid = (response: ApiResponse, field: string) => {
    expect(response.status, JSON.stringify(response.body)).to.equal(400);
    const message = typeof response.body.error === 'string' ? response.body.error : response.body.error.message;
    if (typeof response.body.error !== 'string') expect(response.body.error.type).to.equal('invalid_request');
    expect(message).to.include(field);
  };

  it('refuses NUL and unpaired surrogates in any string field with 400 naming it', async () => {
    const tasks = `/v1/sessions/${code}/tasks`;
    expectInvalid(await service.api(key, 'POST', tasks, { prompt: 'go', request_id: 'r\u0000' }), 'request_id');
    expectInvalid(await service.api(key, 'POST', tasks, { prompt: 'go', metadata: { 'k\u0000': 'v' } }), 'metadata');
    expectInvalid(await service.api(key, 'POST', tasks, { prompt: 'go', metadata: { k: 'v\u0000' } }), 'metadata.k');
    expectInvalid(await service.api(key, 'POST', tasks, { prompt: 'go\u0000' }), 'prompt');
    expectInvalid(await service.api(key, 'PATCH', '/v1/agents/fuzzed', { instructions: 'be brief\u0000' }), 'instructions');
    expectInvalid(await service.api(key, 'PATCH', '/v1/agents/fuzzed', { instructions: 'be brief \uD800' }), 'instructions');
    expectInvalid(await service.api(key, 'PATCH', '/v1/agents/fuzzed/draft', { instructions: '\uDC00' }), 'instructions');
    expectInvalid(await service.api(key, 'GET', '/v1/agents/fuzzed%00'), 'agent_id');
    expectInvalid(await service.api(key, 'GET', '/v1/agents/fuzzed%00/versions'), 'agent_id');
    expectInvalid(await service.api(key, 'POST', '/v1/sessions', { metadata: { a: '\uD800' } }), 'metadata.a');
    expectInvalid(await service.api(null, 'POST', '/start', { prompt: 'go', request_id: 'r\u0000', code }, { authorization: `Bearer ${key}` }), 'request_id');
  });

  it('refuses integers PostgreSQL cannot hold, and Infinity, on the events route (through its long-poll path and Koa alike) and the older /wait', async () => {
    for (const after of ['2147483648', '1e20', 'Infinity', '-Infinity', '9007199254740993']) {
      expectInvalid(await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${after}`), 'after');
      // A trailing slash is not the long-poll listener's exact path: Koa serves the same route.
      expectInvalid(await service.api(key, 'GET', `/v1/tasks/${taskId}/events/?after=${after}`), 'after');
    }
    expectInvalid(await service.api(key, 'GET', `/v1/tasks/${taskId}/recording/2147483648`), 'seq');
    expectInvalid(await service.api(key, 'GET', '/v1/agents/fuzzed/versions/2147483648'), 'version');
    expectInvalid(await service.api(null, 'POST', '/wait', { id: taskId, after: 2147483648, timeout_ms: 0, code }, { authorization: `Bearer ${key}` }), 'after');
    expectInvalid(await service.api(null, 'POST', '/wait', { id: taskId, after: 1e20, timeout_ms: 0, code }, { authorization: `Bearer ${key}` }), 'after');
    expectInvalid(await service.api(null, 'POST', '/wait', '{"id":"' + taskId + '","after":1e400,"timeout_ms":0,"code":"' + code + '"}', { authorization: `Bearer ${key}` }), 'after');
  });

  it('refuses a cursor decoding to a value past its column with 400 naming cursor', async () => {
    for (const cursor of HOSTILE_CURSORS) {
      expectInvalid(await service.api(key, 'GET', `/v1/agents/fuzzed/versions?cursor=${cursor}`), 'cursor');
    }
    expect((await service.api(key, 'GET', `/v1/tasks?cursor=${forgedCursor(2147483648)}`)).status).to.equal(200);
  });

  it('answers an after past the task\'s cursor with the task\'s cursor, not the after asked for', async () => {
    const task = (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body;
    const ahead = await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${task.cursor + 1000}`);
    expect(ahead.status).to.equal(200);
    expect(ahead.body.data).to.deep.equal([]);
    expect(ahead.body.cursor).to.equal(task.cursor);
    const legacy = await service.api(null, 'POST', '/wait', { id: taskId, after: task.cursor + 1000, timeout_ms: 0, code }, { authorization: `Bearer ${key}` });
    expect(legacy.status).to.equal(200);
    expect(legacy.body.cursor).to.equal(task.cursor);
  });

  it('never answers 5xx on any route of /openapi.json, whatever a path, query or body field holds', async function () {
    this.timeout(300_000);
    const document = (await service.api(key, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, Operation>> };
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ ...operation, method: method.toUpperCase(), path })),
    );
    expect(operations.length).to.be.greaterThan(40);
    const failures: string[] = [];
    let sent = 0;
    for (const operation of operations) {
      if (!operation.parameters?.length && !operation.requestBody) continue;
      const details = await fc.check(
        fc.asyncProperty(requestsFor(operation, known), async ({ url, body }) => {
          sent++;
          const legacy = !url.startsWith('/v1');
          const response: ApiResponse = await service.api(legacy ? null : key, operation.method, url, body, legacy ? { authorization: `Bearer ${key}` } : {});
          // A server without a payment provider says so (a setting, not a fault): the documented 503.
          const paymentsOff = response.status === 503 && response.body?.error?.code === 'payments_unavailable';
          return response.status < 500 || paymentsOff;
        }),
        { numRuns: 40, seed: 17, endOnFailure: true },
      );
      if (details.failed) failures.push(`${operation.method} ${operation.path}: ${fc.stringify(details.counterexample)}`);
    }
    expect(sent).to.be.greaterThan(1000);
    expect(failures, failures.join('\n')).to.deep.equal([]);
  });
});
