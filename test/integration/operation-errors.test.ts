import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { consoleSession } from '../support/console';
import { startSleepingTask } from '../support/tasks';

/**
 * /openapi.json tells the truth about each operation's errors: every operation is sent the
 * requests that go wrong in the usual ways (no credentials, a member where an admin is needed,
 * ids that do not exist, misspelt fields, integers spelled loosely, a body past the limit, an
 * Idempotency-Key reused, the rate limit) and a few of its own, against the real service; then
 *  (b) every error it answered is one its document declares (status and code), and
 *  (a) every error example its document shows was answered by one of those requests, with the
 *      same status, code and message (ids and numbers aside), unless it is listed below as not
 *      provoked here, with the reason and the test that does provoke it.
 * The document is the walk's source: an operation added tomorrow is walked without a change here.
 */

type Schema = Record<string, any>;

interface Operation {
  method: string;
  path: string;
  operationId: string;
  parameters?: Array<{ name?: string; in?: string; schema?: Schema; $ref?: string }>;
  requestBody?: { content: Record<string, { schema: Schema; example?: unknown }> };
  responses: Record<string, any>;
  'x-deskhand-role'?: string;
}

interface Answer {
  operationId: string;
  status: number;
  code: string | undefined;
  type: string | undefined;
  message: string;
  html: boolean;
  request: string;
}

interface Example {
  operationId: string;
  status: number;
  code: string | undefined;
  type: string | undefined;
  message: string;
  html: boolean;
}

/**
 * Errors this walk does not provoke, each with where it is provoked instead: `operationId status
 * code-or-type`, `*` for every operation. Every entry must name an error some operation documents.
 */
