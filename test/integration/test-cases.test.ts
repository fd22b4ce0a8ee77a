import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { RawRunner } from '../support/raw-runner';

/** Test cases through the API (docs/evals.md "Test cases and test sets"), on a real service with a runner that reports images. */
describe('test cases (POST /v1/test_cases/batch, GET|PATCH|DELETE /v1/test_cases)', function () {
  this.timeout(30_000);
  let service: TestService;
  let org: { orgId: string; key: string };
  let other: { orgId: string; key: string };
  let runner: RawRunner;
  /** Image names of this run only, so that other tests' runners do not make them visible. */
  const image = `tc-image-${randomBytes(4).toString('hex')}`;
  let stateId: string;

  before(async () => {
    service = await startTestService({}, ['web']);
    org = await service.newOrg('Test cases org');
    other = await service.newOrg('Other org');
    const created = (await service.api(org.key, 'POST', '/v1/runners', { name: 'images' })).body as { token: string };
    runner = new RawRunner(service.baseUrl);
    expect((await runner.hello(created.token, { images: [image] })).ok).to.equal(true);
    const state = await service.api(org.key, 'POST', '/v1/start_states', { name: 'prepared', from: image, method: 'hand' });
    expect(state.status, JSON.stringify(state.body)).to.equal(200);
    stateId = state.body.start_state_id;
  });
  after(async () => {
    runner.close();
    await service.stop();
  });

  const api = (method: string, path: string, body?: unknown, key = org.key) => service.api(key, method, path, body);
  const uniq = () => randomBytes(4).toString('hex');
  const aCase = (extra: Record<string, unknown> = {}) => ({ name: 'Rename a file', prompt: 'Rename report.txt to final.txt', start_state: image, success: { check_script: 'test -f ~/Documents/final.txt' }, ...extra });
  const batch = async (cases: unknown[], extra: Record<string, unknown> = {}, key = org.key) => api('POST', '/v1/test_cases/batch', { cases, ...extra }, key);
  const ok = async (cases: unknown[], extra: Record<string, unknown> = {}) => {
    const response = await batch(cases, extra);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    return response.body as { data: Array<Record<string, any>>; created: number; updated: number };
  };
  const refusal = async (cases: unknown[], extra: Record<string, unknown> = {}) => {
    const response = await batch(cases, extra);
    expect(response.status, JSON.stringify(response.body)).to.equal(400);
    expect(response.body.error.type).to.equal('invalid_request');
    return response.body.error.message as string;
  };
  const audit = async (id: string) => ((await api('GET', `/v1/audit_log?object_type=test_case&object_id=${id}`)).body.data as Array<{ action: string; data: Record<string, unknown> }>).map((entry) => entry.action);
  const liveWithKeys = (keys: string[]) => service.running.container.db('test_cases').where({ org_id: org.orgId }).whereIn('key', keys).whereNull('deleted_at').count<{ count: string }[]>('* as count').then((rows) => Number(rows[0]!.count));

  describe('POST /v1/test_cases/batch', () => {
    it('creates cases with the defaults, in the order sent, and audits each', async () => {
      const key = `k-${uniq()}`;
      const body = await ok([aCase({ key }), aCase({ name: 'From a state', start_state: stateId, success: { rubric: 'The file is renamed' }, customer: { persona: 'Busy', facts: { pin: { secret: '1234' }, city: 'Oslo' }, does_steps: true } })]);
      expect(body).to.include({ created: 2, updated: 0 });
      const [first, second] = body.data;
      expect(first!.test_case_id).to.match(/^tc_[a-z0-9]+$/);
      expect(first).to.deep.include({
        object: 'test_case',
        key,
        name: 'Rename a file',
        start_state: image,
        setup_script: null,
        customer: null,
        operator: { approvals: 'none' },
        limits: { minutes: 30, steps: 150 },
        runs_on: 'vm',
        category: null,
        tags: [],
        metadata: {},
      });
      expect(second).to.deep.include({ key: null, name: 'From a state', start_state: stateId, success: { rubric: 'The file is renamed' } });
      expect(second!.customer).to.deep.equal({ persona: 'Busy', facts: { pin: { secret: '1234' }, city: 'Oslo' }, does_steps: true });
      expect((await api('GET', `/v1/test_cases/${first!.test_case_id}`)).body).to.deep.equal(first);
      expect(await audit(first!.test_case_id)).to.deep.equal(['test_case.created']);
    });

    it('upserts by key: a known key updates only the fields sent (limits merge), an unknown key or none creates', async () => {
      const key = `k-${uniq()}`;
      const [original] = (await ok([aCase({ key, category: 'files', tags: ['a'], limits: { minutes: 10, steps: 20 }, metadata: { team: 'x' } })])).data;
      const body = await ok([{ key, prompt: 'A new prompt', limits: { minutes: 60 } }, aCase({ key: `k-${uniq()}` }), aCase()]);
      expect(body).to.include({ created: 2, updated: 1 });
      const updated = body.data[0]!;
      expect(updated.test_case_id).to.equal(original!.test_case_id);
      expect(updated).to.deep.include({ prompt: 'A new prompt', name: 'Rename a file', category: 'files', tags: ['a'], limits: { minutes: 60, steps: 20 }, metadata: { team: 'x' } });
      expect(updated.created_at).to.equal(original!.created_at);
      expect(await audit(updated.test_case_id)).to.deep.equal(['test_case.updated', 'test_case.created']);
      expect(await liveWithKeys([key])).to.equal(1);
    });

    it('names the case and the field of every refusal', async () => {
      expect(await refusal([aCase(), { key: `k-${uniq()}`, name: 'No prompt', start_state: image, success: { rubric: 'r' } }])).to.match(/^cases\[1\]\.prompt is required to create a case/);
      expect(await refusal([aCase(), aCase(), aCase({ success: undefined })])).to.match(/^cases\[2\]\.success is required/);
      expect(await refusal([aCase(), aCase(), aCase(), aCase({ start_state: 'ss_nope' })])).to.equal('cases[3].start_state: no start state ss_nope');
      expect(await refusal([aCase({ start_state: 'no-such-image' })])).to.match(/^cases\[0\]\.start_state: no start state no-such-image/);
      expect(await refusal([aCase(), aCase({ operator: { approvals: 'maybe' } })])).to.match(/^cases\[1\]\.operator\.approvals /);
    });

    it('refuses out-of-range limits, other runs_on, too many tags, bad metadata and success without a way to score', async () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ limits: { minutes: 241 } }, /^cases\[0\]\.limits\.minutes must be at most 240$/],
        [{ limits: { steps: 0 } }, /^cases\[0\]\.limits\.steps must be at least 1$/],
        [{ runs_on: 'docker' }, /^cases\[0\]\.runs_on must be "vm"$/],
        [{ tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, /^cases\[0\]\.tags must have at most 50 items$/],
        [{ tags: ['x'.repeat(101)] }, /^cases\[0\]\.tags\[0\] must be at most 100 characters$/],
        [{ metadata: { n: 1 } }, /^cases\[0\]\.metadata\.n must be of type string$/],
        [{ success: {} }, /^cases\[0\]\.success /],
        [{ customer: { facts: { pin: 1234 } } }, /^cases\[0\]\.customer\.facts\.pin/],
        [{ operator: { approvals: 'maybe' } }, /^cases\[0\]\.operator\.approvals/],
        [{ colour: 'red' }, /^cases\[0\] has an unknown field "colour"$/],
      ];
      for (const [extra, pattern] of cases) expect(await refusal([aCase(extra)])).to.match(pattern);
      const key = `k-${uniq()}`;
      expect(await refusal([aCase({ key }), aCase({ key })])).to.match(/^cases\[1\]\.key: the same key as cases\[0\]/);
      expect(await refusal(Array.from({ length: 501 }, () => aCase()))).to.equal('cases must have at most 500 items');
      expect(await refusal([])).to.equal('cases must have at least 1 items');
    });

    it('is all or nothing: one bad case and none of the batch is created or changed', async () => {
      const key = `k-${uniq()}`;
      await ok([aCase({ key })]);
      const fresh = `k-${uniq()}`;
      expect(await refusal([{ key, name: 'Changed' }, aCase({ key: fresh }), aCase({ start_state: 'ss_missing' })])).to.equal('cases[2].start_state: no start state ss_missing');
      expect(await liveWithKeys([fresh])).to.equal(0);
      const [kept] = (await ok([{ key }])).data;
      expect(kept!.name).to.equal('Rename a file');
    });

    it('answers 413 in the error shape for a body over 8 MB', async () => {
      const response = await batch([aCase({ setup_script: 'x'.repeat(90_000) })].concat(Array.from({ length: 100 }, () => aCase({ setup_script: 'x'.repeat(90_000) }))));
      expect(response.status).to.equal(413);
      expect(response.body.error).to.include({ type: 'invalid_request' });
      // Under 8 MB, a body larger than other routes' 1 MB is read.
      expect((await batch(Array.from({ length: 20 }, () => aCase({ setup_script: 'x'.repeat(90_000) })))).status).to.equal(200);
    });

    it('settles concurrent batches with the same new keys: no duplicates, every batch answers 200', async () => {
      const keys = Array.from({ length: 20 }, (_, i) => `race-${uniq()}-${i}`);
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, n) => batch((n % 2 ? [...keys].reverse() : keys).map((key) => aCase({ key, prompt: `from batch ${n}` })))),
      );
      for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(answers.reduce((sum, answer) => sum + answer.body.created, 0)).to.equal(20);
      expect(answers.reduce((sum, answer) => sum + answer.body.updated, 0)).to.equal(100);
      expect(await liveWithKeys(keys)).to.equal(20);
    });

    it('appends the batch\'s cases not already in the set named by test_set_id, and refuses an unknown set', async () => {
      const [existing] = (await ok([aCase({ key: `k-${uniq()}` })])).data;
      const set = (await api('POST', '/v1/test_sets', { name: 'set', cases: [{ test_case_id: existing!.test_case_id }] })).body;
      const body = await ok([{ key: existing!.key }, aCase(), aCase()], { test_set_id: set.test_set_id });
      const after = (await api('GET', `/v1/test_sets/${set.test_set_id}`)).body;
      expect(after.cases.map((c: { test_case_id: string }) => c.test_case_id)).to.deep.equal(body.data.map((c) => c.test_case_id));
      expect(after.case_count).to.equal(3);
      expect(await refusal([aCase()], { test_set_id: 'ts_missing' })).to.equal('test_set_id: no test set ts_missing');
      const theirs = (await api('POST', '/v1/test_sets', { name: 'theirs' }, other.key)).body;
      expect(await refusal([aCase()], { test_set_id: theirs.test_set_id })).to.equal(`test_set_id: no test set ${theirs.test_set_id}`);
    });
  });

  describe('GET /v1/test_cases', () => {
    it('filters by category, tag and test_set_id, and pages newest first', async () => {
      const category = `cat-${uniq()}`;
      const tag = `tag-${uniq()}`;
      const made = (await ok(Array.from({ length: 5 }, (_, i) => aCase({ name: `case ${i}`, category, tags: i % 2 ? [tag, 'other'] : ['other'] })))).data.map((c) => c.test_case_id);
      const ids = async (query: string) => ((await api('GET', `/v1/test_cases?${query}`)).body.data as Array<{ test_case_id: string }>).map((c) => c.test_case_id);
      expect(await ids(`category=${category}`)).to.deep.equal([...made].reverse());
      expect(await ids(`category=${category}&tag=${tag}`)).to.deep.equal([made[3], made[1]]);
      const set = (await api('POST', '/v1/test_sets', { name: 'filter', cases: [{ test_case_id: made[4] }, { test_case_id: made[0] }] })).body;
      expect(await ids(`test_set_id=${set.test_set_id}`)).to.deep.equal([made[4], made[0]]);

      const pages: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { data: Array<{ test_case_id: string }>; has_more: boolean; next_cursor: string | null } = (await api('GET', `/v1/test_cases?category=${category}&limit=2${cursor ? `&cursor=${cursor}` : ''}`)).body;
        expect(page.data.length).to.be.at.most(2);
        pages.push(...page.data.map((c) => c.test_case_id));
        cursor = page.next_cursor;
        expect(page.has_more).to.equal(cursor !== null);
      } while (cursor);
      expect(pages).to.deep.equal([...made].reverse());
      expect((await api('GET', '/v1/test_cases?limit=101')).status).to.equal(400);
    });
  });

  describe('GET, PATCH and DELETE /v1/test_cases/{id}', () => {
    it('hides another org\'s case: 404 to read, change or delete, absent from its list', async () => {
      const [mine] = (await ok([aCase()])).data;
      for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
        const response = await api(method, `/v1/test_cases/${mine!.test_case_id}`, body, other.key);
        expect(response.status).to.equal(404);
        expect(response.body.error).to.include({ type: 'not_found', message: `No test case ${mine!.test_case_id}` });
      }
      expect(JSON.stringify((await api('GET', '/v1/test_cases', undefined, other.key)).body)).to.not.contain(mine!.test_case_id);
      // Another org's start state is no start state of this org.
      const theirs = await batch([aCase({ start_state: stateId })], {}, other.key);
      expect(theirs.status).to.equal(400);
      expect(theirs.body.error.message).to.equal(`cases[0].start_state: no start state ${stateId}`);
    });

    it('PATCH changes only the fields sent, validates like the batch, and refuses a key another case has', async () => {
      const [one, two] = (await ok([aCase({ key: `k-${uniq()}`, tags: ['a'] }), aCase({ key: `k-${uniq()}` })])).data;
      const patched = await api('PATCH', `/v1/test_cases/${one!.test_case_id}`, { name: 'Renamed', operator: { approvals: 'approve' }, limits: { steps: 40 } });
      expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
      expect(patched.body).to.deep.include({ name: 'Renamed', prompt: one!.prompt, tags: ['a'], operator: { approvals: 'approve' }, limits: { minutes: 30, steps: 40 } });
      const badState = await api('PATCH', `/v1/test_cases/${one!.test_case_id}`, { start_state: 'ss_gone' });
      expect(badState.status).to.equal(400);
      expect(badState.body.error.message).to.equal('start_state: no start state ss_gone');
      expect((await api('PATCH', `/v1/test_cases/${one!.test_case_id}`, { limits: { minutes: 0 } })).body.error.message).to.equal('limits.minutes must be at least 1');
      const taken = await api('PATCH', `/v1/test_cases/${one!.test_case_id}`, { key: two!.key });
      expect(taken.status).to.equal(409);
      expect(taken.body.error).to.include({ type: 'conflict', code: 'key_taken' });
      expect(await audit(one!.test_case_id)).to.deep.equal(['test_case.updated', 'test_case.created']);
    });

    it('DELETE soft-deletes the case, takes it out of its sets, frees its key, and is audited', async () => {
      const key = `k-${uniq()}`;
      const [one, two] = (await ok([aCase({ key }), aCase()])).data;
      const set = (await api('POST', '/v1/test_sets', { name: 'holds it', cases: [{ test_case_id: one!.test_case_id, repeat: 3 }, { test_case_id: two!.test_case_id }] })).body;
      const deleted = await api('DELETE', `/v1/test_cases/${one!.test_case_id}`);
      expect(deleted.status).to.equal(200);
      expect(deleted.body.test_case_id).to.equal(one!.test_case_id);
      expect((await api('GET', `/v1/test_cases/${one!.test_case_id}`)).status).to.equal(404);
      expect((await api('DELETE', `/v1/test_cases/${one!.test_case_id}`)).status).to.equal(404);
      const after = (await api('GET', `/v1/test_sets/${set.test_set_id}`)).body;
      expect(after.cases).to.deep.equal([{ test_case_id: two!.test_case_id, repeat: null, key: null }]);
      expect(after.case_count).to.equal(1);
      const again = await ok([aCase({ key })]);
      expect(again).to.include({ created: 1, updated: 0 });
      expect(again.data[0]!.test_case_id).to.not.equal(one!.test_case_id);
      expect(await audit(one!.test_case_id)).to.deep.equal(['test_case.deleted', 'test_case.created']);
    });
  });

  describe('DELETE /v1/start_states/{id} while cases use it', () => {
    it('answers 409 in_use with the cases\' ids, and deletes once they are gone', async () => {
      const state = (await api('POST', '/v1/start_states', { name: 'used', from: image, method: 'hand' })).body;
      const cases = (await ok([aCase({ start_state: state.start_state_id }), aCase({ start_state: state.start_state_id })])).data.map((c) => c.test_case_id);
      const refused = await api('DELETE', `/v1/start_states/${state.start_state_id}`);
      expect(refused.status).to.equal(409);
      expect(refused.body.error).to.include({ type: 'conflict', code: 'in_use' });
      expect([...refused.body.error.test_case_ids].sort()).to.deep.equal([...cases].sort());
      expect((await api('GET', `/v1/start_states/${state.start_state_id}`)).status).to.equal(200);
      for (const id of cases) expect((await api('DELETE', `/v1/test_cases/${id}`)).status).to.equal(200);
      expect((await api('DELETE', `/v1/start_states/${state.start_state_id}`)).status).to.equal(200);
      expect(await refusal([aCase({ start_state: state.start_state_id })])).to.equal(`cases[0].start_state: no start state ${state.start_state_id}`);
    });

    it('never lets a batch naming a state slip past its delete: either the delete is refused or the batch is', async () => {
      for (let round = 0; round < 5; round++) {
        const state = (await api('POST', '/v1/start_states', { name: `race ${round}`, from: image, method: 'hand' })).body;
        const [created, deleted] = await Promise.all([batch([aCase({ start_state: state.start_state_id })]), api('DELETE', `/v1/start_states/${state.start_state_id}`)]);
        if (created.status === 200) {
          expect(deleted.status, 'a case uses the state: its delete must be refused').to.equal(409);
          expect(deleted.body.error.test_case_ids).to.deep.equal([created.body.data[0].test_case_id]);
        } else {
          expect(created.status).to.equal(400);
          expect(deleted.status).to.equal(200);
        }
        const live = await service.running.container.db('test_cases').where({ start_state: state.start_state_id }).whereNull('deleted_at').count<{ count: string }[]>('* as count');
        const stateLive = (await api('GET', `/v1/start_states/${state.start_state_id}`)).status === 200;
        expect(Number(live[0]!.count) === 0 || stateLive, 'no live case names a deleted state').to.equal(true);
      }
    });
  });
});
