import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ConflictError,
  Deskhand,
  DeskhandConnectionError,
  DeskhandError,
  NotFoundError,
  RateLimitError,
  ServerError,
  parseRetryAfter,
  type RetryInfo,
} from '../../sdk/src/index';
import { startTestService, waitFor, type TestService } from '../support/service';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A local server that answers each request with the next of `answers` (the last one repeats). */
async function scriptedServer(answers: ((res: ServerResponse) => void)[]): Promise<{ baseUrl: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      answers[Math.min(seen.length, answers.length) - 1]!(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => (res: ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_test_1', ...headers });
  res.end(JSON.stringify(body));
};
const task = { object: 'task', task_id: 'task_1', done: false };
const fast = { initialDelayMs: 1, maxDelayMs: 4 };

describe('SDK client: retries and errors (against a local server)', () => {
  const closers: (() => Promise<void>)[] = [];
  const serve = async (answers: ((res: ServerResponse) => void)[]) => {
    const server = await scriptedServer(answers);
    closers.push(server.close);
    return server;
  };
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it('retries a 429 after its Retry-After seconds, then returns the 200', async () => {
    const server = await serve([json(429, { error: { type: 'rate_limit', message: 'Too many requests' } }, { 'retry-after': '1' }), json(200, task)]);
    const retries: RetryInfo[] = [];
    const client = new Deskhand({ apiKey: 'dh_test', baseUrl: server.baseUrl, retries: fast, onRetry: (info) => retries.push(info) });
    const got = await client.tasks.get('task_1');
    expect(got).to.deep.equal(task);
    expect(server.seen.map((s) => `${s.method} ${s.url}`)).to.deep.equal(['GET /v1/tasks/task_1', 'GET /v1/tasks/task_1']);
    expect(server.seen[0]!.headers.authorization).to.equal('Bearer dh_test');
    expect(retries).to.have.length(1);
    expect(retries[0]).to.include({ attempt: 1, delayMs: 1000, method: 'GET', path: '/v1/tasks/task_1' });
    expect(retries[0]!.error).to.be.instanceOf(RateLimitError);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-03-02T09:14:05Z');
    expect(parseRetryAfter('5', now)).to.equal(5000);
    expect(parseRetryAfter('Mon, 02 Mar 2026 09:14:07 GMT', now)).to.equal(2000);
    expect(parseRetryAfter('Mon, 02 Mar 2026 09:00:00 GMT', now)).to.equal(0);
    expect(parseRetryAfter('soon', now)).to.equal(null);
    expect(parseRetryAfter(null, now)).to.equal(null);
  });

  it('backs off exponentially on 500 and 503 without Retry-After, then gives up after maxRetries with the last error', async () => {
    const server = await serve([
      json(500, { error: { type: 'server_error', message: 'boom' } }),
      json(503, { error: { type: 'server_error', code: 'unavailable', message: 'PostgreSQL does not answer' } }),
      json(500, { error: { type: 'server_error', message: 'boom again' } }),
    ]);
    const retries: RetryInfo[] = [];
    const client = new Deskhand({ apiKey: 'k', baseUrl: server.baseUrl, retries: { maxRetries: 2, initialDelayMs: 100, maxDelayMs: 150 }, onRetry: (info) => retries.push(info) });
    const error = await client.tasks.list().catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ServerError).and.to.include({ status: 500, type: 'server_error', message: 'boom again', request_id: 'req_test_1' });
    expect(server.seen).to.have.length(3);
    // Equal jitter: half of the exponential step is fixed, half random; capped at maxDelayMs.
    expect(retries.map((r) => r.attempt)).to.deep.equal([1, 2]);
    expect(retries[0]!.delayMs).to.be.within(50, 100);
    expect(retries[1]!.delayMs).to.be.within(75, 150);
    expect((retries[1]!.error as DeskhandError).code).to.equal('unavailable');
  });

  it('does not wait for a Retry-After longer than maxRetryAfterMs: the error comes at once', async () => {
    const server = await serve([json(429, { error: { type: 'rate_limit', code: 'concurrency_limit', message: 'Too many tasks at once' } }, { 'retry-after': '3600' })]);
    const client = new Deskhand({ apiKey: 'k', baseUrl: server.baseUrl, retries: { ...fast, maxRetryAfterMs: 10_000 } });
    const error = await client.sessions.startTask('K7QX-M2PD', { prompt: 'x' }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(RateLimitError).and.to.include({ code: 'concurrency_limit' });
    expect((error as DeskhandError).headers.get('retry-after')).to.equal('3600');
    expect(server.seen).to.have.length(1);
  });

  it('sends one Idempotency-Key for every attempt of a create, and request_id as that key when given', async () => {
    const server = await serve([json(503, { error: { type: 'server_error', message: 'x' } }), json(200, task)]);
    const client = new Deskhand({ apiKey: 'k', baseUrl: server.baseUrl, retries: fast });
    await client.sessions.startTask('K7QX-M2PD', { prompt: 'Print a page' });
    const keys = server.seen.map((s) => s.headers['idempotency-key']);
    expect(keys).to.have.length(2);
    expect(keys[0]).to.be.a('string').and.have.length.greaterThan(10);
    expect(keys[1]).to.equal(keys[0]);
    expect(JSON.parse(server.seen[0]!.body)).to.deep.equal({ prompt: 'Print a page' });
    await client.sessions.startTask('K7QX-M2PD', { prompt: 'Print a page', request_id: 'ticket-1' });
    expect(server.seen.at(-1)!.headers['idempotency-key']).to.equal('ticket-1');
    await client.sessions.create();
    const created = server.seen.at(-1)!;
    expect(created.headers['idempotency-key']).to.be.a('string').and.not.equal(keys[0]);
    expect(created.body).to.equal('{}');
  });

  it('does not retry a non-retried status (409), and maps its fields', async () => {
    const server = await serve([json(409, { error: { type: 'conflict', code: 'already_answered', answered_by: 'customer', message: 'The person answered first' } })]);
    const client = new Deskhand({ apiKey: 'k', baseUrl: server.baseUrl, retries: fast });
    const error = await client.tasks.respond('task_1', { question_id: 'q_1', answer: 'M' }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ConflictError).and.instanceOf(DeskhandError);
    expect(error).to.include({ status: 409, type: 'conflict', code: 'already_answered', answered_by: 'customer', request_id: 'req_test_1', name: 'ConflictError' });
    expect(server.seen).to.have.length(1);
  });

  it('maps a body that is not the API error shape by its status', async () => {
    const server = await serve([
      (res) => {
        res.writeHead(404, { 'content-type': 'text/html' });
        res.end('<h1>Not here</h1>');
      },
    ]);
    const client = new Deskhand({ apiKey: 'k', baseUrl: server.baseUrl, retries: fast });
    const error = await client.sessions.get('K7QX-M2PD').catch((e: unknown) => e);
    expect(error).to.be.instanceOf(NotFoundError).and.include({ status: 404, type: 'not_found', message: '<h1>Not here</h1>', code: undefined });
  });

  it('retries a connection failure for a GET, and throws DeskhandConnectionError once out of retries', async () => {
    const server = await serve([json(200, task)]);
    const baseUrl = server.baseUrl;
    await closers.pop()!();
    const retries: RetryInfo[] = [];
    const client = new Deskhand({ apiKey: 'k', baseUrl, retries: { ...fast, maxRetries: 2 }, onRetry: (info) => retries.push(info) });
    const error = await client.tasks.get('task_1').catch((e: unknown) => e);
    expect(error).to.be.instanceOf(DeskhandConnectionError);
    expect(retries).to.have.length(2);
  });

  it('does not retry a connection failure for a respond (it may have been taken)', async () => {
    const server = await serve([json(200, task)]);
    const baseUrl = server.baseUrl;
    await closers.pop()!();
    const retries: RetryInfo[] = [];
    const client = new Deskhand({ apiKey: 'k', baseUrl, retries: fast, onRetry: (info) => retries.push(info) });
    const error = await client.tasks.respond('task_1', { question_id: 'q_1', answer: 'M' }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(DeskhandConnectionError);
    expect(retries).to.have.length(0);
  });

  it('stops waiting when its signal aborts, with the signal reason', async () => {
    const server = await serve([json(503, { error: { type: 'server_error', message: 'x' } }, { 'retry-after': '30' })]);
    const client = new Deskhand({ apiKey: 'k', baseUrl: server.baseUrl });
    const controller = new AbortController();
    const pending = client.tasks.get('task_1', {}, { signal: controller.signal }).catch((e: unknown) => e);
    // Abort once the server has answered the first try, so the client is waiting out Retry-After.
    await waitFor(() => server.seen.length > 0, 5_000, 'the first try to reach the server');
    controller.abort(new Error('caller gave up'));
    expect(await pending).to.be.instanceOf(Error).and.have.property('message', 'caller gave up');
  });

  it('refuses a client without an API key or with a base URL that is not http(s)', () => {
    expect(() => new Deskhand({ apiKey: '', baseUrl: 'http://localhost:8080' })).to.throw(TypeError, /apiKey/);
    expect(() => new Deskhand({ apiKey: 'k', baseUrl: 'localhost:8080' })).to.throw(TypeError, /baseUrl/);
  });
});

describe('SDK client against the service', () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  it('maps 401, 404 and 400 to typed errors with the service request id', async () => {
    const { key } = await service.newOrg();
    const wrong = new Deskhand({ apiKey: 'dh_live_not_a_key', baseUrl: service.baseUrl });
    const unauthenticated = await wrong.me().catch((e: unknown) => e);
    expect(unauthenticated).to.include({ status: 401, type: 'authentication', name: 'AuthenticationError' });
    const client = new Deskhand({ apiKey: key, baseUrl: service.baseUrl });
    const missing = await client.tasks.get('task_doesnotexist00000000').catch((e: unknown) => e);
    expect(missing).to.be.instanceOf(NotFoundError);
    expect((missing as DeskhandError).request_id).to.be.a('string').and.have.length.greaterThan(0);
    const invalid = await client.tasks.list({ limit: 1000 }).catch((e: unknown) => e);
    expect(invalid).to.include({ status: 400, type: 'invalid_request', name: 'InvalidRequestError' });
    expect((invalid as DeskhandError).message).to.include('limit');
    expect(await client.me()).to.include({ object: 'api_key_identity' });
  });

  it('reads every page of a list with listAll, keeping the filters', async () => {
    const { key } = await service.newOrg();
    const client = new Deskhand({ apiKey: key, baseUrl: service.baseUrl });
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await client.sessions.create({ metadata: { i: String(i) } })).session_id);
    const seen: string[] = [];
    for await (const session of client.sessions.listAll({ limit: 2, status: 'waiting' })) seen.push(session.session_id);
    expect(seen).to.deep.equal([...made].reverse());
    const first = await client.sessions.list({ limit: 2 });
    expect(first.has_more).to.equal(true);
    const created: string[] = [];
    for await (const entry of client.auditLog.listAll({ limit: 2, action: 'session.created' })) created.push(String(entry.object_id));
    expect(created).to.have.members(made);
  });
});
