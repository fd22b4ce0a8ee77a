import { expect } from 'chai';
import { recordAudit } from '../../shared/audit/audit.repository';
import { keyedReader, listReader } from '../../shared/db/batched-reads';
import { createKnex } from '../../shared/db/knex';
import { listSessions, readSessionObject } from '../../shared/sessions/sessions.repository';
import { toSession } from '../../shared/sessions/sessions.service';
import { startTestService, type TestService } from '../support/service';

/**
 * Reads made in the same turn of the event loop share one statement (shared/db/batched-reads.ts):
 * each must still get exactly its own org's rows, in its own order, and nothing of another read.
 */
describe('reads batched in one statement per turn', () => {
  let service: TestService;
  const orgs: Array<{ orgId: string; key: string }> = [];

  before(async () => {
    service = await startTestService({}, ['web']);
    for (let i = 0; i < 3; i++) orgs.push(await service.newOrg(`Batch ${i}`));
    for (const [n, org] of orgs.entries()) {
      for (let i = 0; i < 5 + n; i++) {
        await recordAudit(service.running.container.db, { orgId: org.orgId, actor: null, action: 'test.made', objectType: 'thing', objectId: `org${n}_thing_${i}` });
      }
      await service.api(org.key, 'POST', '/v1/agents', { agent_id: `agent-${n}` });
    }
  });
  after(async () => service.stop());

  it('answers concurrent single-object reads of several orgs each with its own row, and 404 across orgs', async () => {
    const reads = await Promise.all(
      orgs.flatMap((org, n) => [
        service.api(org.key, 'GET', `/v1/agents/agent-${n}`),
        service.api(org.key, 'GET', `/v1/agents/agent-${(n + 1) % orgs.length}`),
        service.api(org.key, 'GET', '/v1/agents/default'),
      ]),
    );
    for (const [n] of orgs.entries()) {
      const [own, other, fallback] = reads.slice(n * 3, n * 3 + 3);
      expect(own!.status).to.equal(200);
      expect(own!.body.agent_id).to.equal(`agent-${n}`);
      expect(other!.status).to.equal(404);
      expect(fallback!.body.agent_id).to.equal('default');
    }
  });

  it('gives each concurrent page read its own org, filter, order and limit', async () => {
    const pages = await Promise.all(
      orgs.flatMap((org) => [
        service.api(org.key, 'GET', '/v1/audit_log?object_type=thing'),
        service.api(org.key, 'GET', '/v1/audit_log?object_type=thing&limit=2'),
      ]),
    );
    for (const [n] of orgs.entries()) {
      const all = pages[n * 2]!.body;
      const two = pages[n * 2 + 1]!.body;
      const expected = Array.from({ length: 5 + n }, (_, i) => `org${n}_thing_${4 + n - i}`);
      expect(all.data.map((entry: { object_id: string }) => entry.object_id)).to.deep.equal(expected);
      expect(all.has_more).to.equal(false);
      expect(two.data.map((entry: { object_id: string }) => entry.object_id)).to.deep.equal(expected.slice(0, 2));
      expect(two.has_more).to.equal(true);
    }
  });

  it('maps a batch of keyed and listed reads back to their callers, missing rows as undefined or empty', async () => {
    const db = service.running.container.db;
    const reader = keyedReader<{ agent_id: string; org_id: string }>(db, { name: 'test-agents-by-id', table: 'agents', columns: ['agent_id', 'org_id'], idColumn: 'agent_id' });
    const found = await Promise.all([reader.read(orgs[0]!.orgId, 'agent-0'), reader.read(orgs[1]!.orgId, 'agent-0'), reader.read(orgs[1]!.orgId, 'agent-1'), reader.read(orgs[0]!.orgId, 'agent-0')]);
    expect(found).to.deep.equal([{ agent_id: 'agent-0', org_id: orgs[0]!.orgId }, undefined, { agent_id: 'agent-1', org_id: orgs[1]!.orgId }, { agent_id: 'agent-0', org_id: orgs[0]!.orgId }]);

    const lists = listReader<{ object_id: string }>(
      db,
      'test-audit-by-org',
      [{ name: 'org_id', type: 'text' }, { name: 'lim', type: 'integer' }],
      "select object_id from audit_log where org_id = k.org_id and object_type = 'thing' order by seq limit k.lim",
    );
    const listed = await Promise.all([lists.read([orgs[2]!.orgId, 3]), lists.read(['org_none', 3]), lists.read([orgs[0]!.orgId, 10])]);
    expect(listed[0]!.map((row) => row.object_id)).to.deep.equal(['org2_thing_0', 'org2_thing_1', 'org2_thing_2']);
    expect(listed[1]).to.deep.equal([]);
    expect(listed[2]!.map((row) => row.object_id)).to.deep.equal(['org0_thing_0', 'org0_thing_1', 'org0_thing_2', 'org0_thing_3', 'org0_thing_4']);
  });

  it("reads the objects' timestamps as the API shows them, whatever the database session's time zone", async () => {
    const org = orgs[0]!;
    // Made through Knex, whose rows carry Dates: the reference text.
    const created = await service.api(org.key, 'POST', '/v1/sessions', {});
    expect(created.status).to.equal(200);
    const url = new URL(service.running.container.config.databaseUrl);
    url.searchParams.set('options', '-c TimeZone=Asia/Kolkata');
    const db = createKnex(url.toString(), { min: 0, max: 1 });
    try {
      expect((await db.raw('show timezone')).rows[0].TimeZone).to.equal('Asia/Kolkata');
      const timestamps = (session: Record<string, unknown>) => ({ created_at: session.created_at, paired_at: session.paired_at, last_active_at: session.last_active_at, expires_at: session.expires_at });
      const expected = timestamps(created.body);
      expect(expected.created_at).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      const one = await readSessionObject(db, org.orgId, created.body.code);
      expect(timestamps(toSession(one!) as unknown as Record<string, unknown>)).to.deep.equal(expected);
      const page = await listSessions(db, org.orgId, {}, { limit: 20, cursor: null }, toSession);
      const listed = page.data.find((session) => session.code === created.body.code);
      expect(timestamps(listed as unknown as Record<string, unknown>)).to.deep.equal(expected);
    } finally {
      await db.destroy();
    }
  });
});
