import { expect } from 'chai';
import { generateApiKey, generateSessionToken } from '../../shared/api-keys/key-format';
import { createContainer } from '../../shared/container';
import { testConfig } from '../support/environment';
import { startTestService, waitFor, type TestService } from '../support/service';
import { consoleSession } from '../support/console';

describe('API keys and /v1 authentication', () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  it('accepts a new org key and records when it was used', async () => {
    const { key, keyId } = await service.newOrg();
    const response = await service.api(key, 'GET', '/v1/audit_log');
    expect(response.status).to.equal(200);
    const row = await waitFor(() => service.running.container.db('api_keys').where({ id: keyId }).whereNotNull('last_used_at').first());
    expect(row.last_used_at).to.be.instanceOf(Date);
  });

  it('stores only a hash and a display prefix, never the key', async () => {
    const { key, keyId } = await service.newOrg();
    const row = await service.running.container.db('api_keys').where({ id: keyId }).first();
    expect(JSON.stringify(row)).not.to.contain(key);
    expect(row.prefix).to.equal(key.slice(0, 12));
    expect(row.hash).to.match(/^[0-9a-f]{64}$/);
  });

  const cases: Array<[string, () => Record<string, string>, RegExp]> = [
    ['no Authorization header', () => ({}), /Missing API key/],
    ['a scheme other than Bearer', () => ({ authorization: 'Basic abc' }), /Bearer/],
    ['a malformed key', () => ({ authorization: 'Bearer dh_test_short' }), /Invalid API key/],
    ['a well-formed key nobody issued', () => ({ authorization: `Bearer ${generateApiKey('development')}` }), /Invalid API key/],
    ['a production key on a development service', () => ({ authorization: `Bearer ${generateApiKey('production')}` }), /Invalid API key/],
    ['a session token', () => ({ authorization: `Bearer ${generateSessionToken()}` }), /session-token API/],
  ];
  for (const [what, headers, message] of cases) {
    it(`answers 401 authentication to ${what}`, async () => {
      const response = await service.api(null, 'GET', '/v1/audit_log', undefined, headers());
      expect(response.status).to.equal(401);
      expect(response.body.error.type).to.equal('authentication');
      expect(response.body.error.message).to.match(message);
    });
  }

  it('answers 401 to unknown /v1 routes without a key before 404', async () => {
    const response = await service.api(null, 'GET', '/v1/nothing-here');
    expect(response.status).to.equal(401);
  });

  it('refuses a revoked key at once, also when another process revoked it', async () => {
    const { key, keyId } = await service.newOrg();
    expect((await service.api(key, 'GET', '/v1/audit_log')).status).to.equal(200); // now cached
    const other = createContainer(testConfig());
    try {
      const revoked = await other.apiKeys.revoke(keyId, null);
      expect(revoked.revoked_at).to.be.a('string');
    } finally {
      await other.close();
    }
    await waitFor(async () => (await service.api(key, 'GET', '/v1/audit_log')).status === 401, 3000, 'revocation to reach the web process');
    const response = await service.api(key, 'GET', '/v1/audit_log');
    expect(response.body.error).to.deep.equal({ type: 'authentication', message: 'This API key has been revoked' });
  });

  it('records key creation and revocation in the org audit log', async () => {
    const { orgId, key, keyId } = await service.newOrg();
    const second = await service.running.container.db.transaction((trx) => service.running.container.apiKeys.create(trx, orgId, 'ci', null));
    await service.running.container.apiKeys.revoke(second.apiKey.key_id, null);
    const { body } = await service.api(key, 'GET', '/v1/audit_log?object_type=api_key');
    expect(body.data.map((e: { action: string; object_id: string }) => `${e.action} ${e.object_id}`)).to.deep.equal([
      `api_key.revoked ${second.apiKey.key_id}`,
      `api_key.created ${second.apiKey.key_id}`,
      `api_key.created ${keyId}`,
    ]);
  });
});

