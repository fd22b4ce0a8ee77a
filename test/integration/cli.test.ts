import { expect } from 'chai';
import { testEnv } from '../support/environment';
import { deskhand, DESKHAND_BIN, run } from '../support/cli';
import { startTestService, waitFor, type TestService } from '../support/service';
import { RawRunner } from '../support/raw-runner';

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

  it('runners create --cloud prints a runner_id and token once; the cloud runner is visible to every org and connects', async () => {
    const { stdout, code } = await deskhand('runners', 'create', '--cloud', '--name', 'Cloud EU');
    expect(code).to.equal(0);
    const created = JSON.parse(stdout);
    expect(created).to.include({ object: 'runner', scope: 'cloud', name: 'Cloud EU', status: 'offline' });
    expect(created.runner_id).to.match(/^rn_/);
    expect(created.token).to.match(/^dhr_/);
    for (const name of ['First', 'Second']) {
      const org = JSON.parse((await deskhand('orgs', 'create', '--name', name)).stdout);
      const read = await service.api(org.api_key, 'GET', `/v1/runners/${created.runner_id}`);
      expect(read.status).to.equal(200);
      expect(read.body).to.include({ scope: 'cloud', name: 'Cloud EU' });
      expect(read.body).to.not.have.property('token');
    }
    const runner = new RawRunner(service.baseUrl);
    try {
      expect(await runner.hello(created.token)).to.include({ ok: true, runner_id: created.runner_id, scope: 'cloud' });
    } finally {
      runner.close();
    }
  });

  it('runners revoke disconnects a cloud runner at once, refuses its token after, and audits it with no org', async () => {
    const created = JSON.parse((await deskhand('runners', 'create', '--cloud', '--name', 'Cloud to revoke')).stdout);
    const runner = new RawRunner(service.baseUrl);
    try {
      expect(await runner.hello(created.token)).to.include({ ok: true, runner_id: created.runner_id });
      const revoked = await deskhand('runners', 'revoke', created.runner_id);
      expect(revoked.code, revoked.stderr).to.equal(0);
      expect(JSON.parse(revoked.stdout)).to.include({ runner_id: created.runner_id, scope: 'cloud', status: 'offline' });
      await waitFor(() => !runner.socket.connected, 5_000, 'the runner to be disconnected');
    } finally {
      runner.close();
    }
    const again = new RawRunner(service.baseUrl);
    try {
      expect(await again.hello(created.token)).to.include({ ok: false, code: 'revoked' });
    } finally {
      again.close();
    }
    const org = JSON.parse((await deskhand('orgs', 'create', '--name', 'After the revoke')).stdout);
    expect((await service.api(org.api_key, 'GET', `/v1/runners/${created.runner_id}`)).status).to.equal(404);
    const audit = await service.running.container.db('audit_log').where({ object_id: created.runner_id }).orderBy('seq').select('action', 'org_id');
    expect(audit).to.deep.equal([
      { action: 'runner.created', org_id: null },
      { action: 'runner.deleted', org_id: null },
    ]);
    const twice = await deskhand('runners', 'revoke', created.runner_id);
    expect(twice.code).to.not.equal(0);
    expect(twice.stderr).to.contain(`No runner ${created.runner_id}`);
  });

  it('writes errors to stderr and exits non-zero', async () => {
    const notCloud = await deskhand('runners', 'create', '--name', 'x');
    expect(notCloud.code).to.not.equal(0);
    expect(notCloud.stderr).to.contain('only cloud runners are made here (--cloud)');
    const blank = await deskhand('runners', 'create', '--cloud', '--name', '  ');
    expect(blank.code).to.not.equal(0);
    expect(blank.stderr).to.contain('name must be 1 to 80 characters');
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
        await run(process.execPath, [DESKHAND_BIN, 'migrate'], { env: { ...process.env, ...testEnv({ PORT: 'x' }) } });
        return { code: 0, stderr: '' };
      } catch (error) {
        return error as { code: number; stderr: string };
      }
    })();
    expect(code).to.not.equal(0);
    expect(stderr).to.contain('configuration: PORT must be a whole number');
  });
});

describe('npx deskhand start on a fresh development database', function () {
  this.timeout(90_000);

  /** Runs `deskhand start --only web` until it prints `until`, then stops it with SIGTERM. */
  async function startUntil(env: Record<string, string>, until: RegExp): Promise<{ stdout: string; code: number | null }> {
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [DESKHAND_BIN, 'start', '--only', 'web'], { env: { ...process.env, ...env } });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', () => undefined);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${until} in: ${stdout.slice(-2000)}`)), 60_000);
      child.stdout.on('data', () => {
        if (until.test(stdout)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const code = await new Promise<number | null>((resolve) => {
      child.once('exit', (exitCode) => resolve(exitCode));
      child.kill('SIGTERM');
    });
    return { stdout, code };
  }

  it('creates a development org, prints its key once with a curl line, and never again', async () => {
    const base = testEnv();
    const fresh = base.DATABASE_URL!.replace(/\/([^/]+)$/, '/$1_fresh');
    const env = testEnv({ DATABASE_URL: fresh, PORT: '0', LOG_LEVEL: 'info' });
    const pg = (await import('pg')).default;
    const admin = new pg.Client({ connectionString: fresh.replace(/\/[^/]+$/, '/postgres') });
    await admin.connect();
    try {
      const first = await startUntil(env, /curl -H "Authorization: Bearer (dh_test_\w+)"/);
      const key = /curl -H "Authorization: Bearer (dh_test_\w+)"/.exec(first.stdout)![1]!;
      expect(first.stdout).to.contain('Created the development org');
      expect(first.code).to.equal(0);
      const second = await startUntil(env, /deskhand started/);
      expect(second.stdout).not.to.contain('Created the development org');
      expect(second.stdout).not.to.contain(key);
      const orgs = new pg.Client({ connectionString: fresh });
      await orgs.connect();
      try {
        expect((await orgs.query('select count(*)::int as n from orgs')).rows[0].n).to.equal(1);
      } finally {
        await orgs.end();
      }
    } finally {
      await admin.query(`drop database if exists "${new URL(fresh).pathname.slice(1)}" with (force)`);
      await admin.end();
    }
  });
});
