import { expect } from 'chai';
import { recordAudit } from '../../shared/audit/audit.repository';
import { startTestService, type TestService } from '../support/service';

describe('list pagination (GET /v1/audit_log)', () => {
  let service: TestService;
  let org: { orgId: string; key: string };
  const add = (n: number, from: number) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        recordAudit(service.running.container.db, { orgId: org.orgId, actor: null, action: 'test.made', objectType: 'thing', objectId: `thing_${from + i}` }),
      ),
    );

  before(async () => {
    service = await startTestService({}, ['web']);
    org = await service.newOrg();
    for (let i = 0; i < 45; i++) await add(1, i); // in order, so thing_44 is newest
  });
  after(async () => service.stop());

  it('returns 20 newest first by default, then older pages through next_cursor', async () => {
    const first = (await service.api(org.key, 'GET', '/v1/audit_log?object_type=thing')).body;
    expect(first.data).to.have.length(20);
    expect(first.data[0].object_id).to.equal('thing_44');
    expect(first.has_more).to.equal(true);
    const second = (await service.api(org.key, 'GET', `/v1/audit_log?object_type=thing&cursor=${first.next_cursor}`)).body;
    expect(second.data[0].object_id).to.equal('thing_24');
    const third = (await service.api(org.key, 'GET', `/v1/audit_log?object_type=thing&cursor=${second.next_cursor}`)).body;
    expect(third.data.map((e: { object_id: string }) => e.object_id)).to.deep.equal(['thing_4', 'thing_3', 'thing_2', 'thing_1', 'thing_0']);
    expect(third).to.include({ has_more: false, next_cursor: null });
  });

  it('neither repeats nor skips rows when others are inserted between pages', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let round = 0;
    do {
      const query: string = `/v1/audit_log?object_type=thing&limit=7${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await service.api(org.key, 'GET', query)).body;
      seen.push(...page.data.map((e: { object_id: string }) => e.object_id));
      cursor = page.next_cursor;
      await add(3, 1000 + round * 3); // newer rows arrive meanwhile
      round++;
    } while (cursor);
    expect(seen).to.have.length(45);
    expect(new Set(seen).size).to.equal(45);
    expect(seen[44]).to.equal('thing_0');
  });

  it('accepts limit 1 and 100, refuses 0 and 101', async () => {
    expect((await service.api(org.key, 'GET', '/v1/audit_log?limit=1')).body.data).to.have.length(1);
    expect((await service.api(org.key, 'GET', '/v1/audit_log?limit=100')).status).to.equal(200);
    expect((await service.api(org.key, 'GET', '/v1/audit_log?limit=0')).body.error.message).to.equal('query parameter limit must be at least 1');
    expect((await service.api(org.key, 'GET', '/v1/audit_log?limit=101')).status).to.equal(400);
  });

  it('refuses a cursor it did not make', async () => {
    const response = await service.api(org.key, 'GET', '/v1/audit_log?cursor=bm9wZQ');
    expect(response.status).to.equal(400);
    expect(response.body.error.message).to.equal('cursor is not a cursor this list returned');
  });

  it('never shows another org its rows', async () => {
    const other = await service.newOrg('Other');
    const page = (await service.api(other.key, 'GET', '/v1/audit_log?object_type=thing')).body;
    expect(page.data).to.deep.equal([]);
    const byId = (await service.api(other.key, 'GET', '/v1/audit_log?object_id=thing_1')).body;
    expect(byId.data).to.deep.equal([]);
  });
});
