import { expect } from 'chai';
import { deskhand } from '../support/cli';
import { startTestService, type TestService } from '../support/service';

describe('npx deskhand users', function () {
  this.timeout(60_000);
  let service: TestService;
  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  it('users create makes a new address a member with a sign-in link, and invites an address that already has an account', async () => {
    const first = JSON.parse((await deskhand('orgs', 'create', '--name', 'First')).stdout);
    const second = JSON.parse((await deskhand('orgs', 'create', '--name', 'Second')).stdout);
    const email = `ops-${Date.now()}@example.com`;

    const created = await deskhand('users', 'create', '--org', first.org_id, '--email', email, '--role', 'owner');
    expect(created.code, created.stderr).to.equal(0);
    const owner = JSON.parse(created.stdout);
    expect(owner).to.include({ org_id: first.org_id, email, role: 'owner', joined: 'member' });
    expect(owner.user_id).to.match(/^usr_/);
    expect(owner.sign_in_url).to.match(/\/console\/sign-in\/dhl_/);

    const again = await deskhand('users', 'create', '--org', second.org_id, '--email', email.toUpperCase(), '--role', 'admin');
    expect(again.code, again.stderr).to.equal(0);
    const invited = JSON.parse(again.stdout);
    expect(invited).to.include({ org_id: second.org_id, user_id: owner.user_id, role: 'admin', joined: 'invited' });
    expect(invited.invitation_id).to.match(/^inv_/);
    expect(invited.sign_in_url).to.match(/\/console\/invitations\/dhi_/);
    // Not a member of the second org until the person accepts.
    const members = await service.api(second.api_key, 'GET', '/v1/members');
    expect(members.body.data).to.deep.equal([]);
    const open = await service.api(second.api_key, 'GET', '/v1/invitations');
    expect(open.body.data.map((i: { invitation_id: string }) => i.invitation_id)).to.deep.equal([invited.invitation_id]);
  });
});
