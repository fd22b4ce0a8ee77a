import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { RawRunner } from '../support/raw-runner';

const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');

/** `npx deskhand evals import` as a child process against a real service. */
describe('npx deskhand evals import (a child process)', function () {
  this.timeout(60_000);
  let service: TestService;
  let org: { orgId: string; key: string };
  let runner: RawRunner;
  let dir: string;
  const image = `cli-image-${randomBytes(4).toString('hex')}`;

  before(async () => {
    service = await startTestService({}, ['web']);
    org = await service.newOrg('Evals CLI org');
    const created = (await service.api(org.key, 'POST', '/v1/runners', { name: 'images' })).body as { token: string };
    runner = new RawRunner(service.baseUrl);
    expect((await runner.hello(created.token, { images: [image] })).ok).to.equal(true);
    dir = mkdtempSync(path.join(tmpdir(), 'deskhand-evals-cli-'));
  });
  after(async () => {
    runner.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `deskhand evals ...args` to its end: exit code, stdout, stderr. */
  async function evals(args: string[], env: Record<string, string> = { DESKHAND_API_KEY: org.key, DESKHAND_BASE_URL: service.baseUrl }) {
    const { DESKHAND_API_KEY: _key, DESKHAND_BASE_URL: _url, ...inherited } = process.env;
    const child = spawn(process.execPath, [bin, 'evals', ...args], { env: { ...inherited, LOG_LEVEL: 'silent', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = await once(child, 'exit');
    return { code: code as number, stdout, stderr };
  }
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    writeFileSync(at, text);
    return at;
  };

  it('imports a YAML file of cases, then updates them by key on a second import, adding them to a set', async () => {
    const suffix = randomBytes(3).toString('hex');
    const yaml = file(
      'cases.yaml',
      `cases:
  - key: rename-${suffix}
    name: Rename a file
    prompt: Rename report.txt to final.txt
    start_state: ${image}
    success:
      check_script: test -f ~/Documents/final.txt
    tags: [files]
  - key: mail-${suffix}
    name: Send a mail
    prompt: Send Ann the minutes
    start_state: ${image}
    customer:
      persona: A busy manager
      facts:
        email: ann@example.com
    success:
      rubric: A mail to ann@example.com with the minutes attached
`,
    );
    const first = await evals(['import', yaml]);
    expect(first.code, first.stderr).to.equal(0);
    const printed = JSON.parse(first.stdout) as { created: number; updated: number; test_case_ids: string[] };
    expect(printed).to.include({ created: 2, updated: 0 });
    expect(printed.test_case_ids).to.have.length(2);
    const mail = (await service.api(org.key, 'GET', `/v1/test_cases/${printed.test_case_ids[1]}`)).body;
    expect(mail).to.deep.include({ key: `mail-${suffix}`, customer: { persona: 'A busy manager', facts: { email: 'ann@example.com' } } });

    const set = (await service.api(org.key, 'POST', '/v1/test_sets', { name: 'cli' })).body;
    const again = await evals(['import', yaml, '--set', set.test_set_id]);
    expect(again.code, again.stderr).to.equal(0);
    expect(JSON.parse(again.stdout)).to.deep.equal({ created: 0, updated: 2, test_case_ids: printed.test_case_ids });
    expect((await service.api(org.key, 'GET', `/v1/test_sets/${set.test_set_id}`)).body.cases.map((c: { test_case_id: string }) => c.test_case_id)).to.deep.equal(printed.test_case_ids);
  });

  it('imports a bare JSON list of more than 500 cases in chunks', async () => {
    const cases = Array.from({ length: 501 }, (_, i) => ({ key: `bulk-${randomBytes(3).toString('hex')}-${i}`, name: `case ${i}`, prompt: 'p', start_state: image, success: { rubric: 'r' } }));
    const result = await evals(['import', file('bulk.json', JSON.stringify(cases))]);
    expect(result.code, result.stderr).to.equal(0);
    const printed = JSON.parse(result.stdout) as { created: number; test_case_ids: string[] };
    expect(printed.created).to.equal(501);
    expect(new Set(printed.test_case_ids).size).to.equal(501);
  });

  it('exits non-zero with the service\'s message naming the case (numbered as in the file) on a refusal', async () => {
    const cases = Array.from({ length: 502 }, (_, i) => ({ name: `case ${i}`, prompt: 'p', start_state: i === 501 ? 'ss_missing' : image, success: { rubric: 'r' } }));
    const result = await evals(['import', file('bad.json', JSON.stringify({ cases }))]);
    expect(result.code).to.not.equal(0);
    expect(result.stdout).to.equal('');
    expect(result.stderr).to.contain('cases[501].start_state: no start state ss_missing');
    expect(result.stderr).to.contain('(400)');
  });

  it('says what is wrong with a file or a missing key', async () => {
    const noKey = await evals(['import', file('x.yaml', '- name: one')], { DESKHAND_BASE_URL: service.baseUrl });
    expect(noKey.code).to.not.equal(0);
    expect(noKey.stderr).to.contain('DESKHAND_API_KEY is not set');
    const notCases = await evals(['import', file('y.yaml', 'name: nothing')]);
    expect(notCases.code).to.not.equal(0);
    expect(notCases.stderr).to.contain('expected { cases: [...] } or a list of cases');
  });
});
