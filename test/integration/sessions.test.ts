import { expect } from 'chai';
import { ManualClock } from '../../shared/clock';
import { createContainer } from '../../shared/container';
import { hashSecret } from '../../shared/api-keys/key-format';
import { DesktopEvents } from '../../shared/desktop/protocol';
import { SESSION_IDLE_EXPIRY_MS } from '../../shared/sessions/sessions.service';
import { insertSessionWithNewCode } from '../../shared/sessions/sessions.repository';
import { testConfig } from '../support/environment';
import { RawDesktop } from '../support/raw-desktop';
import { startTestService, waitFor, type TestService } from '../support/service';

describe('sessions', () => {
  let service: TestService;
  let org: { orgId: string; key: string };
  const desktops: RawDesktop[] = [];
  const desktop = () => {
    const made = new RawDesktop(service.baseUrl);
    desktops.push(made);
    return made;
  };
  const session = async (code: string) => (await service.api(org.key, 'GET', `/v1/sessions/${code}`)).body;

  before(async () => {
    service = await startTestService({}, ['web']);
    org = await service.newOrg();
  });
  afterEach(() => {
    for (const made of desktops.splice(0)) made.close();
  });
  after(async () => service.stop());

  describe('POST /v1/sessions', () => {
    it('creates a waiting session with the default agent, an invite link with the code, and a one-time token', async () => {
      const before = Date.now();
      const { status, body } = await service.api(org.key, 'POST', '/v1/sessions', { metadata: { ticket: 'T-1' } });
      expect(status).to.equal(200);
      expect(body).to.include({ object: 'session', status: 'waiting', agent_id: 'default', task_count: 0, latest_task_id: null, device: null, paired_at: null });
      expect(body.code).to.match(/^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$/);
      expect(body.session_id).to.equal(body.code);
      expect(body.invite_url).to.equal(`${service.running.container.config.baseUrl}/invite/${body.code}`);
      expect(body.metadata).to.deep.equal({ ticket: 'T-1' });
      expect(body.token).to.match(/^dh_sess_/);
      const expires = Date.parse(body.expires_at) - before;
      expect(expires).to.be.within(SESSION_IDLE_EXPIRY_MS - 5000, SESSION_IDLE_EXPIRY_MS + 5000);
      const row = await service.running.container.db('sessions').where({ code: body.code }).first();
      expect(row.token_hash).to.equal(hashSecret(body.token));
      expect((await session(body.code)).token).to.equal(undefined);
    });

    it('records who created it in the audit log', async () => {
      const { body } = await service.api(org.key, 'POST', '/v1/sessions', {});
      const audit = (await service.api(org.key, 'GET', `/v1/audit_log?object_id=${body.code}`)).body.data;
      expect(audit[0]).to.include({ action: 'session.created', object_type: 'session' });
      expect(audit[0].actor).to.include({ type: 'api_key' });
    });

    it('answers 404 for an agent the org does not have, 400 for a malformed one', async () => {
      const missing = await service.api(org.key, 'POST', '/v1/sessions', { agent_id: 'nobody-here' });
      expect(missing.status).to.equal(404);
      expect(missing.body.error.type).to.equal('not_found');
      const malformed = await service.api(org.key, 'POST', '/v1/sessions', { agent_id: 'Bad_Id' });
      expect(malformed.status).to.equal(400);
      expect(malformed.body.error.message).to.match(/^agent_id/);
    });

    it('draws another code when the one drawn is taken, and audits only the session it made', async () => {
      const { body: taken } = await service.api(org.key, 'POST', '/v1/sessions', {});
      const db = service.running.container.db;
      const drawn: string[] = [];
      const made = await insertSessionWithNewCode(
        db,
        (code) => {
          drawn.push(code);
          // The first attempt presents a code already in use.
          return { code: drawn.length === 1 ? taken.code : code, kind: 'machine', org_id: org.orgId, agent_id: taken.agent_id, token_hash: null, invite_url: null, metadata: {}, created_at: new Date(), expires_at: null };
        },
        (code) => ({ orgId: org.orgId, actor: null, action: 'session.created', objectType: 'session', objectId: drawn.length === 1 ? taken.code : code }),
      );
      expect(drawn).to.have.length(2);
      expect(made.code).to.equal(drawn[1]);
      const audited = await db('audit_log').where({ org_id: org.orgId, action: 'session.created' }).whereIn('object_id', [taken.code, made.code]).select('object_id');
      expect(audited.map((row) => row.object_id).sort()).to.deep.equal([taken.code, made.code].sort());
    });

    it('refuses bad metadata naming the key', async () => {
      const response = await service.api(org.key, 'POST', '/v1/sessions', { metadata: { n: 1 } });
      expect(response.status).to.equal(400);
      expect(response.body.error.message).to.equal('metadata.n must be of type string');
    });
  });

  describe('listing', () => {
    it('lists newest first, filters by status and agent, and pages', async () => {
      const other = await service.newOrg('Lists');
      const codes: string[] = [];
      for (let i = 0; i < 5; i++) codes.push((await service.api(other.key, 'POST', '/v1/sessions', {})).body.code);
      const first = (await service.api(other.key, 'GET', '/v1/sessions?limit=2')).body;
      expect(first.data.map((s: { code: string }) => s.code)).to.deep.equal([codes[4], codes[3]]);
      const second = (await service.api(other.key, 'GET', `/v1/sessions?limit=2&cursor=${first.next_cursor}`)).body;
      expect(second.data.map((s: { code: string }) => s.code)).to.deep.equal([codes[2], codes[1]]);
      await service.api(other.key, 'POST', `/v1/sessions/${codes[0]}/expire`);
      const expired = (await service.api(other.key, 'GET', '/v1/sessions?status=expired')).body;
      expect(expired.data.map((s: { code: string }) => s.code)).to.deep.equal([codes[0]]);
      expect((await service.api(other.key, 'GET', '/v1/sessions?agent_id=default')).body.data).to.have.length(5);
      expect((await service.api(other.key, 'GET', '/v1/sessions?agent_id=another')).body.data).to.have.length(0);
      expect((await service.api(other.key, 'GET', '/v1/sessions?status=gone')).status).to.equal(400);
    });

    it('answers 404 for another org\'s session', async () => {
      const other = await service.newOrg('Other');
      const { body } = await service.api(other.key, 'POST', '/v1/sessions', {});
      for (const [method, path] of [
        ['GET', `/v1/sessions/${body.code}`],
        ['POST', `/v1/sessions/${body.code}/disconnect`],
        ['POST', `/v1/sessions/${body.code}/expire`],
      ] as const) {
        const response = await service.api(org.key, method, path);
        expect(response.status, path).to.equal(404);
      }
      expect((await session(body.code)).error.type).to.equal('not_found');
    });
  });

  describe('the desktop connection', () => {
    it('connects, goes offline and ends after a migration adds a column under the running service (those statements are prepared)', async () => {
      const db = service.running.container.db;
      const cycle = async () => {
        const { body } = await service.api(org.key, 'POST', '/v1/sessions', {});
        const app = desktop();
        expect((await app.hello(body.code)).ok).to.equal(true);
        expect((await session(body.code)).status).to.equal('connected');
        app.close();
        await waitFor(async () => (await session(body.code)).status === 'disconnected', 5000, 'disconnected');
        const again = desktop();
        expect((await again.hello(body.code)).ok).to.equal(true);
        const ended = await service.api(org.key, 'POST', `/v1/sessions/${body.code}/expire`);
        expect(ended.body).to.include({ status: 'expired' });
        expect(Date.parse(ended.body.expires_at)).to.be.a('number');
      };
      // Prepared on the service's connections first.
      for (let i = 0; i < 3; i++) await cycle();
      await db.raw('alter table sessions add column probe_added integer');
      try {
        for (let i = 0; i < 3; i++) await cycle();
      } finally {
        await db.raw('alter table sessions drop column probe_added');
      }
    });

    it('connects with the code, reports the device, and records session.connected', async () => {
      const { body } = await service.api(org.key, 'POST', '/v1/sessions', {});
      const app = desktop();
      const reply = await app.hello(body.code.toLowerCase());
      expect(reply).to.deep.include({ ok: true, session_id: body.code });
      const now = await session(body.code);
      expect(now).to.include({ status: 'connected', expires_at: null });
      expect(now.device).to.deep.equal({ os: 'mac', name: 'Test Mac', width: 1440, height: 900, app_version: '1.0.20' });
      expect(now.paired_at).to.be.a('string');
      const events = await service.running.container.db('org_events').where({ session_id: body.code }).pluck('type');
      expect(events).to.deep.equal(['session.connected']);
    });

    it('goes disconnected when the computer goes offline, and connected again when the code is entered again', async () => {
      const { body } = await service.api(org.key, 'POST', '/v1/sessions', {});
      const first = desktop();
      await first.hello(body.code);
      const pairedAt = (await session(body.code)).paired_at;
      first.close();
      await waitFor(async () => (await session(body.code)).status === 'disconnected', 5000, 'disconnected');
      const offline = await session(body.code);
      expect(Date.parse(offline.expires_at) - Date.parse(offline.last_active_at)).to.equal(SESSION_IDLE_EXPIRY_MS);
      const again = desktop();
      expect((await again.hello(body.code)).ok).to.equal(true);
      const back = await session(body.code);
      expect(back.status).to.equal('connected');
      expect(back.paired_at).to.equal(pairedAt);
      const events = await service.running.container.db('org_events').where({ session_id: body.code }).orderBy('seq').pluck('type');
      expect(events).to.deep.equal(['session.connected', 'session.disconnected', 'session.connected']);
    });

    it('keeps one connection per session: a new hello with the code closes the older one', async () => {
      const { body } = await service.api(org.key, 'POST', '/v1/sessions', {});
      const first = desktop();
      await first.hello(body.code);
      // The web process marks a connection's session offline when the connection goes (`markOffline`):
      // the older connection's mark is watched, to look at the session once it is done.
      const { sessions } = service.running.container;
      const markOffline = sessions.markOffline.bind(sessions);
      const goodbyes: Array<Promise<void>> = [];
      sessions.markOffline = (connection) => {
        const marked = markOffline(connection);
        goodbyes.push(marked);
        return marked;
      };
      try {
        const second = desktop();
        expect((await second.hello(body.code)).ok).to.equal(true);
        await waitFor(() => !first.socket.connected, 5000, 'the older connection to close');
        expect(second.socket.connected).to.equal(true);
        await waitFor(() => goodbyes.length === 1, 5000, 'the older connection\'s goodbye');
        await goodbyes[0];
      } finally {
        sessions.markOffline = markOffline;
      }
      // The older connection's goodbye does not take the session offline.
      expect((await session(body.code)).status).to.equal('connected');
    });

    it('refuses an unknown code and a malformed one with a reason the app can show', async () => {
      const app = desktop();
      const unknown = await app.hello('ZZZZ-ZZZZ');
      expect(unknown).to.deep.equal({ ok: false, code: 'unknown_code', message: 'This code is not known. Check it, or ask for a new invite.' });
      const other = desktop();
      const malformed = await other.hello('12');
      expect(malformed).to.include({ ok: false, code: 'invalid' });
    });

    it('refuses a hello that is not shaped like one', async () => {
      const app = desktop();
      await new Promise<void>((resolve) => app.socket.once('connect', () => resolve()));
      const reply = await app.socket.timeout(5000).emitWithAck(DesktopEvents.hello, { code: 'ABCD-EFGH', device: { os: 'mac' } });
      expect(reply).to.include({ ok: false, code: 'invalid' });
    });

    it('POST /disconnect lets go: the app is told, the session is disconnected, the code still works', async () => {
      const { body } = await service.api(org.key, 'POST', '/v1/sessions', {});
      const app = desktop();
      await app.hello(body.code);
      const response = await service.api(org.key, 'POST', `/v1/sessions/${body.code}/disconnect`);
      expect(response.status).to.equal(200);
      expect(response.body.status).to.equal('disconnected');
      await waitFor(() => app.received.find((m) => m.event === DesktopEvents.released), 5000, 'released');
      await waitFor(() => !app.socket.connected, 5000, 'the app to be disconnected');
      expect((await session(body.code)).status).to.equal('disconnected');
      const audit = (await service.api(org.key, 'GET', `/v1/audit_log?object_id=${body.code}&action=session.disconnected`)).body.data;
      expect(audit).to.have.length(1);
      const again = desktop();
      expect((await again.hello(body.code)).ok).to.equal(true);
    });

    it('POST /expire ends it: the app is told, the code is refused from then on', async () => {
      const { body } = await service.api(org.key, 'POST', '/v1/sessions', {});
      const app = desktop();
      await app.hello(body.code);
      const before = Date.now();
      const response = await service.api(org.key, 'POST', `/v1/sessions/${body.code}/expire`);
      expect(response.body.status).to.equal('expired');
      expect(Date.parse(response.body.expires_at)).to.be.within(before - 1000, Date.now() + 1000);
      await waitFor(() => app.received.find((m) => m.event === DesktopEvents.released), 5000, 'released');
      const late = desktop();
      expect(await late.hello(body.code)).to.deep.equal({ ok: false, code: 'expired', message: 'This code has expired. Ask for a new invite.' });
      expect((await service.api(org.key, 'POST', `/v1/sessions/${body.code}/expire`)).body.status).to.equal('expired');
    });

    it('POST /expire sent three times at once ends it once: one session.expired row; 404 for another org', async () => {
      const { body } = await service.api(org.key, 'POST', '/v1/sessions', {});
      const other = await service.newOrg();
      expect((await service.api(other.key, 'POST', `/v1/sessions/${body.code}/expire`)).status).to.equal(404);
      const answers = await Promise.all([1, 2, 3].map(() => service.api(org.key, 'POST', `/v1/sessions/${body.code}/expire`)));
      expect(answers.map((answer) => [answer.status, answer.body.status])).to.deep.equal([[200, 'expired'], [200, 'expired'], [200, 'expired']]);
      expect(new Set(answers.map((answer) => answer.body.expires_at)).size).to.equal(1);
      const rows = await service.running.container.db('audit_log').where({ object_id: body.code, action: 'session.expired' });
      expect(rows).to.have.length(1);
      expect(rows[0].org_id).to.equal(org.orgId);
      expect(rows[0].actor).to.include({ type: 'api_key' });
    });
  });

  describe('expiry by time', () => {
    it('expires a code unused for 72 hours, and only then', async () => {
      const clock = new ManualClock(new Date('2026-11-01T00:00:00Z'));
      const container = createContainer(testConfig(), { clock });
      try {
        const { org } = await container.orgs.create('Clock org');
        const auth = { orgId: org.org_id, keyId: 'key_test', userId: null, role: 'admin' as const, actor: { type: 'api_key' as const, key_id: 'key_test', name: 't', prefix: 'dh_test_x' } };
        const unused = await container.sessions.create(auth, {}, 'req');
        const used = await container.sessions.create(auth, {}, 'req');
        clock.advance(SESSION_IDLE_EXPIRY_MS - 1000);
        expect(await container.sessions.expireDue()).to.equal(0);
        await container.sessions.connect({ code: used.session.code, device: { os: 'mac', name: 'm', width: 100, height: 100, app_version: '1.0.20' }, capabilities: { accessibility: true, page_addresses: true, element_info: true } });
        clock.advance(2000);
        expect(await container.sessions.expireDue()).to.equal(1);
        expect((await container.sessions.get(auth.orgId, unused.session.code)).status).to.equal('expired');
        expect((await container.sessions.get(auth.orgId, used.session.code)).status).to.equal('connected');
        let refused: unknown;
        await container.sessions.connect({ code: unused.session.code, device: { os: 'mac', name: 'm', width: 100, height: 100, app_version: '1.0.20' }, capabilities: { accessibility: true, page_addresses: true, element_info: true } }).catch((error) => (refused = error));
        expect(refused).to.have.property('code', 'expired');
        const audit = await container.db('audit_log').where({ object_id: unused.session.code, action: 'session.expired' }).first();
        expect(audit.data).to.deep.equal({ reason: 'unused for 72 hours' });
      } finally {
        await container.close();
      }
    });

    it('schedules a delayed expire-session job in the maintenance queue', async () => {
      const { body } = await service.api(org.key, 'POST', '/v1/sessions', {});
      const job = await service.running.container.queues.queue('maintenance').getJob(`expire-${body.code}-0`);
      expect(job?.name).to.equal('expire-session');
      expect(job?.opts.delay).to.be.within(SESSION_IDLE_EXPIRY_MS - 10_000, SESSION_IDLE_EXPIRY_MS);
    });
  });

  describe('the creation limit', () => {
    it('answers 429 rate_limit past the sessions an org may create in an hour', async () => {
      const limited = await startTestService({ DESKHAND_SESSIONS_PER_HOUR: '3', DESKHAND_REDIS_PREFIX: `sl-${Date.now()}` }, ['web']);
      try {
        const a = await limited.newOrg();
        const b = await limited.newOrg();
        const statuses = [];
        for (let i = 0; i < 4; i++) statuses.push((await limited.api(a.key, 'POST', '/v1/sessions', {})).status);
        expect(statuses).to.deep.equal([200, 200, 200, 429]);
        const refused = await limited.api(a.key, 'POST', '/v1/sessions', {});
        expect(refused.body.error.type).to.equal('rate_limit');
        expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
        expect((await limited.api(b.key, 'POST', '/v1/sessions', {})).status).to.equal(200);
      } finally {
        await limited.stop();
      }
    });
  });
});

describe('two web processes share one session', () => {
  it('a team disconnect through one reaches the computer connected to the other', async () => {
    const first = await startTestService({}, ['web']);
    const second = await startTestService({}, ['web']);
    const app = new RawDesktop(first.baseUrl);
    try {
      const org = await second.newOrg();
      const { body } = await second.api(org.key, 'POST', '/v1/sessions', {});
      expect((await app.hello(body.code)).ok).to.equal(true);
      const response = await second.api(org.key, 'POST', `/v1/sessions/${body.code}/disconnect`);
      expect(response.body.status).to.equal('disconnected');
      const released = await waitFor(() => app.received.find((m) => m.event === DesktopEvents.released), 5000, 'released via the other process');
      expect(released.payload).to.deep.equal({ reason: 'The team disconnected this computer.' });
      await waitFor(() => !app.socket.connected, 5000, 'the connection held by the first process to close');
    } finally {
      app.close();
      await first.stop();
      await second.stop();
    }
  });
});
