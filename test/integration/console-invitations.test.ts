import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { addMember, consoleSession } from '../support/console';
import { up as spendCrossOrgLinks } from '../../migrations/20261201000002_revoke_cross_org_sign_in_links';

/** What a request with a console sign-in sends: its cookie, and the CSRF token when it changes something. */
const withSession = (session: { cookie: string; csrfToken: string }) => ({ cookie: session.cookie, 'x-csrf-token': session.csrfToken });

/** The console session cookie a response sets, if any. */
function consoleCookie(response: Response): string | undefined {
  const set = response.headers.getSetCookie().find((value) => value.startsWith('deskhand_console=dhc_'));
  return set?.slice(0, set.indexOf(';'));
}

describe('invitations: joining an org, and what another org can do with one', function () {
  this.timeout(60_000);
  let service: TestService;
  let orgA: { orgId: string; key: string };
  let orgB: { orgId: string; key: string };

  /** An address given by the service, pointed at this test service. */
  const here = (url: string) => `${service.baseUrl}${new URL(url).pathname}`;

  /** B invites an address with its own API key; answers the whole response. */
  const invite = (org: { key: string }, email: string, role = 'member') => service.api(org.key, 'POST', '/v1/members', { email, role });

  /** Opens an invitation's page as a browser would (with a cookie, if signed in), for its form. */
  async function invitationForm(link: string, cookie?: string) {
    const response = await fetch(here(link), { headers: cookie ? { cookie } : {} });
    const html = await response.text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
    const formCookie = response.headers.getSetCookie().find((value) => value.startsWith('deskhand_sign_in_csrf='));
    return { status: response.status, html, csrf, formCookie: formCookie?.slice(0, formCookie.indexOf(';')) };
  }

  /** Accepts an invitation through its page's form: with a password, or as the signed-in account. */
  async function accept(link: string, proof: { password: string } | { session: { cookie: string } }) {
    const cookie = 'session' in proof ? proof.session.cookie : undefined;
    const form = await invitationForm(link, cookie);
    const fields = new URLSearchParams({ _csrf: form.csrf ?? '', ...('password' in proof ? { as: 'password', password: proof.password } : { as: 'signed-in' }) });
    const response = await fetch(here(link), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: [cookie, form.formCookie].filter(Boolean).join('; ') },
      body: fields.toString(),
    });
    return { status: response.status, location: response.headers.get('location'), cookie: consoleCookie(response), html: await response.text() };
  }

  /** Signs in through the sign-in form (optionally naming the org). */
  async function signIn(email: string, password: string, org?: string) {
    const page = await fetch(`${service.baseUrl}/console/sign-in${org ? `?org=${org}` : ''}`);
    const html = await page.text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
    const formCookie = page.headers.getSetCookie().find((value) => value.startsWith('deskhand_sign_in_csrf='))!;
    const response = await fetch(`${service.baseUrl}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: formCookie.slice(0, formCookie.indexOf(';')) },
      body: new URLSearchParams({ email, password, next: '/console/tasks', _csrf: csrf, ...(org ? { org } : {}) }).toString(),
    });
    return { status: response.status, location: response.headers.get('location'), cookie: consoleCookie(response) };
  }

  /** Who a console cookie acts as, through the API. */
  const me = async (cookie: string) => service.api(null, 'GET', '/v1/me', undefined, { cookie });

  /** A person of org A made by the operator, who then set a password through their link's sign-in. */
  async function personWithPassword(orgId: string, role: 'member' | 'admin' | 'owner', password: string) {
    const session = await consoleSession(service, orgId, role);
    const set = await service.api(null, 'PUT', '/v1/me/password', { password }, withSession(session));
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    return session;
  }

  const membersOf = async (org: { key: string }) => (await service.api(org.key, 'GET', '/v1/members')).body.data.map((m: { email: string }) => m.email.toLowerCase());

  before(async () => {
    service = await startTestService({}, ['web']);
    orgA = await service.newOrg('Org A');
    orgB = await service.newOrg('Org B');
  });
  after(async () => service?.stop());

  it('another org cannot take over a person through an invitation: the four steps of the takeover all fail', async () => {
    // Org A's admin, made by the operator's CLI, has no password yet.
    const victim = await addMember(service, orgA.orgId, 'admin');

    // 1. Org B, with its own API key only, invites that address.
    const invited = await invite(orgB, victim.email);
    expect(invited.status, JSON.stringify(invited.body)).to.equal(200);
    expect(invited.body, 'nothing about the account').to.not.have.any.keys('user_id', 'has_password', 'sign_in_url');

    // 2. B opens the link it was handed (before the fix: `sign_in_url`, which signed in as the person).
    const link: string = invited.body.invite_url ?? invited.body.sign_in_url;
    const opened = await fetch(here(link), { redirect: 'manual' });
    const heldCookie = consoleCookie(opened);
    expect(heldCookie, 'opening an invitation signs nobody in').to.equal(undefined);
    // B tries to choose the person's password: through the invitation's form, then through the API.
    const chosen = 'chosen by org B!';
    const accepted = await accept(link, { password: chosen });
    expect(accepted.status).to.equal(401);
    expect(accepted.cookie).to.equal(undefined);
    const viaApi = await service.api(null, 'PUT', '/v1/me/password', { password: chosen }, { cookie: heldCookie ?? accepted.cookie ?? 'deskhand_console=none', 'x-csrf-token': 'x' });
    expect(viaApi.status).to.equal(401);

    // 3. B signs in with the address and the password it chose.
    const signedIn = await signIn(victim.email, chosen);
    expect(signedIn.status).to.equal(401);
    expect(signedIn.cookie).to.equal(undefined);

    // 4. Nothing of A's admin changed: no password, no membership in B, A's members as they were.
    const { db } = service.running.container;
    expect((await db('users').where({ id: victim.userId }).first()).password_hash).to.equal(null);
    expect(await membersOf(orgB)).to.not.include(victim.email.toLowerCase());
    expect(await db('memberships').where({ user_id: victim.userId }).select('org_id')).to.deep.equal([{ org_id: orgA.orgId }]);
    // The person's own link still signs them in, to their own org.
    const own = await fetch(victim.signInUrl, { redirect: 'manual' });
    expect((await me(consoleCookie(own)!)).body).to.include({ org_id: orgA.orgId, role: 'admin' });
  });

  it('an invitation reveals nothing about accounts outside the org: the same answer and the same page for a known and an unknown address', async () => {
    const known = await personWithPassword(orgA.orgId, 'member', 'known person password');
    const unknown = `nobody-${Date.now()}@example.com`;
    const [a, b] = [await invite(orgB, known.email), await invite(orgB, unknown)];
    expect(a.status).to.equal(200);
    expect(b.status).to.equal(200);
    expect(Object.keys(a.body).sort()).to.deep.equal(Object.keys(b.body).sort());
    const varying = ['invitation_id', 'email', 'created_at', 'expires_at', 'invite_url'];
    const rest = (body: Record<string, unknown>) => Object.fromEntries(Object.entries(body).filter(([key]) => !varying.includes(key)));
    expect(rest(a.body)).to.deep.equal(rest(b.body));

    const normalised = (html: string, email: string) =>
      html
        .replaceAll(email, 'EMAIL')
        .replace(/dhi_[A-Za-z0-9_-]+/g, 'TOKEN')
        .replace(/name="_csrf" value="[^"]+"/g, 'CSRF')
        .replace(/<time[^>]*>[^<]*<\/time>/g, 'TIME');
    const pageA = await invitationForm(a.body.invite_url);
    const pageB = await invitationForm(b.body.invite_url);
    expect(pageA.status).to.equal(200);
    expect(normalised(pageA.html, known.email)).to.equal(normalised(pageB.html, unknown));
  });

  it('a person of another org joins with their own password; a wrong one is refused and joins nothing; the link then works no more', async () => {
    const person = await personWithPassword(orgA.orgId, 'member', 'my own long password');
    const invited = await invite(orgB, person.email.toUpperCase(), 'admin');
    const wrong = await accept(invited.body.invite_url, { password: 'not my password at all' });
    expect(wrong.status).to.equal(401);
    expect(wrong.html).to.contain('That password does not match');
    expect(await membersOf(orgB)).to.not.include(person.email.toLowerCase());

    const joined = await accept(invited.body.invite_url, { password: 'my own long password' });
    expect(joined.status).to.equal(302);
    expect(joined.location).to.equal('/console/tasks?joined=1');
    expect((await me(joined.cookie!)).body).to.include({ org_id: orgB.orgId, user_id: person.userId, role: 'admin' });
    expect(await membersOf(orgB)).to.include(person.email.toLowerCase());

    const again = await invitationForm(invited.body.invite_url);
    expect(again.status).to.equal(404);
    expect(again.html).to.contain('has been used, revoked or has expired');
    expect((await accept(invited.body.invite_url, { password: 'my own long password' })).status).to.equal(404);

    const audit = (await service.api(orgB.key, 'GET', `/v1/audit_log?object_id=${invited.body.invitation_id}`)).body.data;
    expect(audit.map((entry: { action: string }) => entry.action).sort()).to.deep.equal(['invitation.accepted', 'member.invited']);
    expect(audit.find((entry: { action: string }) => entry.action === 'invitation.accepted').actor).to.deep.equal({ type: 'user', email: invited.body.email });
    const inA = (await service.api(orgA.key, 'GET', '/v1/audit_log?limit=100')).body.data;
    expect(inA.some((entry: { object_id: string }) => entry.object_id === invited.body.invitation_id), 'org A hears nothing of B').to.equal(false);
  });

  it('signed in as the invited account, one click joins (also without a password); signed in as someone else, it does not', async () => {
    const linkOnly = await consoleSession(service, orgA.orgId, 'member');
    const invited = await invite(orgB, linkOnly.email);

    const stranger = await consoleSession(service, orgA.orgId, 'admin');
    const page = await invitationForm(invited.body.invite_url, stranger.cookie);
    expect(page.html).to.contain('data-testid="other-account"');
    const refused = await accept(invited.body.invite_url, { session: stranger });
    expect(refused.status).to.equal(403);
    expect(await membersOf(orgB)).to.not.include(linkOnly.email.toLowerCase());
    // A password proves nothing for an account that has none.
    const guessed = await accept(invited.body.invite_url, { password: 'any password at all' });
    expect(guessed.status).to.equal(401);

    const joined = await accept(invited.body.invite_url, { session: linkOnly });
    expect(joined.status, joined.html).to.equal(302);
    expect((await me(joined.cookie!)).body).to.include({ org_id: orgB.orgId, user_id: linkOnly.userId, role: 'member' });
    expect((await me(linkOnly.cookie)).status, 'the sign-in it was accepted from ended').to.equal(401);
  });

  it('an address without an account sets one up from the link; inviting again replaces the link; a revoked link stops at once', async () => {
    const email = `new-${Date.now()}@example.com`;
    const first = await invite(orgB, email);
    const second = await invite(orgB, email, 'admin');
    expect((await invitationForm(first.body.invite_url)).status, 'the replaced link').to.equal(404);
    const open = await service.api(orgB.key, 'GET', '/v1/invitations');
    const listed = open.body.data.filter((i: { email: string }) => i.email === email);
    expect(listed).to.have.length(1);
    expect(listed[0]).to.include({ invitation_id: second.body.invitation_id, role: 'admin' }).and.not.have.property('invite_url');

    expect((await accept(second.body.invite_url, { password: 'short' })).status).to.equal(400);
    const joined = await accept(second.body.invite_url, { password: 'a brand new password' });
    expect(joined.status).to.equal(302);
    expect((await me(joined.cookie!)).body).to.include({ org_id: orgB.orgId, role: 'admin' });
    const again = await signIn(email, 'a brand new password');
    expect(again.status).to.equal(302);

    const revokedEmail = `revoked-${Date.now()}@example.com`;
    const revoking = await invite(orgB, revokedEmail);
    const revoked = await service.api(orgB.key, 'DELETE', `/v1/invitations/${revoking.body.invitation_id}`);
    expect(revoked.status).to.equal(200);
    expect((await invitationForm(revoking.body.invite_url)).status).to.equal(404);
    expect((await accept(revoking.body.invite_url, { password: 'a brand new password' })).status).to.equal(404);
    expect((await service.api(orgB.key, 'DELETE', `/v1/invitations/${revoking.body.invitation_id}`)).status).to.equal(404);
    expect((await service.api(orgA.key, 'DELETE', `/v1/invitations/${second.body.invitation_id}`)).status, 'another org\'s invitation').to.equal(404);
    expect((await invite(orgB, email)).body.error.code, 'already a member').to.equal('already_member');
  });

  it('signing in names the org, or the person chooses among their own orgs; switching reaches only their own', async () => {
    const person = await personWithPassword(orgA.orgId, 'member', 'two org password');
    const joined = await accept((await invite(orgB, person.email)).body.invite_url, { password: 'two org password' });
    expect(joined.status).to.equal(302);

    const chooser = await signIn(person.email, 'two org password');
    expect(chooser.status).to.equal(302);
    expect(chooser.location).to.equal('/console/orgs?next=%2Fconsole%2Ftasks');
    const orgs = await (await fetch(`${service.baseUrl}/console/orgs`, { headers: { cookie: chooser.cookie! } })).text();
    expect(orgs).to.contain('Org A').and.to.contain('Org B');
    expect(orgs.match(/name="org_id" value="[^"]+"/g)!.map((field) => field.slice(21, -1)).sort()).to.deep.equal([orgA.orgId, orgB.orgId].sort());

    const csrf = (await me(chooser.cookie!)).status === 200 ? (await service.running.container.users.signedIn(chooser.cookie!.slice('deskhand_console='.length)))!.csrfToken : '';
    const switchTo = (orgId: string, cookie: string) =>
      fetch(`${service.baseUrl}/console/orgs/switch`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: new URLSearchParams({ _csrf: csrf, org_id: orgId, next: '/console/tasks' }).toString(),
      });
    const stranger = await service.newOrg('Org C');
    const notMine = await switchTo(stranger.orgId, chooser.cookie!);
    expect(notMine.status).to.equal(404);
    expect(consoleCookie(notMine)).to.equal(undefined);
    const switched = await switchTo(orgB.orgId, chooser.cookie!);
    expect(switched.status).to.equal(302);
    expect((await me(consoleCookie(switched)!)).body).to.include({ org_id: orgB.orgId });
    expect((await me(chooser.cookie!)).status, 'the sign-in switched from ended').to.equal(401);

    const named = await signIn(person.email, 'two org password', orgB.orgId);
    expect(named.location).to.equal('/console/tasks');
    expect((await me(named.cookie!)).body).to.include({ org_id: orgB.orgId });
    const namedOther = await signIn(person.email, 'two org password', stranger.orgId);
    expect(namedOther.status).to.equal(401);
  });

  it('a role change or a removal in one org takes effect at once on the person\'s sign-ins there, and not on those in their other org', async () => {
    const person = await personWithPassword(orgA.orgId, 'member', 'across orgs password');
    const inB = await accept((await invite(orgB, person.email)).body.invite_url, { password: 'across orgs password' });
    const inA = await signIn(person.email, 'across orgs password', orgA.orgId);
    const session = async (cookie: string) => ({ cookie, csrfToken: (await service.running.container.users.signedIn(cookie.slice('deskhand_console='.length)))!.csrfToken });
    const b = await session(inB.cookie!);
    const a = await session(inA.cookie!);

    expect((await service.api(null, 'POST', '/v1/runners', { name: 'not yet' }, withSession(b))).status).to.equal(403);
    expect((await service.api(orgB.key, 'PATCH', `/v1/members/${person.userId}`, { role: 'admin' })).status).to.equal(200);
    expect((await service.api(null, 'POST', '/v1/runners', { name: 'now' }, withSession(b))).status, 'at once in B').to.equal(200);
    expect((await service.api(null, 'POST', '/v1/runners', { name: 'still not' }, withSession(a))).status, 'not in A').to.equal(403);

    expect((await service.api(orgB.key, 'DELETE', `/v1/members/${person.userId}`)).status).to.equal(200);
    expect((await me(b.cookie)).status, 'signed out of B at once').to.equal(401);
    expect((await me(a.cookie)).body).to.include({ org_id: orgA.orgId, role: 'member' });
  });

  it('the migration spends unused sign-in links of people in several orgs (what the old invitation handed out), and keeps the others', async () => {
    const { db } = service.running.container;
    const single = await addMember(service, orgA.orgId, 'member');
    const double = await addMember(service, orgA.orgId, 'member');
    await db('memberships').insert({ org_id: orgB.orgId, user_id: double.userId, role: 'member' });
    const beforeDouble = await db('sign_in_links').where({ user_id: double.userId }).whereNull('used_at').count<{ count: string }[]>('* as count');
    expect(Number(beforeDouble[0]!.count)).to.equal(1);

    await spendCrossOrgLinks(db);

    expect(await db('sign_in_links').where({ user_id: double.userId }).whereNull('used_at').first()).to.equal(undefined);
    expect((await fetch(double.signInUrl, { redirect: 'manual' })).status).to.equal(401);
    expect((await fetch(single.signInUrl, { redirect: 'manual' })).status).to.equal(302);
  });
});