describe('/v1/api_keys', () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  it('creates a key shown once, lists keys without secrets, revokes it (then 401), and audits both with the actor', async () => {
    const { orgId, key, keyId } = await service.newOrg('Keys org');
    const created = await service.api(key, 'POST', '/v1/api_keys', { name: '  CI pipeline  ' });
    expect(created.status).to.equal(200);
    expect(created.body).to.include({ object: 'api_key', org_id: orgId, name: 'CI pipeline', revoked_at: null, last_used_at: null });
    expect(created.body.key).to.match(/^dh_test_[0-9A-Za-z]{38}$/);
    expect(created.body.prefix).to.equal(created.body.key.slice(0, 12));
    const newKey = created.body.key as string;
    expect((await service.api(newKey, 'GET', '/v1/me')).status).to.equal(200);

    const list = await service.api(key, 'GET', '/v1/api_keys');
    expect(list.status).to.equal(200);
    expect(list.body.data.map((k: { key_id: string }) => k.key_id)).to.deep.equal([keyId, created.body.key_id]);
    expect(JSON.stringify(list.body)).to.not.contain(newKey);
    expect(list.body.data[1]).to.not.have.property('key');

    const revoked = await service.api(key, 'DELETE', `/v1/api_keys/${created.body.key_id}`);
    expect(revoked.status).to.equal(200);
    expect(revoked.body.revoked_at).to.be.a('string');
    const refused = await service.api(newKey, 'GET', '/v1/me');
    expect(refused.status).to.equal(401);
    expect(refused.body.error.message).to.equal('This API key has been revoked');

    const again = await service.api(key, 'DELETE', `/v1/api_keys/${created.body.key_id}`);
    expect(again.status).to.equal(200);
    expect(again.body.revoked_at).to.equal(revoked.body.revoked_at);

    const audit = await service.api(key, 'GET', `/v1/audit_log?object_id=${created.body.key_id}`);
    const actor = { type: 'api_key', key_id: keyId, name: 'Default key', prefix: key.slice(0, 12) };
    expect(audit.body.data.map((e: { action: string; actor: unknown; request_id: unknown }) => [e.action, e.actor, typeof e.request_id])).to.deep.equal([
      ['api_key.revoked', actor, 'string'],
      ['api_key.created', actor, 'string'],
    ]);
  });

  it('answers a retry with the same Idempotency-Key with the same key, made once', async () => {
    const { key } = await service.newOrg('Retrying org');
    const headers = { 'idempotency-key': 'make-ci-key-1' };
    const first = await service.api(key, 'POST', '/v1/api_keys', { name: 'CI' }, headers);
    const again = await service.api(key, 'POST', '/v1/api_keys', { name: 'CI' }, headers);
    expect(again.status).to.equal(200);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body).to.deep.equal(first.body);
    expect((await service.api(key, 'GET', '/v1/api_keys')).body.data).to.have.length(2);
  });

  it('answers 404 for another org\'s key, which keeps working', async () => {
    const mine = await service.newOrg('Mine');
    const theirs = await service.newOrg('Theirs');
    const response = await service.api(mine.key, 'DELETE', `/v1/api_keys/${theirs.keyId}`);
    expect(response.status).to.equal(404);
    expect(response.body.error.type).to.equal('not_found');
    expect((await service.api(mine.key, 'DELETE', '/v1/api_keys/key_nosuchkey')).status).to.equal(404);
    expect((await service.api(theirs.key, 'GET', '/v1/me')).status).to.equal(200);
    expect((await service.api(mine.key, 'GET', '/v1/api_keys')).body.data.map((k: { key_id: string }) => k.key_id)).to.deep.equal([mine.keyId]);
  });

  it('refuses a name that is missing, blank, too long or has unknown fields with 400', async () => {
    const { key } = await service.newOrg();
    for (const body of [{}, { name: '   ' }, { name: 'x'.repeat(81) }, { name: 'ok', scope: 'all' }]) {
      const response = await service.api(key, 'POST', '/v1/api_keys', body);
      expect(response.status, JSON.stringify(body)).to.equal(400);
      expect(response.body.error.type).to.equal('invalid_request');
    }
  });

  it('refuses a member with 403 permission for every call, and lets an admin sign-in through', async () => {
    const { orgId } = await service.newOrg('People org');
    const member = await consoleSession(service, orgId, 'member');
    const admin = await consoleSession(service, orgId, 'admin');
    const asMember = (method: string, path: string, body?: unknown) =>
      service.api(null, method, path, body, { cookie: member.cookie, 'x-csrf-token': member.csrfToken });
    for (const [method, path, body] of [['GET', '/v1/api_keys'], ['POST', '/v1/api_keys', { name: 'nope' }], ['DELETE', '/v1/api_keys/key_x']] as const) {
      const response = await asMember(method, path, body);
      expect(response.status, `${method} ${path}`).to.equal(403);
      expect(response.body.error.message).to.equal('This needs the admin role (your role is member); ask an admin or owner of the org');
    }
    const created = await service.api(null, 'POST', '/v1/api_keys', { name: 'made by a person' }, { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken });
    expect(created.status).to.equal(200);
    const audit = await service.api(created.body.key, 'GET', `/v1/audit_log?action=api_key.created&object_id=${created.body.key_id}`);
    expect(audit.body.data[0].actor).to.deep.equal({ type: 'user', email: admin.email });
  });
});
