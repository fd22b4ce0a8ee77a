import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { testEnv } from '../support/environment';
import { startTestService, type TestService } from '../support/service';

const run = promisify(execFile);
const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');

async function deskhand(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { env: { ...process.env, ...testEnv() } });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout: string; stderr: string; code: number };
    return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
  }
}

describe('npx deskhand', function () {
  this.timeout(60_000);
  let service: TestService;
  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  it('orgs create prints one JSON object with org_id and a working api_key', async () => {
    const { stdout, code } = await deskhand('orgs', 'create', '--name', 'Acme');
    expect(code).to.equal(0);
    const created = JSON.parse(stdout);
    expect(created.org_id).to.match(/^org_/);
    expect(created.api_key).to.match(/^dh_test_/);
    expect((await service.api(created.api_key, 'GET', '/v1/audit_log')).status).to.equal(200);
  });

  it('keys create makes a second key, and keys revoke stops it', async () => {
    const org = JSON.parse((await deskhand('orgs', 'create', '--name', 'Keys')).stdout);
    const created = await deskhand('keys', 'create', '--org', org.org_id, '--name', 'ci');
    const key = JSON.parse(created.stdout);
    expect(key).to.include({ org_id: org.org_id, name: 'ci' });
    expect((await service.api(key.api_key, 'GET', '/v1/audit_log')).status).to.equal(200);
    const revoked = await deskhand('keys', 'revoke', key.key_id);
    expect(revoked.code).to.equal(0);
    expect(JSON.parse(revoked.stdout).revoked_at).to.be.a('string');
    expect((await service.api(key.api_key, 'GET', '/v1/audit_log')).status).to.equal(401);
    expect((await service.api(org.api_key, 'GET', '/v1/audit_log')).status).to.equal(200);
  });

  it('writes errors to stderr and exits non-zero', async () => {
    const unknownKey = await deskhand('keys', 'revoke', 'key_doesnotexist');
    expect(unknownKey.code).to.not.equal(0);
    expect(unknownKey.stderr).to.contain('No API key key_doesnotexist');
    const unknownOrg = await deskhand('keys', 'create', '--org', 'org_nope', '--name', 'x');
    expect(unknownOrg.code).to.not.equal(0);
    expect(unknownOrg.stderr).to.contain('no org org_nope');
    const missing = await deskhand('orgs', 'create');
    expect(missing.code).to.not.equal(0);
    expect(missing.stderr).to.contain("required option '--name <name>'");
    const badType = await deskhand('start', '--only', 'web,worker-nope');
    expect(badType.code).to.not.equal(0);
    expect(badType.stderr).to.contain('unknown process type "worker-nope"');
  });

  it('refuses a bad configuration with a message naming the variable', async () => {
    const { code, stderr } = await (async () => {
      try {
        await run(process.execPath, [bin, 'migrate'], { env: { ...process.env, ...testEnv({ PORT: 'x' }) } });
        return { code: 0, stderr: '' };
      } catch (error) {
        return error as { code: number; stderr: string };
      }
    })();
    expect(code).to.not.equal(0);
    expect(stderr).to.contain('configuration: PORT must be a whole number');
  });
});
