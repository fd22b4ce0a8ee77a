import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';

/** `Idempotency-Key` on the /v1 POSTs that create (shared/idempotency, docs/api.md "Retrying safely"). */
describe('Idempotency-Key on the /v1 creates', function () {
  this.timeout(30_000);
  let service: TestService;
  let org: { orgId: string; key: string };
  let other: { orgId: string; key: string };
  let keyCount = 0;
  const newKey = () => `key-${Date.now()}-${++keyCount}`;

  before(async () => {
    service = await startTestService({}, ['web']);
    org = await service.newOrg('Idempotency org');
    other = await service.newOrg('Other org');
  });
  after(async () => {
    await service.stop();
  });

  const post = (path: string, body: unknown, key: string | undefined, apiKey = org.key) =>
    service.api(apiKey, 'POST', path, body, key === undefined ? {} : { 'idempotency-key': key });
  const db = () => service.running.container.db;
  const countRows = async (table: string, orgId = org.orgId) => Number((await db()(table).where({ org_id: orgId }).count<{ count: string }[]>('* as count'))[0]!.count);

  describe('POST /v1/sessions', () => {
    it('returns the first session to a retry with the same key and body, marked Idempotent-Replayed, and makes one', async () => {
      const key = newKey();
      const before = await countRows('sessions');
      const first = await post('/v1/sessions', { metadata: { customer: 'c1', order: 'o1' } }, key);
      expect(first.status, JSON.stringify(first.body)).to.equal(200);
      expect(first.headers.get('idempotent-replayed')).to.equal(null);
      // The same body with its fields in another order is the same request.
      const again = await post('/v1/sessions', { metadata: { order: 'o1', customer: 'c1' } }, key);
      expect(again.status, JSON.stringify(again.body)).to.equal(200);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.body).to.deep.equal(first.body);
      expect(await countRows('sessions')).to.equal(before + 1);
      const audit = await service.api(org.key, 'GET', `/v1/audit_log?object_type=session&object_id=${first.body.session_id}`);
      expect(audit.body.data.map((entry: { action: string }) => entry.action)).to.deep.equal(['session.created']);
    });

    it('answers 409 idempotency_conflict to the same key with another body, naming the key', async () => {
      const key = newKey();
      expect((await post('/v1/sessions', { metadata: { n: '1' } }, key)).status).to.equal(200);
      const before = await countRows('sessions');
      const conflict = await post('/v1/sessions', { metadata: { n: '2' } }, key);
      expect(conflict.status).to.equal(409);
      expect(conflict.body.error).to.include({ type: 'conflict', code: 'idempotency_conflict' });
      expect(conflict.body.error.message).to.contain(key);
      expect(await countRows('sessions')).to.equal(before);
    });

    it('without the header, makes a new session each time', async () => {
      const first = await post('/v1/sessions', {}, undefined);
      const second = await post('/v1/sessions', {}, undefined);
      expect(first.body.session_id).to.not.equal(second.body.session_id);
    });

    it('keeps nothing when the request fails: the retry runs again', async () => {
      const key = newKey();
      const agentId = `later-${keyCount}`;
      const failed = await post('/v1/sessions', { agent_id: agentId }, key);
      expect(failed.status).to.equal(404);
      expect((await post('/v1/agents', { agent_id: agentId }, undefined)).status).to.equal(200);
      const retried = await post('/v1/sessions', { agent_id: agentId }, key);
      expect(retried.status, JSON.stringify(retried.body)).to.equal(200);
      expect(retried.headers.get('idempotent-replayed')).to.equal(null);
      expect(retried.body.agent_id).to.equal(agentId);
    });

    it('refuses a key longer than 200 characters with 400 naming the header', async () => {
      const refused = await post('/v1/sessions', {}, 'k'.repeat(201));
      expect(refused.status).to.equal(400);
      expect(refused.body.error.message).to.contain('Idempotency-Key');
    });
  });

  it('keeps keys per org and per operation', async () => {
    const key = newKey();
    const mine = await post('/v1/test_sets', { name: 'set a' }, key);
    const theirs = await post('/v1/test_sets', { name: 'set a' }, key, other.key);
    expect(mine.status).to.equal(200);
    expect(theirs.status).to.equal(200);
    expect(theirs.headers.get('idempotent-replayed')).to.equal(null);
    expect(theirs.body.test_set_id).to.not.equal(mine.body.test_set_id);
    // The same key on another operation is another key.
    const agent = await post('/v1/agents', { agent_id: `per-op-${keyCount}` }, key);
    expect(agent.status, JSON.stringify(agent.body)).to.equal(200);
    expect(agent.headers.get('idempotent-replayed')).to.equal(null);
  });

  it('makes one runner of ten concurrent requests with one key, each answered with it and its token', async () => {
    const key = newKey();
    const before = await countRows('runners');
    const answers = await Promise.all(Array.from({ length: 10 }, () => post('/v1/runners', { name: 'rack' }, key)));
    for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    expect(new Set(answers.map((answer) => answer.body.runner_id)).size).to.equal(1);
    expect(new Set(answers.map((answer) => answer.body.token)).size).to.equal(1);
    expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === null)).to.have.length(1);
    expect(await countRows('runners')).to.equal(before + 1);
  });

  it('stores neither the key nor the answer readably: the runner token is encrypted', async () => {
    const key = newKey();
    const created = await post('/v1/runners', { name: 'stored' }, key);
    const rows = await db()('idempotency_keys').where({ org_id: org.orgId, operation: 'createRunner' }).whereNotNull('response');
    expect(rows.length).to.be.greaterThan(0);
    for (const stored of rows) {
      expect(stored.key_hash).to.match(/^[0-9a-f]{64}$/);
      expect(stored.response.toString('latin1')).to.not.contain('dhr_');
    }
    const row = rows[rows.length - 1]!;
    expect(JSON.stringify(rows)).to.not.contain(created.body.token);
    const expiresInHours = (new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()) / 3_600_000;
    expect(expiresInHours).to.equal(24);
  });

  it('lets an expired key be used again, and the sweep deletes expired keys', async () => {
    const key = newKey();
    const first = await post('/v1/test_sets', { name: 'expiring' }, key);
    await db()('idempotency_keys').where({ org_id: org.orgId, operation: 'createTestSet' }).update({ expires_at: db().raw("now() - interval '1 second'") });
    const second = await post('/v1/test_sets', { name: 'expiring' }, key);
    expect(second.status).to.equal(200);
    expect(second.headers.get('idempotent-replayed')).to.equal(null);
    expect(second.body.test_set_id).to.not.equal(first.body.test_set_id);
    await db()('idempotency_keys').where({ org_id: org.orgId }).update({ expires_at: db().raw("now() - interval '1 second'") });
    expect(await service.running.container.idempotency.deleteExpired()).to.be.greaterThan(0);
    expect(await countRows('idempotency_keys')).to.equal(0);
  });

  it('takes over a key whose first request died holding it, once its lease has passed', async () => {
    const key = newKey();
    const first = await post('/v1/test_sets', { name: 'lease' }, key);
    await db()('idempotency_keys').where({ org_id: org.orgId, operation: 'createTestSet' }).update({ response: null, locked_until: db().raw("now() - interval '1 second'") });
    const retried = await post('/v1/test_sets', { name: 'lease' }, key);
    expect(retried.status).to.equal(200);
    expect(retried.body.test_set_id).to.not.equal(first.body.test_set_id);
  });

  it('gives a retried publish the version it published, not 409 no_draft', async () => {
    const agentId = `publish-${keyCount}`;
    expect((await post('/v1/agents', { agent_id: agentId }, undefined)).status).to.equal(200);
    expect((await service.api(org.key, 'PATCH', `/v1/agents/${agentId}/draft`, { instructions: 'Be brief.' })).status).to.equal(200);
    const key = newKey();
    const published = await post(`/v1/agents/${agentId}/draft/publish`, undefined, key);
    expect(published.status, JSON.stringify(published.body)).to.equal(200);
    const retried = await post(`/v1/agents/${agentId}/draft/publish`, undefined, key);
    expect(retried.status, JSON.stringify(retried.body)).to.equal(200);
    expect(retried.headers.get('idempotent-replayed')).to.equal('true');
    expect(retried.body).to.deep.equal(published.body);
    // Without the key, there is nothing left to publish.
    expect((await post(`/v1/agents/${agentId}/draft/publish`, undefined, undefined)).body.error.code).to.equal('no_draft');
  });

  it('shows the Idempotency-Key header, and its 409, on every create in /openapi.json and on no other operation', async () => {
    const document = (await service.api(null, 'GET', '/openapi.json')).body;
    expect(document.components.parameters.IdempotencyKey).to.include({ name: 'Idempotency-Key', in: 'header', required: false });
    const withHeader: string[] = [];
    for (const operations of Object.values(document.paths) as Array<Record<string, { operationId: string; parameters: Array<{ $ref?: string }>; responses: Record<string, unknown> }>>) {
      for (const operation of Object.values(operations)) {
        if (!operation.parameters.some((parameter) => parameter.$ref === '#/components/parameters/IdempotencyKey')) continue;
        withHeader.push(operation.operationId);
        expect(operation.responses, operation.operationId).to.have.property('409');
        if (operation.operationId !== 'startTask') expect((operation.responses['200'] as { headers?: object }).headers, operation.operationId).to.have.property('Idempotent-Replayed');
      }
    }
    expect(withHeader.sort()).to.deep.equal(
      ['batchTestCases', 'createAgent', 'createRunner', 'createSession', 'createStartState', 'createTestRun', 'createTestSet', 'inviteMember', 'publishAgentDraft', 'startTask'].sort(),
    );
  });
});
