import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { addMember, consoleSession } from '../support/console';

/** What a request with a console sign-in sends: its cookie, and the CSRF token when it changes something. */
const withSession = (session: { cookie: string; csrfToken: string }, csrf = true) => ({ cookie: session.cookie, ...(csrf ? { 'x-csrf-token': session.csrfToken } : {}) });

/** The sign-in form's hidden CSRF token and its cookie, as a browser gets them. */
async function signInForm(service: TestService) {
  const response = await fetch(`${service.baseUrl}/console/sign-in`);
  const html = await response.text();
  const token = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
  const cookie = response.headers.getSetCookie().find((value) => value.startsWith('deskhand_sign_in_csrf='))!;
  return { token, cookie: cookie.slice(0, cookie.indexOf(';')) };
}

async function postSignIn(service: TestService, email: string, password: string, form?: { token: string; cookie: string }) {
  const fields = new URLSearchParams({ email, password, next: '/console/tasks', ...(form ? { _csrf: form.token } : {}) });
  return fetch(`${service.baseUrl}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(form ? { cookie: form.cookie } : {}) },
    body: fields.toString(),
  });
}

describe('console sign-ins and roles', function () {
  this.timeout(60_000);
  let service: TestService;
  let org: { orgId: string; key: string };

  before(async () => {
    service = await startTestService({}, ['web']);
    org = await service.newOrg('Console org');
  });
  after(async () => service?.stop());

  it('a one-time sign-in link sets an HttpOnly, Secure, SameSite=Lax cookie, and works only once', async () => {
    const member = await addMember(service, org.orgId, 'owner');
    const first = await fetch(member.signInUrl, { redirect: 'manual' });
    expect(first.status).to.equal(302);
    expect(first.headers.get('location')).to.equal('/console/account?welcome=1');
    const cookie = first.headers.getSetCookie().find((value) => value.startsWith('deskhand_console='))!;
    expect(cookie).to.match(/; HttpOnly/).and.to.match(/; Secure/).and.to.match(/; SameSite=Lax/).and.to.match(/; Path=\//);
    const again = await fetch(member.signInUrl, { redirect: 'manual' });
    expect(again.status).to.equal(401);
    expect(await again.text()).to.contain('has been used or has expired');
  });

  it('the /v1 API takes a console sign-in: reads without a CSRF token, changes only with it', async () => {
    const session = await consoleSession(service, org.orgId, 'member');
    const me = await service.api(null, 'GET', '/v1/me', undefined, withSession(session, false));
    expect(me.status).to.equal(200);
    expect(me.body).to.include({ org_id: org.orgId, user_id: session.userId, role: 'member', key_id: null });

    const forged = await service.api(null, 'POST', '/v1/sessions', {}, withSession(session, false));
    expect(forged.status).to.equal(403);
    expect(forged.body.error).to.include({ type: 'permission', code: 'csrf' });
    const wrong = await service.api(null, 'POST', '/v1/sessions', {}, { cookie: session.cookie, 'x-csrf-token': 'not-the-token' });
    expect(wrong.status).to.equal(403);
    const made = await service.api(null, 'POST', '/v1/sessions', {}, withSession(session));
    expect(made.status, JSON.stringify(made.body)).to.equal(200);
  });

  it('a member is refused admin-only calls with 403 permission; an admin and an API key are not', async () => {
    const member = await consoleSession(service, org.orgId, 'member');
    const admin = await consoleSession(service, org.orgId, 'admin');
    const refused = await service.api(null, 'POST', '/v1/runners', { name: 'lab' }, withSession(member));
    expect(refused.status).to.equal(403);
    expect(refused.body.error.type).to.equal('permission');
    expect(refused.body.error.message).to.contain('admin role');
    for (const [path, method, body] of [['/v1/webhook', 'PUT', { events: [] }], ['/v1/test_sets', 'POST', { name: 'x' }], ['/v1/audit_log', 'GET', undefined], ['/v1/members', 'POST', { email: 'x@example.com', role: 'member' }]] as const) {
      expect((await service.api(null, method, path, body, withSession(member))).status, `${method} ${path}`).to.equal(403);
    }
    expect((await service.api(null, 'GET', '/v1/runners', undefined, withSession(member))).status).to.equal(200);
    expect((await service.api(null, 'POST', '/v1/runners', { name: 'lab' }, withSession(admin))).status).to.equal(200);
    expect((await service.api(org.key, 'POST', '/v1/runners', { name: 'lab 2' })).status).to.equal(200);
  });

  it('the OpenAPI document says which calls need the admin role', async () => {
    const document = (await service.api(null, 'GET', '/openapi.json')).body;
    const createRunner = document.paths['/v1/runners'].post;
    expect(createRunner['x-deskhand-role']).to.equal('admin');
    expect(createRunner.responses).to.have.property('403');
    expect(document.paths['/v1/tasks'].get).to.not.have.property('x-deskhand-role');
  });

  it('a session token is still refused on /v1 with 401, cookie or not', async () => {
    const session = await consoleSession(service, org.orgId, 'admin');
    const created = await service.api(org.key, 'POST', '/v1/sessions', {});
    const refused = await service.api(null, 'GET', '/v1/me', undefined, { authorization: `Bearer ${created.body.token}`, cookie: session.cookie });
    expect(refused.status).to.equal(401);
  });

  it('signs in with a password through the form (double-submit CSRF), and refuses a wrong one alike for unknown accounts', async () => {
    const session = await consoleSession(service, org.orgId, 'admin');
    const set = await service.api(null, 'PUT', '/v1/me/password', { password: 'correct horse battery' }, withSession(session));
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    const change = await service.api(null, 'PUT', '/v1/me/password', { password: 'another long password' }, withSession(session));
    expect(change.status).to.equal(400);
    expect(change.body.error.message).to.contain('current_password');
    const short = await service.api(null, 'PUT', '/v1/me/password', { password: 'short', current_password: 'correct horse battery' }, withSession(session));
    expect(short.status).to.equal(400);
    expect((await service.api(org.key, 'PUT', '/v1/me/password', { password: 'an api key has none' })).status).to.equal(403);

    expect((await postSignIn(service, session.email, 'correct horse battery')).status, 'no form token').to.equal(403);
    const signedIn = await postSignIn(service, session.email.toUpperCase(), 'correct horse battery', await signInForm(service));
    expect(signedIn.status).to.equal(302);
    expect(signedIn.headers.get('location')).to.equal('/console/tasks');
    expect(signedIn.headers.getSetCookie().some((value) => value.startsWith('deskhand_console=dhc_'))).to.equal(true);

    const wrong = await postSignIn(service, session.email, 'wrong password!', await signInForm(service));
    const unknown = await postSignIn(service, 'nobody@example.com', 'wrong password!', await signInForm(service));
    expect(wrong.status).to.equal(401);
    expect(unknown.status).to.equal(401);
    const message = (html: string) => /data-testid="sign-in-error">([^<]*)</.exec(html)![1];
    expect(message(await wrong.text())).to.equal(message(await unknown.text()));
  });

  it('locks an account after 10 failed sign-ins, even against the right password (429 with Retry-After)', async () => {
    const session = await consoleSession(service, org.orgId, 'member');
    await service.api(null, 'PUT', '/v1/me/password', { password: 'the right password' }, withSession(session));
    for (let attempt = 0; attempt < 10; attempt++) {
      expect((await postSignIn(service, session.email, `wrong ${attempt} password`, await signInForm(service))).status).to.equal(401);
    }
    const locked = await postSignIn(service, session.email, 'the right password', await signInForm(service));
    expect(locked.status).to.equal(429);
    expect(Number(locked.headers.get('retry-after'))).to.be.greaterThan(0);
    expect(await locked.text()).to.contain('Too many failed sign-ins for this account');
  });

  it('limits sign-in attempts per client address (429 once the address has used its budget)', async () => {
    const strict = await startTestService({ DESKHAND_SIGN_INS_PER_ADDRESS: '3' }, ['web']);
    try {
      const statuses: number[] = [];
      // The budget is shared with every earlier attempt of this test run from 127.0.0.1, so at most 4 tries.
      for (let attempt = 0; attempt < 4; attempt++) statuses.push((await postSignIn(strict, 'someone@example.com', 'a wrong password', await signInForm(strict))).status);
      expect(statuses.at(-1)).to.equal(429);
    } finally {
      await strict.stop();
    }
  });

  it('ends sessions on sign-out, after the idle limit and after the absolute limit', async () => {
    const { db } = service.running.container;
    const signedOut = await consoleSession(service, org.orgId, 'member');
    const noToken = await fetch(`${service.baseUrl}/console/sign-out`, { method: 'POST', redirect: 'manual', headers: { cookie: signedOut.cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
    expect(noToken.status, 'sign-out needs the page\'s CSRF token').to.equal(403);
    const out = await fetch(`${service.baseUrl}/console/sign-out`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: signedOut.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: signedOut.csrfToken }).toString(),
    });
    expect(out.status).to.equal(302);
    expect(out.headers.getSetCookie().find((value) => value.startsWith('deskhand_console='))).to.match(/^deskhand_console=; .*Max-Age=0/);
    expect((await service.api(null, 'GET', '/v1/me', undefined, withSession(signedOut))).status).to.equal(401);

    const idle = await consoleSession(service, org.orgId, 'member');
    await db('console_sessions').where({ user_id: idle.userId }).update({ last_seen_at: db.raw("now() - interval '13 hours'") });
    expect((await service.api(null, 'GET', '/v1/me', undefined, withSession(idle))).status).to.equal(401);

    const old = await consoleSession(service, org.orgId, 'member');
    await db('console_sessions').where({ user_id: old.userId }).update({ expires_at: db.raw("now() - interval '1 second'") });
    expect((await service.api(null, 'GET', '/v1/me', undefined, withSession(old))).status).to.equal(401);

    const page = await fetch(`${service.baseUrl}/console/account`, { redirect: 'manual', headers: { cookie: old.cookie } });
    expect(page.status).to.equal(302);
    expect(page.headers.get('location')).to.equal('/console/sign-in?next=%2Fconsole%2Faccount');
  });

  it('roles: only an owner gives the owner role, the last owner stays, a removed member is signed out; all audited by the person', async () => {
    const owner = await consoleSession(service, org.orgId, 'owner');
    const admin = await consoleSession(service, org.orgId, 'admin');
    const member = await consoleSession(service, org.orgId, 'member');

    const promote = await service.api(null, 'PATCH', `/v1/members/${member.userId}`, { role: 'owner' }, withSession(admin));
    expect(promote.status).to.equal(403);
    const invited = await service.api(null, 'POST', '/v1/members', { email: 'new.person@example.com', role: 'admin' }, withSession(admin));
    expect(invited.status, JSON.stringify(invited.body)).to.equal(200);
    expect(invited.body.invite_url).to.match(/\/console\/invitations\/dhi_/);
    expect((await service.api(null, 'POST', '/v1/members', { email: member.email.toUpperCase(), role: 'admin' }, withSession(admin))).body.error.code).to.equal('already_member');

    const changed = await service.api(null, 'PATCH', `/v1/members/${member.userId}`, { role: 'admin' }, withSession(owner));
    expect(changed.status).to.equal(200);
    expect(changed.body.role).to.equal('admin');
    // The new role counts on the person's next request.
    expect((await service.api(null, 'POST', '/v1/runners', { name: 'now allowed' }, withSession(member))).status).to.equal(200);

    // Org "Console org" has several owners by now; a fresh org has one.
    const lonely = await service.newOrg('One owner');
    const only = await consoleSession(service, lonely.orgId, 'owner');
    const demote = await service.api(null, 'PATCH', `/v1/members/${only.userId}`, { role: 'admin' }, withSession(only));
    expect(demote.status).to.equal(409);
    expect(demote.body.error.code).to.equal('last_owner');

    const removed = await service.api(null, 'DELETE', `/v1/members/${member.userId}`, undefined, withSession(owner));
    expect(removed.status).to.equal(200);
    expect((await service.api(null, 'GET', '/v1/me', undefined, withSession(member))).status).to.equal(401);

    const audit = await service.api(org.key, 'GET', '/v1/audit_log?limit=100');
    const actions = audit.body.data.map((entry: { action: string }) => entry.action);
    expect(actions).to.include.members(['user.signed_in', 'member.added', 'member.role_changed', 'member.removed']);
    const roleChange = audit.body.data.find((entry: { action: string }) => entry.action === 'member.role_changed');
    expect(roleChange.actor).to.deep.equal({ type: 'user', email: owner.email });
    expect(roleChange.data).to.deep.equal({ from: 'member', to: 'admin' });
  });
});
