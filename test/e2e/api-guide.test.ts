import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { DesktopClient } from '../../shared/simulator/desktop-client';
import { verifySignature } from '../../shared/http';
import { startTestService, waitFor, type TestService } from '../support/service';
import { follow, script } from '../support/tasks';
import { startReceiver, type Receiver } from '../support/receiver';

/**
 * docs/api.md's curl blocks, run as written with bash, in the order the guide gives them, against
 * a running Deskhand (scripted model, the reference desktop client connected). Between blocks the
 * test sets the variables the guide names ($SESSION_ID, $TASK_ID, …) as a reader would. `curl`
 * on the blocks' PATH is the real one with a `--write-out` to stderr added, so that the status of
 * every call is known without changing what the block prints.
 */

const GUIDE = path.join(__dirname, '..', '..', 'docs', 'api.md');
const STATUS_MARK = 'api-guide-status';

interface Block {
  name: string;
  script: string;
}

/** Every ```sh NAME block of the guide, in order. */
function guideBlocks(text: string): Block[] {
  return [...text.matchAll(/^```sh ([\w-]+)\n([\s\S]*?)^```$/gm)].map(([, name, body]) => ({ name: name!, script: body! }));
}

interface Ran {
  stdout: string;
  stderr: string;
  /** The HTTP status of each curl call the block made, in order. */
  statuses: number[];
  code: number | null;
}

