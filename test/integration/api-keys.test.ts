import { expect } from 'chai';
import { generateApiKey, generateSessionToken } from '../../shared/api-keys/key-format';
import { createContainer } from '../../shared/container';
import { testConfig } from '../support/environment';
import { startTestService, waitFor, type TestService } from '../support/service';

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