const NOT_PROVOKED: Record<string, string> = {
  '* 500 server_error': 'a fault of ours; no request provokes it on purpose',
  '* 503 unavailable': 'PostgreSQL or Redis down: test/e2e/redis-faults.test.ts, test/e2e/postgres-faults.test.ts',
  'readyz 503 not_ready': 'PostgreSQL unreachable: test/integration/health.test.ts',
  'startTask 402 insufficient_balance': 'test/integration/billing.test.ts',
  'startTask 402 auto_topup_limit_reached': 'test/integration/billing.test.ts',
  'startTask 402 card_needs_attention': 'test/integration/billing.test.ts',
  'startTask 429 concurrency_limit': 'test/integration/billing-races.test.ts',
  'startTask 503 model_unavailable': 'a server without the model\'s key: test/integration/friction-errors.test.ts',
  'startTask 409 not_connected': 'a session without a computer: test/integration/task-start.test.ts',
  'startTask 409 request_id_in_use': 'test/e2e/legacy-api.test.ts',
  'startTask 409 idempotency_conflict': 'test/integration/task-start.test.ts',
  'startTask 404 not_found': 'an expired session, a version that does not exist: test/integration/task-start.test.ts',
  'legacyStart 402 insufficient_balance': 'the /v1 start\'s rule (shared/billing): test/integration/billing.test.ts',
  'legacyStart 402 auto_topup_limit_reached': 'the /v1 start\'s rule: test/integration/billing.test.ts',
  'legacyStart 402 card_needs_attention': 'the /v1 start\'s rule: test/integration/billing.test.ts',
  'legacyStart 429 concurrency_limit': 'the /v1 start\'s rule: test/integration/billing-races.test.ts',
  'legacyStart 503 model_unavailable': 'the /v1 start\'s rule: test/integration/friction-errors.test.ts',
  'legacyStart 409 not_connected': 'the /v1 start\'s rule: test/integration/task-start.test.ts',
  'legacyStart 409 request_id_in_use': 'test/e2e/legacy-api.test.ts',
  'legacyWait 409 already_answered': 'a question answered first by the person: test/e2e/legacy-api.test.ts',
  'legacyWait 409 not_pending': 'the /v1 answer\'s rule: test/e2e/tasks.test.ts',
  'respondToTask 409 already_answered': 'a question answered first by the person: test/e2e/tasks.test.ts',
  'respondToTask 409 not_pending': 'test/e2e/tasks.test.ts',
  'putAgentFile 409 file_store_full': '1,000 files: test/integration/agent-files.test.ts',
  'createRunner 409 runner_limit': '100 runners: test/integration/runners.test.ts',
  'deleteRunner 403 cloud_runner': 'a cloud runner: test/integration/runners.test.ts',
  'createStartState 409 no_runner': 'an image whose runners are offline: test/integration/machines.test.ts',
  'createStartState 409 idempotency_conflict': 'the rule of every idempotent create: test/integration/idempotency-keys.test.ts',
  'updateStartState 403 image': 'needs an image of a connected runner (saveStartState\'s is provoked here: any id but an ss_ one); no test provokes it yet',
  'deleteStartState 403 image': 'needs an image of a connected runner (saveStartState\'s is provoked here: any id but an ss_ one); no test provokes it yet',
  'openStartState 403 image': 'needs an image of a connected runner (saveStartState\'s is provoked here: any id but an ss_ one); no test provokes it yet',
  'openStartState 409 no_runner': 'needs a start state kept by an offline runner; no test provokes it yet',
  'openStartState 409 not_ready': 'needs a start state still building; no test provokes it yet',
  'saveStartState 409 not_open': 'needs a ready start state; no test provokes it yet',
  'deleteStartState 409 in_use': 'needs a saved start state a test case uses; no test provokes it yet',
  'machineViewScreen 409 starting': 'needs an open machine still starting; no test provokes it yet',
  'machineViewScreen 409 runner_refused': 'test/e2e/evals-live-view.test.ts',
  'machineViewScreen 503 runner_unavailable': 'needs an open machine whose runner is gone; no test provokes it yet',
  'machineViewInput 409 starting': 'needs an open machine still starting; no test provokes it yet',
  'machineViewInput 409 runner_refused': 'test/e2e/evals-live-view.test.ts',
  'machineViewInput 503 runner_unavailable': 'needs an open machine whose runner is gone; no test provokes it yet',
  'cancelTestRun 409 not_running': 'needs a run that has ended; no test provokes it yet',
  'compareTestRuns 400 invalid_request': 'with naming no run beside a run that exists; no test provokes it yet',
  'createTestRun 404 not_found': 'an agent or version that does not exist: the task start\'s rule, test/integration/task-start.test.ts',
  'createTestRun 409 idempotency_conflict': 'the rule of every idempotent create: test/integration/idempotency-keys.test.ts',
  'batchTestCases 409 idempotency_conflict': 'the rule of every idempotent create: test/integration/idempotency-keys.test.ts',
  'publishAgentDraft 409 idempotency_conflict': 'the rule of every idempotent create: test/integration/idempotency-keys.test.ts',
  'inviteMember 409 idempotency_conflict': 'the rule of every idempotent create: test/integration/idempotency-keys.test.ts',
  'inviteMember 403 permission': 'an admin inviting an owner, from a console sign-in: test/e2e/console-settings.test.ts',
  'inviteMember 409 already_member': 'an address already in the org: test/integration/console-invitations.test.ts',
  'changeMemberRole 403 permission': 'an admin giving the owner role, from a console sign-in: test/integration/console-auth.test.ts',
  'changeMemberRole 409 last_owner': 'the last owner demoting themselves: test/integration/console-auth.test.ts',
  'removeMember 403 permission': 'an admin removing an owner, from a console sign-in; no test provokes it yet',
  'removeMember 409 last_owner': 'the last owner removing themselves; no test provokes it yet',
  'setPassword 400 invalid_request': 'a wrong current_password, from a console sign-in: test/integration/console-auth.test.ts',
  'setPassword 403 permission': 'an API key setting a password: test/integration/console-auth.test.ts',
  'updateTestCase 409 key_taken': 'test/integration/test-cases.test.ts',
  'updateBillingSettings 409 no_card': 'needs a payment provider; no test provokes it yet',
  'topUp 402 card_needs_attention': 'a declined card, with the Stripe stand-in: test/integration/billing.test.ts',
  'topUp 409 no_card': 'needs a payment provider; no test provokes it yet',
  'receivePaymentProviderWebhook 400 invalid_request': 'a bad signature, with a payment provider: test/integration/billing.test.ts',
  'redeliverWebhookEvent 409 event_type_filtered': 'test/integration/webhooks.test.ts',
  'redeliverWebhookEvent 409 no_webhook_endpoint': 'a delivery, then the endpoint removed: test/integration/webhooks.test.ts',
};

