import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { RawRunner } from '../support/raw-runner';

/** Test sets through the API (docs/evals.md "Test cases and test sets"). */
describe('test sets (POST, GET, PATCH, DELETE /v1/test_sets)', function () {
  this.timeout(30_000);
  let service: TestService;
  let org: { orgId: string; key: string };
  let other: { orgId: string; key: string };
  const runners: RawRunner[] = [];
  const image = `ts-image-${randomBytes(4).toString('hex')}`;
  let cases: Array<{ test_case_id: string; key: string }>;

  before(async () => {
    service = await startTestService({}, ['web']);
    org = await service.newOrg('Test sets org');
    other = await service.newOrg('Other org');
    for (const owner of [org, other]) {
      const created = (await service.api(owner.key, 'POST', '/v1/runners', { name: 'images' })).body as { token: string };
      const runner = new RawRunner(service.baseUrl);
      runners.push(runner);
      expect((await runner.hello(created.token, { images: [image] })).ok).to.equal(true);
    }
    const batch = await service.api(org.key, 'POST', '/v1/test_cases/batch', {
      cases: ['a', 'b', 'c'].map((key) => ({ key: `${key}-${randomBytes(3).toString('hex')}`, name: key, prompt: `do ${key}`, start_state: image, success: { rubric: 'done' } })),
    });
    expect(batch.status, JSON.stringify(batch.body)).to.equal(200);
    cases = batch.body.data;
  });
  after(async () => {
    for (const runner of runners) runner.close();
    await service.stop();
  });

  const api = (method: string, path: string, body?: unknown, key = org.key) => service.api(key, method, path, body);
  const create = async (body: Record<string, unknown>) => {
    const response = await api('POST', '/v1/test_sets', body);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    return response.body;
  };
  const refusal = async (method: string, path: string, body: unknown) => {
    const response = await api(method, path, body);
    expect(response.status, JSON.stringify(response.body)).to.equal(400);
    return response.body.error.message as string;
  };
  const audit = async (id: string) => ((await api('GET', `/v1/audit_log?object_type=test_set&object_id=${id}`)).body.data as Array<{ action: string }>).map((entry) => entry.action);

  it('makes a set with its cases in order, each with its repeat (null: the set\'s) and key, and audits it', async () => {
    const set = await create({
      name: '  Files  ',
      description: 'File tasks',
      repeat: 3,
      customer: { persona: 'Patient', clicks_admin_prompts: true },
      cases: [{ test_case_id: cases[2]!.test_case_id, repeat: 5 }, { test_case_id: cases[0]!.test_case_id }],
      metadata: { team: 'evals' },
    });
    expect(set.test_set_id).to.match(/^ts_[a-z0-9]+$/);
    expect(set).to.deep.include({
      object: 'test_set',
      name: 'Files',
      description: 'File tasks',
      repeat: 3,
      customer: { persona: 'Patient', clicks_admin_prompts: true },
      cases: [
        { test_case_id: cases[2]!.test_case_id, repeat: 5, key: cases[2]!.key },
        { test_case_id: cases[0]!.test_case_id, repeat: null, key: cases[0]!.key },
      ],
      case_count: 2,
      metadata: { team: 'evals' },
    });
    expect((await api('GET', `/v1/test_sets/${set.test_set_id}`)).body).to.deep.equal(set);
    expect(await create({ name: 'Empty' })).to.deep.include({ repeat: 1, description: '', customer: null, cases: [], case_count: 0, metadata: {} });
    expect(await audit(set.test_set_id)).to.deep.equal(['test_set.created']);
  });

  it('refuses a bad name or repeat, and a case that is not a live case of the org or comes twice, naming cases[i].test_case_id', async () => {
    expect(await refusal('POST', '/v1/test_sets', { name: '' })).to.equal('name must not be empty');
    expect(await refusal('POST', '/v1/test_sets', { name: '   ' })).to.equal('name must be text, not only spaces');
    expect(await refusal('POST', '/v1/test_sets', { name: 'x'.repeat(201) })).to.equal('name must be at most 200 characters');
    expect((await api('POST', '/v1/test_sets', { name: 'x'.repeat(200) })).status).to.equal(200);
    expect(await refusal('POST', '/v1/test_sets', { name: 's', repeat: 21 })).to.equal('repeat must be at most 20');
    expect(await refusal('POST', '/v1/test_sets', { name: 's', repeat: 0 })).to.equal('repeat must be at least 1');
    expect(await refusal('POST', '/v1/test_sets', { name: 's', cases: [{ test_case_id: cases[0]!.test_case_id, repeat: 21 }] })).to.equal('cases[0].repeat must be at most 20');
    expect(await refusal('POST', '/v1/test_sets', { name: 's', cases: [{ test_case_id: cases[0]!.test_case_id }, { test_case_id: 'tc_nope' }] })).to.equal('cases[1].test_case_id: no test case tc_nope');
    expect(await refusal('POST', '/v1/test_sets', { name: 's', cases: [{ test_case_id: cases[0]!.test_case_id }, { test_case_id: cases[0]!.test_case_id }] })).to.match(/^cases\[1\]\.test_case_id: .* is already at cases\[0\]/);
    const theirs = await service.api(other.key, 'POST', '/v1/test_cases/batch', { cases: [{ name: 'x', prompt: 'x', start_state: image, success: { rubric: 'r' } }] });
    expect(theirs.status, JSON.stringify(theirs.body)).to.equal(200);
    const id = theirs.body.data[0].test_case_id;
    expect(await refusal('POST', '/v1/test_sets', { name: 's', cases: [{ test_case_id: id }] })).to.equal(`cases[0].test_case_id: no test case ${id}`);
    const deleted = (await api('POST', '/v1/test_cases/batch', { cases: [{ name: 'd', prompt: 'd', start_state: image, success: { rubric: 'r' } }] })).body.data[0].test_case_id;
    expect((await api('DELETE', `/v1/test_cases/${deleted}`)).status).to.equal(200);
    expect(await refusal('POST', '/v1/test_sets', { name: 's', cases: [{ test_case_id: deleted }] })).to.equal(`cases[0].test_case_id: no test case ${deleted}`);
  });

  it('PATCH changes only the fields sent; cases replaces the list', async () => {
    const set = await create({ name: 'Before', repeat: 2, cases: [{ test_case_id: cases[0]!.test_case_id }, { test_case_id: cases[1]!.test_case_id }] });
    const renamed = await api('PATCH', `/v1/test_sets/${set.test_set_id}`, { name: 'After' });
    expect(renamed.status).to.equal(200);
    expect(renamed.body).to.deep.include({ name: 'After', repeat: 2, case_count: 2 });
    const replaced = await api('PATCH', `/v1/test_sets/${set.test_set_id}`, { cases: [{ test_case_id: cases[2]!.test_case_id, repeat: 4 }] });
    expect(replaced.body.cases).to.deep.equal([{ test_case_id: cases[2]!.test_case_id, repeat: 4, key: cases[2]!.key }]);
    expect(await refusal('PATCH', `/v1/test_sets/${set.test_set_id}`, { cases: [{ test_case_id: 'tc_gone' }] })).to.equal('cases[0].test_case_id: no test case tc_gone');
    expect((await api('GET', `/v1/test_sets/${set.test_set_id}`)).body.cases).to.deep.equal(replaced.body.cases);
    expect(await audit(set.test_set_id)).to.deep.equal(['test_set.updated', 'test_set.updated', 'test_set.created']);
  });

  it('lists the org\'s sets newest first in pages; another org\'s set is 404 and absent', async () => {
    const made = [await create({ name: 'p1' }), await create({ name: 'p2' }), await create({ name: 'p3' })].map((s) => s.test_set_id);
    const first = (await api('GET', '/v1/test_sets?limit=2')).body;
    expect(first.data.map((s: { test_set_id: string }) => s.test_set_id)).to.deep.equal([made[2], made[1]]);
    expect(first.has_more).to.equal(true);
    const second = (await api('GET', `/v1/test_sets?limit=2&cursor=${first.next_cursor}`)).body;
    expect(second.data[0].test_set_id).to.equal(made[0]);
    for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
      const response = await api(method, `/v1/test_sets/${made[0]}`, body, other.key);
      expect(response.status).to.equal(404);
      expect(response.body.error).to.include({ type: 'not_found', message: `No test set ${made[0]}` });
    }
    expect(JSON.stringify((await api('GET', '/v1/test_sets', undefined, other.key)).body)).to.not.contain(made[0]);
  });

  it('DELETE removes the set (then 404) and keeps its cases', async () => {
    const set = await create({ name: 'Gone soon', cases: [{ test_case_id: cases[1]!.test_case_id }] });
    const deleted = await api('DELETE', `/v1/test_sets/${set.test_set_id}`);
    expect(deleted.status).to.equal(200);
    expect(deleted.body).to.deep.include({ test_set_id: set.test_set_id, case_count: 1 });
    expect((await api('GET', `/v1/test_sets/${set.test_set_id}`)).status).to.equal(404);
    expect((await api('GET', `/v1/test_cases/${cases[1]!.test_case_id}`)).status).to.equal(200);
    expect((await api('GET', `/v1/test_cases?test_set_id=${set.test_set_id}`)).body.data).to.deep.equal([]);
    expect(await audit(set.test_set_id)).to.deep.equal(['test_set.deleted', 'test_set.created']);
  });
});