describe('docs/api.md, run as written', function () {
  this.timeout(120_000);
  const guide = readFileSync(GUIDE, 'utf8');
  const blocks = new Map(guideBlocks(guide).map((block) => [block.name, block]));
  let service: TestService;
  let org: { orgId: string; key: string };
  let receiver: Receiver;
  let work: string;
  const clients: DesktopClient[] = [];
  const vars: Record<string, string> = {};
  /** What one block answered, for the blocks after it. */
  const seen: Record<string, any> = {};

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_ALLOW_PRIVATE_URLS: '1' });
    org = await service.newOrg('Guide org');
    receiver = await startReceiver();
    work = mkdtempSync(path.join(os.tmpdir(), 'api-guide-'));
    // The real curl, with each call's status written to stderr.
    const realCurl = execFileSync('bash', ['-c', 'command -v curl'], { encoding: 'utf8' }).trim();
    const bin = path.join(work, 'bin');
    execFileSync('mkdir', ['-p', bin]);
    writeFileSync(path.join(bin, 'curl'), `#!/bin/sh\nexec ${realCurl} -w '%{stderr}${STATUS_MARK} %{http_code}\\n' "$@"\n`);
    chmodSync(path.join(bin, 'curl'), 0o755);
    Object.assign(vars, { DESKHAND_URL: service.baseUrl, API_KEY: org.key, WEBHOOK_URL: receiver.url('/deskhand-hooks'), PATH: `${bin}:${process.env.PATH}` });
  });
  after(async () => {
    for (const client of clients) await client.close();
    await receiver?.close();
    await service?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Runs the guide's block NAME with bash, as written, with the variables set so far. */
  const run = (name: string): Promise<Ran> => {
    const block = blocks.get(name);
    if (!block) throw new Error(`docs/api.md has no block "sh ${name}"`);
    return new Promise((resolve, reject) => {
      const child = spawn('bash', ['-c', block.script], { cwd: work, env: { ...process.env, ...vars }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) => {
        const statuses = [...stderr.matchAll(new RegExp(`^${STATUS_MARK} (\\d+)$`, 'gm'))].map(([, status]) => Number(status));
        resolve({ stdout, stderr, statuses, code });
      });
    });
  };
  /** Runs a block of one curl call that prints a JSON answer; checks the status, returns the answer. */
  const runJson = async (name: string, status: number) => {
    const ran = await run(name);
    expect(ran.code, `${name}: ${ran.stderr}`).to.equal(0);
    expect(ran.statuses, `${name}: ${ran.stdout}`).to.deep.equal([status]);
    return (seen[name] = JSON.parse(ran.stdout));
  };
  const startTask = async (prompt: string) => {
    const started = await service.api(org.key, 'POST', `/v1/sessions/${vars.SESSION_ID}/tasks`, { prompt });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    return started.body.task_id as string;
  };

  it('has a name on every block with a curl in it, and the test runs each of them', () => {
    const fences = [...guide.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)];
    for (const [, info, body] of fences) if (body!.includes('curl')) expect(info, body).to.match(/^sh [\w-]+$/);
    expect([...blocks.keys()]).to.deep.equal([
      'me', 'create-session', 'get-session', 'start-task', 'get-task', 'follow-once', 'follow', 'respond-question', 'respond-again', 'respond-approval',
      'stop', 'recording', 'webhook-set', 'webhook-test', 'start-task-again', 'start-task-conflict', 'error-unknown-field', 'error-not-found',
    ]);
  });

  it('is linked from the README', () => {
    expect(readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8')).to.contain('](docs/api.md)');
  });

  it('Authentication: GET /v1/me names the org', async () => {
    const me = await runJson('me', 200);
    expect(me.org_id).to.equal(org.orgId);
  });

  it('Sessions: creates one, and reads it connected once the desktop client paired', async () => {
    const session = await runJson('create-session', 200);
    expect(session).to.include({ object: 'session', status: 'waiting' });
    expect(session.metadata).to.deep.equal({ customer_id: 'cus_1042' });
    expect(session.token).to.match(/^dh_sess_/);
    vars.SESSION_ID = session.session_id;
    const client = new DesktopClient({
      baseUrl: service.baseUrl, code: session.code, os: 'mac', appVersion: '1.0.20', name: 'Guide Mac', width: 1440, height: 900, accessibility: true, delayMs: 0, out: () => {},
    });
    clients.push(client);
    await client.start();
    await waitFor(async () => (await service.api(org.key, 'GET', `/v1/sessions/${session.code}`)).body.status === 'connected', 10_000, 'the session connected');
    const read = await runJson('get-session', 200);
    expect(read).to.include({ session_id: session.session_id, status: 'connected' });
  });

  it('Tasks: starts one with an Idempotency-Key, and reads it', async () => {
    const task = await runJson('start-task', 200);
    expect(task).to.include({ object: 'task', session_id: vars.SESSION_ID, status: 'queued', done: false, request_id: 'order-1042-size' });
    expect(task.metadata).to.deep.equal({ order: '1042' });
    vars.TASK_ID = task.task_id;
    const read = await runJson('get-task', 200);
    expect(read).to.include({ object: 'task', task_id: task.task_id });
  });

  it('Following: one page of events, then the loop that answers and approves until the task ends', async () => {
    const page = await runJson('follow-once', 200);
    expect(page.cursor).to.be.a('number').and.greaterThan(0);
    expect(page.types[0]).to.equal('started');
    const followed = await run('follow');
    expect(followed.code, followed.stderr).to.equal(0);
    // Long polls, then one respond for the question and one for the approval: all 200.
    expect(followed.statuses.length).to.be.greaterThanOrEqual(3);
    expect(followed.statuses.every((status) => status === 200), followed.stdout).to.equal(true);
    const lines = followed.stdout.trim().split('\n');
    expect(lines.some((line) => /^\d+ question: /.test(line)), followed.stdout).to.equal(true);
    expect(lines.some((line) => /^\d+ approval: /.test(line)), followed.stdout).to.equal(true);
    expect(lines.some((line) => /^\d+ completed: /.test(line)), followed.stdout).to.equal(true);
    expect(JSON.parse(lines.at(-1)!)).to.deep.equal({ status: 'completed', result: 'Ordered size S', error: null });
    const { task } = await follow(service, org.key, vars.TASK_ID!);
    expect(task).to.include({ status: 'completed', done: true, result: 'Ordered size S' });
    seen.firstTask = task;
  });

  it('Answering: a question, the same question again (409 already_answered), an approval', async () => {
    const taskId = await startTask(script('ask "Which size?" "S" "M"', 'request_approval "Pay 20 EUR" purchase', 'done "Size {answer}"'));
    const asked = await follow(service, org.key, taskId, (task) => task.pending?.type === 'question');
    Object.assign(vars, { TASK_ID: taskId, QUESTION_ID: asked.task.pending.question_id });
    const answered = await runJson('respond-question', 200);
    expect(answered).to.include({ object: 'task', task_id: taskId });
    expect(answered.pending?.question_id).to.not.equal(vars.QUESTION_ID);
    const again = await runJson('respond-again', 409);
    expect(again.error).to.include({ type: 'conflict', code: 'already_answered', answered_by: 'operator' });
    const waiting = await follow(service, org.key, taskId, (task) => task.pending?.type === 'approval');
    vars.APPROVAL_ID = waiting.task.pending.approval_id;
    const decided = await runJson('respond-approval', 200);
    expect(decided.pending).to.equal(null);
    const { task, events } = await follow(service, org.key, taskId);
    expect(task).to.include({ status: 'completed', result: 'Size M' });
    expect(events.find((event) => event.type === 'decision')?.data).to.include({ decision: 'approve', note: 'Checked with the customer' });
  });

  it('Stopping: a running task ends stopped', async () => {
    const taskId = await startTask(script('open Notes', 'sleep 3600'));
    await follow(service, org.key, taskId, (task) => task.status === 'running');
    vars.TASK_ID = taskId;
    const stopped = await runJson('stop', 200);
    expect(stopped).to.include({ task_id: taskId, status: 'stopped', done: true });
  });

  it('Recordings: downloads the first frame of a task as a PNG', async () => {
    vars.TASK_ID = seen.firstTask.task_id;
    const ran = await run('recording');
    expect(ran.code, ran.stderr).to.equal(0);
    expect(ran.statuses).to.deep.equal([200]);
    const frame = path.join(work, 'frame-1.png');
    expect(existsSync(frame)).to.equal(true);
    expect(readFileSync(frame).subarray(0, 8).toString('hex')).to.equal('89504e470d0a1a0a');
  });

  it('Webhooks: sets the endpoint, whose secret signs the test event it receives', async () => {
    const endpoint = await runJson('webhook-set', 200);
    expect(endpoint).to.include({ object: 'webhook', url: vars.WEBHOOK_URL });
    expect(endpoint.secret).to.match(/^whsec_/);
    const delivery = await runJson('webhook-test', 200);
    expect(delivery).to.be.an('object');
    const [received] = await receiver.waitForRequests(1, { filter: (request) => JSON.parse(request.body).type === 'webhook.test' });
    expect(verifySignature(received!.rawBody, String(received!.headers['service-signature']), endpoint.secret)).to.equal(true);
  });

  it('Retrying safely: the same key returns the first task; with another request, 409 idempotency_conflict', async () => {
    const again = await runJson('start-task-again', 200);
    expect(again).to.include({ task_id: seen.firstTask.task_id, status: 'completed' });
    const conflict = await runJson('start-task-conflict', 409);
    expect(conflict.error).to.include({ type: 'conflict', code: 'idempotency_conflict', task_id: seen.firstTask.task_id });
  });

  it('Errors: an unknown field is a 400 naming it; an unknown task a 404', async () => {
    const unknown = await runJson('error-unknown-field', 400);
    expect(unknown.error).to.include({ type: 'invalid_request' });
    expect(unknown.error.message).to.equal('body has an unknown field "promt"; did you mean "prompt"?');
    expect(guide).to.contain(unknown.error.message);
    const missing = await runJson('error-not-found', 404);
    expect(missing.error).to.include({ type: 'not_found' });
  });
});
