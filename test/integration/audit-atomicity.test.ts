import { expect } from 'chai';
import type { Container } from '../../shared/container';
import { startTestService, type TestService } from '../support/service';

/**
 * Every change outside the task loop and sessions is written with its audit row in one
 * transaction: when the audit row cannot be written, the change is not made either. A trigger
 * installed for these tests (and dropped after them) makes every audit insert fail.
 */
describe('audit rows commit with the change they record', () => {
  let service: TestService;
  let container: Container;
  let orgId: string;
  const team = { actor: { type: 'api_key' as const, key_id: 'key_test', name: 'test', prefix: 'dh_test_' }, requestId: 'req_audit_test' };

  before(async () => {
    service = await startTestService({}, ['web']);
    container = service.running.container;
    ({ orgId } = await service.newOrg('Audited org'));
    await container.agents.create(orgId, { agent_id: 'audited', name: 'Audited' }, team);
    await container.agentFiles.write(orgId, 'audited', 'notes.txt', 'first', { kind: 'team', ...team });
    await container.db.raw(`
      create function test_refuse_audit_rows() returns trigger language plpgsql as $$
        begin raise exception 'audit row refused by the test'; end $$;
      create trigger test_refuse_audit_rows before insert on audit_log for each row execute function test_refuse_audit_rows();
    `);
  });

  after(async () => {
    await container.db.raw('drop trigger if exists test_refuse_audit_rows on audit_log; drop function if exists test_refuse_audit_rows()');
    await service.stop();
  });

  async function refused(change: Promise<unknown>): Promise<void> {
    const error = await change.then(
      () => null,
      (caught: Error) => caught,
    );
    expect(error?.message).to.match(/audit row refused by the test/);
  }

  it('creates no org (nor its key, agent or tool secret) when its audit row fails', async () => {
    await refused(container.orgs.create('Org without audit'));
    expect(await container.db('orgs').where({ name: 'Org without audit' }).first()).to.equal(undefined);
  });

  it('creates, publishes and drafts no agent change when its audit row fails', async () => {
    await refused(container.agents.create(orgId, { agent_id: 'unaudited' }, team));
    await refused(container.agents.patch(orgId, 'audited', { instructions: 'Changed.' }, team));
    await refused(container.agents.saveDraft(orgId, 'audited', { instructions: 'Drafted.' }, team));
    expect(await container.db('agents').where({ org_id: orgId, agent_id: 'unaudited' }).first()).to.equal(undefined);
    const agent = await container.agents.get(orgId, 'audited');
    expect(agent.version).to.equal(1);
    expect(agent.has_draft).to.equal(false);
  });

  it('writes and deletes no agent file when its audit row fails', async () => {
    await refused(container.agentFiles.write(orgId, 'audited', 'notes.txt', 'second', { kind: 'team', ...team }));
    await refused(container.agentFiles.delete(orgId, 'audited', 'notes.txt', { kind: 'team', ...team }));
    expect((await container.agentFiles.read(orgId, 'audited', 'notes.txt')).content).to.equal('first');
  });

  it('revokes no API key when its audit row fails', async () => {
    const { keyId } = await (async () => {
      await container.db.raw('alter table audit_log disable trigger test_refuse_audit_rows');
      try {
        return await service.newOrg('Org whose key stays');
      } finally {
        await container.db.raw('alter table audit_log enable trigger test_refuse_audit_rows');
      }
    })();
    await refused(container.apiKeys.revoke(keyId, null));
    expect((await container.db('api_keys').where({ id: keyId }).first()).revoked_at).to.equal(null);
  });

  it('rotates no tool secret and changes no webhook when its audit row fails', async () => {
    const before = await container.toolSecrets.get(orgId);
    await refused(container.toolSecrets.rotate(orgId, team));
    expect((await container.toolSecrets.get(orgId)).secret).to.equal(before.secret);

    await refused(container.webhooks.update(orgId, { events: ['task.completed'] }, team));
    expect((await container.webhooks.get(orgId)).events).to.deep.equal([]);
  });
});