/** Well-formed values of path parameters that name nothing. */
const MISSING: Record<string, string> = {
  agent_id: 'missing-agent-1',
  version: '999',
  path: 'missing-1.md',
  task_id: 'task_missing0001',
  session_id: 'ZZZZ-9999',
  code: 'ZZZZ-9999',
  seq: '999',
  runner_id: 'rn_missing0001',
  start_state_id: 'ss_missing0001',
  test_case_id: 'tc_missing0001',
  test_set_id: 'ts_missing0001',
  test_run_id: 'tr_missing0001',
  delivery_id: 'whd_missing0001',
  key_id: 'key_missing0001',
  token: 'missingtoken1',
  file: 'missing-1.js',
  user_id: 'usr_missing0000000000001',
  invitation_id: 'inv_missing0000000000001',
};

/** Integers of a path or query, spelled every way but their one: each is a 400. */
const LOOSE_INTEGERS = ['01', '+1', '1.0', '0x10', '1e1', ' 1'];

/** Words that are values (ids, numbers, names, quoted text) rather than the sentence: any such word matches any other. */
const isValue = (word: string) => /[0-9_"'$<>/.\-]/.test(word) || /^[A-Z0-9]{4}-[A-Z0-9]{4}/.test(word);

/** True when `actual` is `example` with other ids, numbers and names in it. */
export function sameSentence(example: string, actual: string): boolean {
  const a = example.split(/\s+/);
  const b = actual.split(/\s+/);
  return a.length === b.length && a.every((word, n) => word === b[n] || (isValue(word) && isValue(b[n]!)));
}

/** `prompt` → `promt`: as api/routing.ts misspells a field for the document's 400 example. */
const misspelt = (name: string) => (name.length > 2 ? name.slice(0, -2) + name.slice(-1) : `${name}${name}`);

function resolve(document: any, node: any): any {
  return node?.$ref ? resolve(document, node.$ref.split('/').slice(1).reduce((at: any, part: string) => at[part], document)) : node;
}

function documentedExamples(document: any, operation: Operation): Example[] {
  const out: Example[] = [];
  for (const [status, declared] of Object.entries(operation.responses)) {
    if (Number(status) < 400) continue;
    const response = resolve(document, declared);
    const json = response.content?.['application/json'];
    const named: unknown[] = json?.example !== undefined ? [json.example] : Object.values(json?.examples ?? {}).map((example: any) => example.value);
    for (const body of named as any[]) {
      const error = typeof body.error === 'string' ? { message: body.error, code: body.code, type: undefined } : body.error;
      out.push({ operationId: operation.operationId, status: Number(status), code: error.code, type: error.type, message: error.message, html: false });
    }
    if (json && named.length === 0) out.push({ operationId: operation.operationId, status: Number(status), code: undefined, type: undefined, message: '', html: false });
    if (response.content?.['text/html']) out.push({ operationId: operation.operationId, status: Number(status), code: undefined, type: undefined, message: '', html: true });
  }
  return out;
}

/** The type of each status (the older API's bodies carry none). */
const TYPE_OF_STATUS: Record<number, string> = {
  400: 'invalid_request', 401: 'authentication', 402: 'payment_required', 403: 'permission', 404: 'not_found',
  409: 'conflict', 413: 'invalid_request', 429: 'rate_limit', 500: 'server_error', 503: 'server_error',
};

const keyOf = (error: { operationId: string; status: number; code?: string; type?: string; html?: boolean }) =>
  `${error.operationId} ${error.status} ${error.html ? 'html' : (error.code ?? error.type ?? TYPE_OF_STATUS[error.status])}`;

describe('the errors /openapi.json documents for each operation', function () {
  this.timeout(180_000);
  let service: TestService;
  let limited: TestService;
  let document: any;
  let operations: Operation[];
  const answers: Answer[] = [];
  let key: string;
  let limitedKey: string;
  let member: { cookie: string; csrfToken: string; userId: string };
  const known: Record<string, string> = {};

  /** Sends one request for `operation` and records its answer. */
  async function send(
    target: TestService,
    operation: Operation,
    options: { params?: Record<string, string>; query?: string; body?: unknown; raw?: string; headers?: Record<string, string>; credentials?: 'key' | 'none' | 'member'; apiKey?: string },
  ): Promise<Answer> {
    const params = { ...known, ...options.params };
    const url = operation.path.replace(/\{([^}]+)\}/g, (_match, name: string) => encodeURIComponent(params[name] ?? MISSING[name] ?? 'x')) + (options.query ? `?${options.query}` : '');
    const legacy = !operation.path.startsWith('/v1') && ['/start', '/wait', '/stop', '/tasks', '/trace', '/health'].includes(operation.path);
    const credentials = options.credentials ?? 'key';
    const headers: Record<string, string> = { ...options.headers };
    if (credentials === 'key' && (operation.path.startsWith('/v1') || legacy)) headers.authorization = `Bearer ${options.apiKey ?? key}`;
    if (credentials === 'member') Object.assign(headers, { cookie: member.cookie, 'x-csrf-token': member.csrfToken });
    let body: string | undefined = options.raw;
    if (body === undefined && options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    const response = await fetch(target.baseUrl + url, { method: operation.method, headers, body, redirect: 'manual' });
    const text = await response.text();
    const contentType = response.headers.get('content-type') ?? '';
    let parsed: any = null;
    if (contentType.includes('json') && text) parsed = JSON.parse(text);
    const error = parsed && typeof parsed.error === 'string' ? { message: parsed.error, code: parsed.code, type: undefined } : parsed?.error;
    const answer: Answer = {
      operationId: operation.operationId,
      status: response.status,
      code: error?.code,
      type: error?.type,
      message: error?.message ?? '',
      html: contentType.includes('text/html'),
      request: `${operation.method} ${url}${body !== undefined ? ` ${body.slice(0, 120)}` : ''}`,
    };
    answers.push(answer);
    return answer;
  }

  const byId = (id: string) => operations.find((operation) => operation.operationId === id)!;

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' });
    const org = await service.newOrg();
    key = org.key;
    member = await consoleSession(service, org.orgId, 'member');
    document = (await service.api(null, 'GET', '/openapi.json')).body;
    operations = Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ ...operation, method: method.toUpperCase(), path })),
    );
    // Objects that exist, so that each id can go missing while the others are found.
    expect((await service.api(key, 'POST', '/v1/agents', { agent_id: 'errs-agent-1', is_default: true })).status).to.equal(200);
    expect((await service.api(key, 'PUT', '/v1/agents/errs-agent-1/files/notes%2Fa.md', { content: 'hello' })).status).to.equal(200);
    const sleeping = await startSleepingTask(service, key);
    const task = (await service.api(key, 'GET', `/v1/tasks/${sleeping.taskId}`)).body;
    const runner = await service.api(key, 'POST', '/v1/runners', { name: 'errs runner' });
    const testSet = await service.api(key, 'POST', '/v1/test_sets', { name: 'errs set' });
    const apiKey = await service.api(key, 'POST', '/v1/api_keys', { name: 'errs key' });
    Object.assign(known, {
      agent_id: 'errs-agent-1',
      version: '1',
      path: 'notes/a.md',
      task_id: sleeping.taskId,
      session_id: task.session_id,
      code: task.session_id,
      seq: '1',
      runner_id: runner.body.runner_id,
      test_set_id: testSet.body.test_set_id,
      key_id: apiKey.body.key_id,
      file: 'start.js',
      user_id: member.userId,
    });
    limited = await startTestService({ DESKHAND_RATE_LIMIT_PER_HOUR: '1', DESKHAND_REDIS_PREFIX: `errs-rl-${Date.now()}` }, ['web']);
    limitedKey = (await limited.newOrg()).key;
  });
  after(async () => {
    await limited?.stop();
    await service?.stop();
  });

  it('answers the usual mistakes of every operation', async () => {
    expect(operations.length).to.be.greaterThan(90);
    for (const operation of operations) {
      const parameters = (operation.parameters ?? []).map((parameter) => resolve(document, parameter));
      const pathParameters = parameters.filter((parameter) => parameter.in === 'path');
      const queryParameters = parameters.filter((parameter) => parameter.in === 'query');
      const bodySchema = resolve(document, operation.requestBody?.content['application/json']?.schema);
      const readsBody = ['POST', 'PUT', 'PATCH'].includes(operation.method);
      const apiKeyRoute = (operation as any).security?.some((scheme: Record<string, unknown>) => 'apiKey' in scheme);
      if (apiKeyRoute) await send(service, operation, { credentials: 'none' });
      if (operation['x-deskhand-role']) await send(service, operation, { credentials: 'member', body: readsBody ? {} : undefined });
      // A body that passes, from the document's own example, so that a missing id is what goes wrong.
      const example = operation.requestBody?.content['application/json']?.example;
      for (const parameter of pathParameters) {
        await send(service, operation, { params: { [parameter.name]: MISSING[parameter.name] ?? 'missing-1' }, body: readsBody ? (example ?? {}) : undefined });
        await send(service, operation, { params: { [parameter.name]: 'x\u0000' } });
        if (parameter.schema?.type === 'integer') for (const loose of LOOSE_INTEGERS) await send(service, operation, { params: { [parameter.name]: loose } });
      }
      const firstQuery = queryParameters[0];
      if (firstQuery) await send(service, operation, { query: `${misspelt(firstQuery.name)}=x` });
      for (const parameter of queryParameters.filter((candidate) => candidate.schema?.type === 'integer')) {
        await send(service, operation, { query: `${parameter.name}=01` });
      }
      const firstField = Object.keys(bodySchema?.properties ?? {})[0];
      if (firstField) await send(service, operation, { body: { [misspelt(firstField)]: 'x' } });
      if (readsBody) {
        await send(service, operation, { raw: 'not json', headers: { 'content-type': 'text/plain' } });
        await send(service, operation, { raw: '{"a":' });
        const large = operation.responses['413'] && /8 MB/.test(JSON.stringify(resolve(document, operation.responses['413'])));
        await send(service, operation, { raw: JSON.stringify({ pad: 'x'.repeat((large ? 8 : 1) * 1024 * 1024 + 10) }) });
      }
      // The rate limit: a budget of one request an hour, spent by the first request.
      for (let n = 0; n < 2; n++) await send(limited, operation, { apiKey: limitedKey, body: readsBody ? {} : undefined });
    }
  });

  it('answers the errors of each operation\'s own work', async () => {
    const run = (id: string, options: Parameters<typeof send>[2]) => send(service, byId(id), options);
    // Agents.
    await run('createAgent', { body: { agent_id: 'errs-agent-1' } });
    await run('updateAgent', { body: { is_default: false } });
    await run('publishAgentDraft', { body: undefined });
    // Tasks: a second task on the busy computer, an answer to no question, a frame past the last.
    await run('startTask', { body: { prompt: 'again' } });
    await run('respondToTask', { body: { question_id: 'q_missing1', answer: 'yes' } });
    await run('getRecordingFrame', { params: { seq: '999' } });
    await run('deleteAgentFile', { params: { path: 'never-written-1.md' } });
    // A change to a case that does not exist (a body that passes: the example's names an image this org's runners lack).
    await run('updateTestCase', { body: { name: 'renamed' } });
    // The older API: a token that is no session's, a code that is no session's, a task of another session.
    await run('legacyHealth', { credentials: 'none', headers: { authorization: 'Bearer dh_sess_nosuchtoken' } });
    const legacyBodies: Record<string, Record<string, unknown>> = {
      legacyStart: { prompt: 'x' },
      legacyWait: { id: 'task_missing0001', after: 0, timeout_ms: 0 },
      legacyStop: { id: 'task_missing0001' },
      legacyListTasks: {},
      legacyTrace: { id: 'task_missing0001' },
    };
    for (const [id, body] of Object.entries(legacyBodies)) {
      await run(id, { credentials: 'none', body: { code: known.code, ...body } });
      await run(id, { body: { code: 'ZZZZ-9999', ...body } });
      await run(id, { body: { code: known.code, ...body } });
    }
    await run('legacyWait', { body: { code: known.code, id: known.task_id, question_id: 'q_missing1', answer: 'yes', after: 0, timeout_ms: 0 } });
    await run('legacyStart', { body: { code: known.code, prompt: 'again' } });
    await run('legacyHealth', { query: 'code=ZZZZ-9999' });
    // Sessions and start states of agents that do not exist.
    await run('createSession', { body: { agent_id: 'missing-agent-1' } });
    await run('createStartState', { body: { name: 'x', from: 'macos-15', method: 'instruction', instruction: 'do it', agent_id: 'missing-agent-1' } });
    // Test runs: neither or both of a set and cases; a set that does not exist; both runs missing.
    await run('createTestRun', { body: {} });
    await run('createTestRun', { body: { test_set_id: 'ts_missing0001' } });
    await run('compareTestRuns', { query: 'with=tr_missing0002' });
    await run('batchTestCases', { body: { cases: [{ key: 'a' }], test_set_id: 'ts_missing0001' } });
    // Plans, payments (no payment provider on this server), webhooks.
    await run('changePlan', { credentials: 'member', body: { plan_id: 'free' } });
    const owner = await consoleSession(service, (await service.api(key, 'GET', '/v1/me')).body.org_id, 'owner');
    for (const body of [{ plan_id: 'no-such-plan' }, { plan_d: 'free' }, { plan_id: 'enterprise' }]) {
      await send(service, byId('changePlan'), { credentials: 'none', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken }, body });
    }
    // An image (any id but an `ss_` one) cannot be saved.
    await run('saveStartState', { params: { start_state_id: 'macos-15' } });
    await run('updateBillingSettings', { body: { auto_topup: { enabled: true } } });
    await run('updateBillingSettings', { body: { auto_topup: { amount_cents: 20000, monthly_limit_cents: 10000 } } });
    // Test sets naming a case that does not exist; a start state from an image no runner has; a webhook to this very host.
    await run('createTestSet', { body: { name: 'x', cases: [{ test_case_id: 'tc_missing0001' }] } });
    await run('updateTestSet', { body: { cases: [{ test_case_id: 'tc_missing0001' }] } });
    await run('createStartState', { body: { name: 'x', from: 'macos-99', method: 'hand' } });
    await run('updateWebhook', { body: { url: 'https://127.0.0.1:9/hook' } });
    await run('batchTestCases', { body: { cases: [{ key: 'a', name: 'n', prompt: 'p', start_state: 'ss_missing0001', success: { check_script: 'exit 0' } }] } });
    await run('startCardSetup', {});
    await run('topUp', { body: { amount_cents: 500 } });
    await run('receivePaymentProviderWebhook', { body: { id: 'evt_1' } });
    await run('receivePaymentProviderWebhook', { raw: '' });
    await run('sendWebhookTestEvent', {});
    await run('redeliverWebhookEvent', {});
    // Idempotency-Key reused with another request.
    for (const [id, first, second] of [
      ['createAgent', { agent_id: 'errs-agent-2' }, { agent_id: 'errs-agent-3' }],
      ['createSession', {}, { metadata: { a: 'b' } }],
      ['createRunner', { name: 'one' }, { name: 'two' }],
      ['createApiKey', { name: 'one' }, { name: 'two' }],
      ['createTestSet', { name: 'one' }, { name: 'two' }],
    ] as const) {
      const headers = { 'idempotency-key': `errs-${id}` };
      expect((await run(id, { body: first, headers })).status, id).to.equal(200);
      expect((await run(id, { body: second, headers })).code, id).to.equal('idempotency_conflict');
    }
  });

  it('answers only errors its document declares, with their status, code and type', () => {
    const documented = new Map<string, Example[]>();
    for (const operation of operations) {
      for (const example of documentedExamples(document, operation)) {
        const examples = documented.get(keyOf(example)) ?? [];
        documented.set(keyOf(example), [...examples, example]);
        // A status declared without any example: any code of it (the older form of a route's `errors`).
        if (!example.html && example.message === '') documented.set(`${example.operationId} ${example.status} *`, []);
      }
    }
    const undocumented = new Set<string>();
    for (const answer of answers) {
      if (answer.status < 400) continue;
      const examples = documented.get(keyOf(answer));
      if (!examples && !documented.has(`${answer.operationId} ${answer.status} *`)) undocumented.add(`${keyOf(answer)}: ${answer.message} (${answer.request})`);
      const type = examples?.find((example) => example.type !== undefined)?.type;
      if (type && answer.type && type !== answer.type) undocumented.add(`${keyOf(answer)}: type ${answer.type}, documented ${type}`);
    }
    expect([...undocumented], [...undocumented].join('\n')).to.deep.equal([]);
    expect(answers.length).to.be.greaterThan(500);
  });

  it('shows as examples only errors the operation answered', () => {
    const unanswered: string[] = [];
    for (const operation of operations) {
      for (const example of documentedExamples(document, operation)) {
        if (example.message === '' && !example.html) continue; // a bare status: the next test
        const key = keyOf(example);
        const wildcard = `* ${key.split(' ').slice(1).join(' ')}`;
        if (NOT_PROVOKED[key] || NOT_PROVOKED[wildcard]) continue;
        const answered = answers.filter((answer) => keyOf(answer) === key);
        if (!answered.some((answer) => example.html || sameSentence(example.message, answer.message))) {
          unanswered.push(`${key}: "${example.message}"${answered.length ? ` (answered: "${answered[0]!.message}")` : ' (never answered)'}`);
        }
      }
    }
    expect(unanswered, unanswered.join('\n')).to.deep.equal([]);
  });

  it('lists as not provoked only errors some operation documents', () => {
    const keys = new Set(operations.flatMap((operation) => documentedExamples(document, operation).map(keyOf)));
    const wildcards = new Set([...keys].map((key) => `* ${key.split(' ').slice(1).join(' ')}`));
    const stale = Object.keys(NOT_PROVOKED).filter((key) => !keys.has(key) && !wildcards.has(key));
    expect(stale).to.deep.equal([]);
  });

  it('shows an example for every error of every operation', () => {
    const bare = operations.flatMap((operation) =>
      documentedExamples(document, operation).filter((example) => example.message === '' && !example.html).map((example) => `${operation.operationId} ${example.status}`),
    );
    expect(bare, 'a route declares each error with its code and message (api/route-errors.ts)').to.deep.equal([]);
  });
});

