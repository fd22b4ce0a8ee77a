import { expect } from 'chai';
import { ManualClock } from '../../shared/clock';
import { createContainer } from '../../shared/container';
import { SESSION_IDLE_EXPIRY_MS } from '../../shared/sessions/sessions.service';
import { testConfig } from '../support/environment';

const DEVICE = { os: 'mac' as const, name: 'runner machine', width: 100, height: 100, app_version: '1.0.20' };
const CAPABILITIES = { accessibility: true, page_addresses: true, element_info: true };

describe('machine sessions: expiry, and their agent', () => {
  it('never expire by the 72-hour rule, unused or gone; a person\'s session beside them does', async function () {
    // Thirty days on, every person's session the suite made so far expires too (hundreds, late in a run).
    this.timeout(120_000);
    const clock = new ManualClock(new Date('2026-11-01T00:00:00Z'));
    const container = createContainer(testConfig(), { clock });
    try {
      const { org } = await container.orgs.create('Machines org');
      const auth = { orgId: org.org_id, keyId: 'key_test', userId: null, role: 'admin' as const, actor: { type: 'api_key' as const, key_id: 'key_test', name: 't', prefix: 'dh_test_x' } };
      const unused = await container.sessions.createMachineSession(container.db, { orgId: org.org_id, label: 'never paired' });
      const gone = await container.sessions.createMachineSession(container.db, { orgId: org.org_id, label: 'paired, then gone' });
      const person = await container.sessions.create(auth, {}, 'req');
      const { epoch } = await container.sessions.connect({ code: gone.code, device: DEVICE, capabilities: CAPABILITIES });
      await container.sessions.markOffline({ code: gone.code, epoch, kind: 'machine' });
      const offline = await container.db('sessions').where({ code: gone.code }).first();
      expect(offline).to.include({ status: 'disconnected', expires_at: null });

      clock.advance(SESSION_IDLE_EXPIRY_MS * 10);
      // Other tests' sessions in this database may expire too: only these three are looked at.
      await container.sessions.expireDue();
      expect((await container.sessions.get(org.org_id, person.session.code)).status).to.equal('expired');
      for (const code of [unused.code, gone.code]) expect((await container.db('sessions').where({ code }).first()).status).to.not.equal('expired');
      // Both still pair, however late.
      const again = await container.sessions.connect({ code: gone.code, device: DEVICE, capabilities: CAPABILITIES });
      expect(again.session.status).to.equal('connected');
      // Nobody sits at a machine: its hello is answered with the service's name and no greeting.
      expect(again.agent).to.include({ displayName: 'Deskhand', greeting: '' });
      await container.sessions.connect({ code: unused.code, device: DEVICE, capabilities: CAPABILITIES });
      // A machine's session changes are not the org's webhooks' business: no org events for them.
      expect(await container.db('org_events').whereIn('session_id', [unused.code, gone.code])).to.deep.equal([]);
      // Nor its audit log's (a person's session's creation and expiry are there).
      expect(await container.db('audit_log').whereIn('object_id', [unused.code, gone.code])).to.deep.equal([]);
      expect(await container.db('audit_log').where({ object_id: person.session.code }).pluck('action')).to.have.members(['session.created', 'session.expired']);
    } finally {
      await container.close();
    }
  });

  it('take the org\'s default agent, read by their insert, and write nothing to the org\'s audit log; an org with no default agent gets a 404, with nothing recorded', async () => {
    const container = createContainer(testConfig());
    try {
      const { org } = await container.orgs.create('Default agent org');
      const defaultAgent = await container.db('agents').where({ org_id: org.org_id, is_default: true }).first();
      const { session, code } = await container.sessions.createMachineSession(container.db, { orgId: org.org_id, label: 'a machine' });
      expect(session).to.include({ agent_id: defaultAgent.agent_id, kind: 'machine', label: 'a machine', status: 'waiting' });
      // The audit log records what people and keys change: the try that made the machine records its session.
      expect(await container.db('audit_log').where({ org_id: org.org_id, object_type: 'session', object_id: code })).to.deep.equal([]);

      await container.db('agents').where({ org_id: org.org_id }).update({ is_default: false });
      const before = await container.db('sessions').where({ org_id: org.org_id }).count<{ count: string }[]>('* as count');
      const refused = await container.sessions.createMachineSession(container.db, { orgId: org.org_id }).then(() => null, (error: unknown) => error);
      expect(refused).to.include({ type: 'not_found', message: 'The org has no default agent' });
      expect(await container.db('sessions').where({ org_id: org.org_id }).count<{ count: string }[]>('* as count')).to.deep.equal(before);
    } finally {
      await container.close();
    }
  });
});
