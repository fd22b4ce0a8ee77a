import { expect } from 'chai';
import { startTestService, waitFor, type TestService } from '../support/service';
import { RawRunner, RUNNER_REPORT } from '../support/raw-runner';

/** A runner reads offline after 1 s of silence here (30 s by default), heartbeating every 200 ms. */
const OFFLINE_AFTER_MS = 1_000;

describe('runners (docs/runners.md)', function () {
  this.timeout(30_000);
  let service: TestService;
  let org: { orgId: string; key: string; keyId: string };
  let other: { orgId: string; key: string; keyId: string };
  const runners: RawRunner[] = [];

  before(async () => {
    service = await startTestService({ DESKHAND_RUNNER_HEARTBEAT_MS: '200', DESKHAND_RUNNER_OFFLINE_AFTER_MS: String(OFFLINE_AFTER_MS) }, ['web']);
    org = await service.newOrg('Runners org');
    other = await service.newOrg('Other org');
  });
  after(async () => {
    for (const runner of runners) runner.close();
    await service.stop();
  });

  const api = (method: string, path: string, body?: unknown, key = org.key) => service.api(key, method, path, body);
  const create = async (name = 'rack 1', key = org.key) => {
    const response = await api('POST', '/v1/runners', { name }, key);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    return response.body as { runner_id: string; token: string } & Record<string, unknown>;
  };
  const runner = () => {
    const made = new RawRunner(service.baseUrl);
    runners.push(made);
    return made;
  };
  const audit = async (runnerId: string, key = org.key) =>
    ((await api('GET', `/v1/audit_log?object_type=runner&object_id=${runnerId}`, undefined, key)).body.data as Array<{ action: string; actor: unknown; data: Record<string, unknown> }>).map(
      (entry) => entry.action,
    );
  const status = async (runnerId: string) => (await api('GET', `/v1/runners/${runnerId}`)).body.status as string;

  describe('POST, GET and DELETE /v1/runners', () => {
    it('registers a runner of the org, offline until it connects, with its token once, and audits it', async () => {
      const created = await create('  rack 1  ');
      expect(created).to.include({ object: 'runner', name: 'rack 1', scope: 'org', status: 'offline', slots: 0, busy: 0, provider: null, version: null, last_seen_at: null });
      expect(created.runner_id).to.match(/^rn_[a-z0-9]{20}$/);
      expect(created.token).to.match(/^dhr_[0-9A-Za-z]{38}$/);
      expect(await audit(created.runner_id)).to.deep.equal(['runner.created']);

      const one = await api('GET', `/v1/runners/${created.runner_id}`);
      expect(one.status).to.equal(200);
      expect(one.body).to.not.have.property('token');
      const { token, ...withoutToken } = created;
      expect(one.body).to.deep.equal(withoutToken);
      const list = await api('GET', '/v1/runners');
      expect(list.body).to.include({ has_more: false, next_cursor: null });
      expect(list.body.data.map((r: { runner_id: string }) => r.runner_id)).to.include(created.runner_id);
      expect(JSON.stringify(list.body)).to.not.contain(token);
      // Stored hashed: the token is in no column of its row.
      const row = await service.running.container.db('runners').where({ id: created.runner_id }).first();
      expect(JSON.stringify(row)).to.not.contain(token);
      expect(row.token_prefix).to.equal(token.slice(0, 12));
    });

    it('refuses a name that is blank, too long or missing, naming the field', async () => {
      expect((await api('POST', '/v1/runners', { name: '   ' })).body.error).to.include({ type: 'invalid_request', message: 'name must be text, not only spaces' });
      expect((await api('POST', '/v1/runners', { name: 'x'.repeat(81) })).body.error.message).to.equal('name must be at most 80 characters');
      expect((await api('POST', '/v1/runners', {})).body.error.message).to.equal('name is required');
      expect((await api('POST', '/v1/runners', { name: 'x'.repeat(80) })).status).to.equal(200);
    });

    it('hides another org’s runner: 404 to read or delete, absent from its list', async () => {
      const mine = await create('mine');
      expect((await api('GET', `/v1/runners/${mine.runner_id}`, undefined, other.key)).status).to.equal(404);
      const deleted = await api('DELETE', `/v1/runners/${mine.runner_id}`, undefined, other.key);
      expect(deleted.status).to.equal(404);
      expect(deleted.body.error).to.include({ type: 'not_found', message: `No runner ${mine.runner_id}` });
      const ids = (await api('GET', '/v1/runners', undefined, other.key)).body.data.map((r: { runner_id: string }) => r.runner_id);
      expect(ids).to.not.include(mine.runner_id);
      expect(await status(mine.runner_id)).to.equal('offline');
    });

    it('deletes a runner: answers it as it was, then 404, audited with the key that did it', async () => {
      const made = await create('to delete');
      const deleted = await api('DELETE', `/v1/runners/${made.runner_id}`);
      expect(deleted.status).to.equal(200);
      expect(deleted.body).to.include({ object: 'runner', runner_id: made.runner_id, name: 'to delete', status: 'offline' });
      expect(deleted.body).to.not.have.property('token');
      expect((await api('GET', `/v1/runners/${made.runner_id}`)).status).to.equal(404);
      expect((await api('DELETE', `/v1/runners/${made.runner_id}`)).status).to.equal(404);
      const entries = (await api('GET', `/v1/audit_log?object_type=runner&object_id=${made.runner_id}`)).body.data;
      expect(entries.map((entry: { action: string }) => entry.action)).to.deep.equal(['runner.deleted', 'runner.created']);
      expect(entries[0].actor).to.include({ type: 'api_key', key_id: org.keyId });
    });

    it('shows a cloud runner to every org, which none may delete (403 cloud_runner)', async () => {
      const { runner: cloud } = await service.running.container.runners.createCloud('cloud 1');
      for (const key of [org.key, other.key]) {
        expect((await api('GET', `/v1/runners/${cloud.runner_id}`, undefined, key)).body).to.include({ scope: 'cloud', name: 'cloud 1' });
        expect((await api('GET', '/v1/runners', undefined, key)).body.data.map((r: { runner_id: string }) => r.runner_id)).to.include(cloud.runner_id);
      }
      const refused = await api('DELETE', `/v1/runners/${cloud.runner_id}`);
      expect(refused.status).to.equal(403);
      expect(refused.body.error).to.include({ type: 'permission', code: 'cloud_runner' });
      expect((await api('GET', `/v1/runners/${cloud.runner_id}`, undefined, other.key)).status).to.equal(200);
      // The operator's change is audited outside every org's log.
      const rows = await service.running.container.db('audit_log').where({ object_id: cloud.runner_id });
      expect(rows.map((row) => [row.action, row.org_id])).to.deep.equal([['runner.created', null]]);
      expect(await audit(cloud.runner_id)).to.deep.equal([]);
    });

    it('refuses a runner token as a /v1 API key', async () => {
      const { token } = await create('not a key');
      const response = await service.api(token, 'GET', '/v1/runners');
      expect(response.status).to.equal(401);
      expect(response.body.error.message).to.contain('Runner tokens only work for a runner');
    });
  });

  it('caps an org at 100 runners (409 runner_limit, even under concurrent registrations); a deleted one makes room', async () => {
    const capped = await service.newOrg('Runner cap org');
    const made = await Promise.all(Array.from({ length: 105 }, (_, i) => api('POST', '/v1/runners', { name: `r${i}` }, capped.key)));
    expect(made.filter((response) => response.status === 200)).to.have.length(100);
    const refused = made.filter((response) => response.status !== 200);
    expect(refused).to.have.length(5);
    expect(refused[0]!.status).to.equal(409);
    expect(refused[0]!.body.error.code).to.equal('runner_limit');
    const list = (await api('GET', '/v1/runners', undefined, capped.key)).body.data.filter((r: { scope: string }) => r.scope === 'org');
    expect(list).to.have.length(100);
    expect((await api('DELETE', `/v1/runners/${list[0].runner_id}`, undefined, capped.key)).status).to.equal(200);
    expect((await api('POST', '/v1/runners', { name: 'one more' }, capped.key)).status).to.equal(200);
  });

  describe('the /runners namespace', () => {
    it('takes a hello with the token: online with what it reported, read through the API', async () => {
      const made = await create('connects');
      const connection = runner();
      const reply = await connection.hello(made.token, { busy: 1 });
      expect(reply).to.deep.equal({ ok: true, runner_id: made.runner_id, name: 'connects', scope: 'org', heartbeat_ms: 200 });
      const read = (await api('GET', `/v1/runners/${made.runner_id}`)).body;
      // busy is the service's own count of the machines it placed there (none yet), not what the runner says.
      expect(read).to.include({ status: 'online', provider: RUNNER_REPORT.provider, version: RUNNER_REPORT.version, slots: 2, busy: 0 });
      expect(read.labels).to.deep.equal(RUNNER_REPORT.labels);
      expect(read.images).to.deep.equal(RUNNER_REPORT.images);
      expect(Date.parse(read.last_seen_at)).to.be.within(Date.now() - 5_000, Date.now() + 5_000);
      expect(await connection.heartbeat({ busy: 2 })).to.deep.equal({ ok: true });
      expect((await api('GET', `/v1/runners/${made.runner_id}`)).body.busy).to.equal(0);
    });

    it('refuses a malformed hello naming the field, and closes the connection', async () => {
      const made = await create('bad hello');
      const connection = runner();
      expect(await connection.hello(made.token, { slots: -1 })).to.deep.equal({ ok: false, code: 'invalid', message: 'The runner sent a malformed hello: slots must be >= 0' });
      await waitFor(() => connection.socket.disconnected, 3_000, 'the connection to close');
      const missing = runner();
      expect(await missing.hello(made.token, { images: undefined })).to.deep.equal({ ok: false, code: 'invalid', message: "The runner sent a malformed hello: hello must have required property 'images'" });
      const badLabel = runner();
      expect((await badLabel.hello(made.token, { labels: ['ok', 7] })).message).to.equal('The runner sent a malformed hello: labels.1 must be string');
      expect(await status(made.runner_id)).to.equal('offline');
    });

    it('refuses a wrong token and a revoked one', async () => {
      expect(await runner().hello('dhr_nope')).to.include({ ok: false, code: 'unknown_token' });
      const made = await create('revoked');
      const forged = made.token.slice(0, -1) + (made.token.endsWith('a') ? 'b' : 'a');
      expect(await runner().hello(forged)).to.include({ ok: false, code: 'unknown_token' });
      await api('DELETE', `/v1/runners/${made.runner_id}`);
      const refused = runner();
      expect(await refused.hello(made.token)).to.deep.equal({ ok: false, code: 'revoked', message: `Runner ${made.runner_id} has been deleted; its token no longer works` });
      await waitFor(() => refused.socket.disconnected, 3_000, 'the connection to close');
    });

    it('disconnects a connected runner when it is deleted, and refuses it when it comes back', async () => {
      const made = await create('deleted while connected');
      const connection = runner();
      expect((await connection.hello(made.token)).ok).to.equal(true);
      expect((await api('DELETE', `/v1/runners/${made.runner_id}`)).status).to.equal(200);
      await waitFor(() => connection.socket.disconnected, 3_000, 'the runner to be disconnected');
      expect((await runner().hello(made.token)).code).to.equal('revoked');
    });

    it('is offline at once when the runner disconnects', async () => {
      const made = await create('leaves');
      const connection = runner();
      await connection.hello(made.token);
      expect(await status(made.runner_id)).to.equal('online');
      connection.close();
      // Not the silence (that reads offline too, after a while): the connection let go of it.
      const released = async () => (await service.running.container.db('runners').where({ id: made.runner_id }).first()).connection_id === null;
      await waitFor(released, 3_000, 'the runner to be released');
      expect(await status(made.runner_id)).to.equal('offline');
    });

    it('stays online while it heartbeats, turns offline after the configured silence, and online with the next heartbeat', async () => {
      const made = await create('goes quiet');
      const connection = runner();
      await connection.hello(made.token);
      const beating = Date.now();
      while (Date.now() - beating < 2 * OFFLINE_AFTER_MS) {
        expect(await connection.heartbeat()).to.deep.equal({ ok: true });
        expect(await status(made.runner_id)).to.equal('online');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const quiet = Date.now();
      await waitFor(async () => (await status(made.runner_id)) === 'offline', 3 * OFFLINE_AFTER_MS, 'offline after silence');
      expect(Date.now() - quiet).to.be.at.least(OFFLINE_AFTER_MS - 250);
      expect(connection.socket.connected).to.equal(true);
      await connection.heartbeat();
      expect(await status(made.runner_id)).to.equal('online');
    });

    it('keeps one connection per runner: a second hello with the token closes the first, which then leaves it online', async () => {
      const made = await create('twice');
      const first = runner();
      await first.hello(made.token);
      const second = runner();
      expect((await second.hello(made.token)).ok).to.equal(true);
      await waitFor(() => first.socket.disconnected, 3_000, 'the older connection to close');
      // The older connection's goodbye does not take the newer one offline. Its goodbye releases
      // the runner (for that connection only), then queues the check of a runner gone: once the
      // check is queued, the release is done.
      const evals = service.running.container.queues.queue('evals');
      const checkQueued = async () => (await evals.getJobs(['delayed', 'waiting'])).some((job) => job.name === 'runner-check' && job.data.runner_id === made.runner_id);
      await waitFor(checkQueued, 3_000, 'the older connection\'s goodbye');
      expect(await status(made.runner_id)).to.equal('online');
      expect(await second.heartbeat()).to.deep.equal({ ok: true });
    });

    it('refuses a heartbeat with a malformed busy', async () => {
      const made = await create('bad heartbeat');
      const connection = runner();
      await connection.hello(made.token);
      expect(await connection.heartbeat({ busy: -1 })).to.include({ ok: false, message: 'busy must be an integer from 0 to 10000' });
    });
  });
});