describe('integers in paths and queries', () => {
  let service: TestService;
  let key: string;
  before(async () => {
    service = await startTestService({}, ['web']);
    ({ key } = await service.newOrg());
    expect((await service.api(key, 'POST', '/v1/agents', { agent_id: 'int-agent-1' })).status).to.equal(200);
  });
  after(async () => service.stop());

  it('takes one spelling of a number: 400 naming the parameter for any other', async () => {
    expect((await service.api(key, 'GET', '/v1/agents/int-agent-1/versions/1')).status).to.equal(200);
    for (const loose of ['01', '%2B1', '1.0', '0x10', '1e0', '%201']) {
      const response = await service.api(key, 'GET', `/v1/agents/int-agent-1/versions/${loose}`);
      expect(response.status, loose).to.equal(400);
      expect(response.body.error.message).to.equal('path parameter version must be an integer');
    }
    const query = await service.api(key, 'GET', '/v1/agents/int-agent-1/versions?limit=01');
    expect(query.status).to.equal(400);
    expect(query.body.error.message).to.equal('query parameter limit must be an integer');
  });
});

describe('GET /v1/test_runs/{test_run_id}/compare with both runs missing', () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  it('answers 404 naming the run in the path, every time', async () => {
    const { key } = await service.newOrg();
    const answers = await Promise.all(Array.from({ length: 20 }, () => service.api(key, 'GET', '/v1/test_runs/tr_missing0001/compare?with=tr_missing0002')));
    expect(answers.map((answer) => `${answer.status} ${answer.body.error.message}`)).to.deep.equal(Array(20).fill('404 No test run tr_missing0001'));
  });
});
