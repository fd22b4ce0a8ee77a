import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { DesktopClient } from '../../shared/simulator/desktop-client';
import { verifySignature } from '../../shared/http';
import { startTestService, waitFor, type TestService } from '../support/service';
import { startReceiver, type Receiver } from '../support/receiver';

/**
 * docs/api.md's blocks, run as a reader pastes them: every block as written, in the order the
 * guide gives them, into one bash shell (what one block sets, `$SESSION_ID`, `$TASK_ID`, the
 * `follow_task` function, …, the next ones use), against a running Deskhand (scripted model, the
 * reference desktop client connected where the guide says to run it). The test sets only what the
 * guide asks the reader to set ($DESKHAND_URL, $API_KEY, $WEBHOOK_URL). `curl` on the shell's
 * PATH is the real one with a `--write-out` to stderr added, so that the status of every call is
 * known without changing what the block prints.
 */

const GUIDE = path.join(__dirname, '..', '..', 'docs', 'api.md');
const STATUS_MARK = 'api-guide-status';
const END_MARK = 'api-guide-block-end';

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
  /** The exit status of the block's last command. */
  code: number;
}

/**
 * One bash process that blocks are pasted into, one at a time: each is written to a file and
 * sourced in the shell itself (so its variables and functions stay, as in a terminal), with
 * nothing on its stdin; a mark on stdout and stderr after it says it is done.
 */
class Shell {
  private readonly child: ChildProcessWithoutNullStreams;
  private stdout = '';
  private stderr = '';
  private count = 0;

  constructor(private readonly cwd: string, env: Record<string, string>) {
    this.child = spawn('bash', ['--norc', '--noprofile'], { cwd, env: { ...process.env, ...env } });
    this.child.stdout.on('data', (chunk: Buffer) => (this.stdout += chunk.toString('utf8')));
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
  }

  async paste(block: Block): Promise<Ran> {
    const file = path.join(this.cwd, `block-${++this.count}.sh`);
    writeFileSync(file, block.script);
    const mark = `${END_MARK} ${this.count}`;
    this.child.stdin.write(`source ${file} < /dev/null; printf '\\n${mark} %d\\n' $?; printf '${mark}\\n' >&2\n`);
    const done = new RegExp(`\n?${mark} (\\d+)\n$`);
    await waitFor(() => done.test(this.stdout) && this.stderr.endsWith(`${mark}\n`), 90_000, `the block "${block.name}" to end`);
    const code = Number(done.exec(this.stdout)![1]);
    const stdout = this.stdout.replace(done, '');
    const stderr = this.stderr.slice(0, -`${mark}\n`.length);
    this.stdout = '';
    this.stderr = '';
    const statuses = [...stderr.matchAll(new RegExp(`^${STATUS_MARK} (\\d+)$`, 'gm'))].map(([, status]) => Number(status));
    return { stdout, stderr, statuses, code };
  }

  close(): void {
    this.child.stdin.end();
  }
}

describe('docs/api.md, run as written', function () {
  this.timeout(120_000);
  const guide = readFileSync(GUIDE, 'utf8');
  const order = guideBlocks(guide);
  let service: TestService;
  let org: { orgId: string; key: string };
  let receiver: Receiver;
  let work: string;
  let shell: Shell;
  let client: DesktopClient | undefined;
  /** How many of the guide's blocks were pasted so far (they go in order, none left out). */
  let pasted = 0;
  /** The reader's own variables, the only ones the test sets. */
  let readerVars: Record<string, string>;

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
    readerVars = { DESKHAND_URL: service.baseUrl, API_KEY: org.key, WEBHOOK_URL: receiver.url('/deskhand-hooks') };
    shell = new Shell(work, { ...readerVars, PATH: `${bin}:${process.env.PATH}` });
  });
  after(async () => {
    shell?.close();
    await client?.close();
    await receiver?.close();
    await service?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Pastes the guide's next block, which must be NAME: the test goes through the guide in its order. */
  const paste = async (name: string): Promise<Ran> => {
    const block = order[pasted];
    expect(block?.name, `the block after "${order[pasted - 1]?.name}"`).to.equal(name);
    pasted += 1;
    const ran = await shell.paste(block!);
    expect(ran.code, `${name}: ${ran.stdout}\n${ran.stderr}`).to.equal(0);
    return ran;
  };
  /** Pastes a block that prints one JSON answer; checks the statuses of its calls, returns the answer. */
  const pasteJson = async (name: string, statuses: number[]) => {
    const ran = await paste(name);
    expect(ran.statuses, `${name}: ${ran.stdout}`).to.deep.equal(statuses);
    return JSON.parse(ran.stdout);
  };
  /** A variable of the shell, as the blocks so far left it. */
  const shellVar = async (name: string): Promise<string> => (await shell.paste({ name: `echo $${name}`, script: `printf '%s' "$${name}"` })).stdout;
  /** The task as the service holds it. */
  const readTask = async (taskId: string) => (await service.api(org.key, 'GET', `/v1/tasks/${taskId}`)).body;

  it('has a name on every block with a curl in it, and asks the reader to set only what the test sets', () => {
    const fences = [...guide.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)];
    for (const [, info, body] of fences) if (body!.includes('curl')) expect(info, body).to.match(/^sh [\w-]+$/);
    expect(order.map((block) => block.name)).to.deep.equal([
      'me', 'create-session', 'get-session', 'start-task', 'get-task', 'follow-once', 'follow', 'respond-question', 'respond-again', 'follow-on',
      'respond-approval', 'follow-to-end', 'recording', 'start-long-task', 'stop', 'webhook-set', 'webhook-test', 'start-task-again',
      'start-task-conflict', 'error-unknown-field', 'error-not-found',
    ]);
    // Every variable a block reads is the reader's own or set by an earlier block.
    const set = new Set(Object.keys(readerVars));
    for (const block of order) {
      for (const line of block.script.split('\n')) {
        for (const [, used] of line.matchAll(/\$\{?([A-Z][A-Z_]+)\b/g)) expect(set.has(used!), `${block.name} reads $${used} before any block sets it`).to.equal(true);
        const assigned = /^([A-Z][A-Z_]+)=/.exec(line)?.[1];
        if (assigned) set.add(assigned);
      }
    }
  });

  it('is linked from the README', () => {
    expect(readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8')).to.contain('](docs/api.md)');
  });

  it('Authentication: GET /v1/me names the org', async () => {
    const me = await pasteJson('me', [200]);
    expect(me.org_id).to.equal(org.orgId);
  });

  it('Sessions: creates one (setting $SESSION_ID), and reads it connected once the desktop client paired', async () => {
    const session = await pasteJson('create-session', [200]);
    expect(session).to.include({ object: 'session', status: 'waiting' });
    expect(session.metadata).to.deep.equal({ customer_id: 'cus_1042' });
    expect(session.token).to.match(/^dh_sess_/);
    expect(await shellVar('SESSION_ID')).to.equal(session.session_id);
    // The reader's other terminal: `npx deskhand desktop --code CODE`, no --answer, no --approve.
    client = new DesktopClient({
      baseUrl: service.baseUrl, code: session.code, os: 'mac', appVersion: '1.0.20', name: 'Guide Mac', width: 1440, height: 900, accessibility: true, delayMs: 0, out: () => {},
    });
    await client.start();
    await waitFor(async () => (await service.api(org.key, 'GET', `/v1/sessions/${session.code}`)).body.status === 'connected', 10_000, 'the session connected');
    const read = await pasteJson('get-session', [200]);
    expect(read).to.include({ session_id: session.session_id, status: 'connected' });
  });

  it('Tasks: starts one with an Idempotency-Key (setting $TASK_ID), and reads it', async () => {
    const task = await pasteJson('start-task', [200]);
    expect(task).to.include({ object: 'task', status: 'queued', done: false, request_id: 'order-1042-size' });
    expect(task.metadata).to.deep.equal({ order: '1042' });
    expect(await shellVar('TASK_ID')).to.equal(task.task_id);
    const read = await pasteJson('get-task', [200]);
    expect(read).to.include({ object: 'task', task_id: task.task_id });
  });

  it('Following: one page of events, then follow_task up to the question it waits for', async () => {
    const page = await pasteJson('follow-once', [200]);
    expect(page.cursor).to.be.a('number').and.greaterThan(0);
    expect(page.types[0]).to.equal('started');
    const followed = await paste('follow');
    expect(followed.statuses.length).to.be.greaterThanOrEqual(1);
    expect(followed.statuses.every((status) => status === 200), followed.stdout).to.equal(true);
    const lines = followed.stdout.trim().split('\n');
    expect(lines[0]).to.match(/^1 started: /);
    expect(lines.some((line) => /^\d+ question: /.test(line)), followed.stdout).to.equal(true);
    expect(lines.at(-1)).to.match(/^waiting for: \{/);
    expect(JSON.parse(lines.at(-1)!.slice('waiting for: '.length))).to.include({ type: 'question', question: 'Which size?' });
  });

  it('Answering: the question (M), the same question again (409 already_answered), the approval, then the task to its end', async () => {
    const taskId = await shellVar('TASK_ID');
    const answered = await pasteJson('respond-question', [200]);
    expect(answered).to.include({ object: 'task', task_id: taskId, pending: null });
    const again = await pasteJson('respond-again', [409]);
    expect(again.error).to.include({ type: 'conflict', code: 'already_answered', answered_by: 'operator' });
    const on = await paste('follow-on');
    expect(on.stdout).to.match(/^\d+ answer: /m);
    const waiting = on.stdout.trim().split('\n').at(-1)!;
    expect(waiting).to.match(/^waiting for: \{/);
    expect(JSON.parse(waiting.slice('waiting for: '.length))).to.include({ type: 'approval', what: 'Send the order' });
    const decided = await pasteJson('respond-approval', [200]);
    expect(decided.pending).to.equal(null);
    const end = await paste('follow-to-end');
    const lines = end.stdout.trim().split('\n');
    expect(lines.some((line) => /^\d+ decision: /.test(line)), end.stdout).to.equal(true);
    expect(lines.some((line) => /^\d+ completed: /.test(line)), end.stdout).to.equal(true);
    expect(JSON.parse(lines.at(-1)!)).to.deep.equal({ status: 'completed', result: 'Ordered size M', error: null });
    const task = await readTask(taskId);
    expect(task).to.include({ status: 'completed', done: true, result: 'Ordered size M' });
    const events = (await service.api(org.key, 'GET', `/v1/tasks/${taskId}/events?after=0`)).body.data as Array<{ type: string; data: any }>;
    expect(events.find((event) => event.type === 'decision')?.data).to.include({ decision: 'approve', note: 'Checked with the customer' });
  });

  it('Recordings: downloads the first frame of the task as a PNG', async () => {
    const ran = await paste('recording');
    expect(ran.statuses).to.deep.equal([200]);
    const frame = path.join(work, 'frame-1.png');
    expect(existsSync(frame)).to.equal(true);
    expect(readFileSync(frame).subarray(0, 8).toString('hex')).to.equal('89504e470d0a1a0a');
  });

  it('Stopping: starts a long task (setting $TASK_ID), and stops it', async () => {
    const firstTaskId = await shellVar('TASK_ID');
    const started = await paste('start-long-task');
    expect(started.statuses).to.deep.equal([200]);
    const taskId = await shellVar('TASK_ID');
    expect(taskId).to.match(/^task_/).and.not.equal(firstTaskId);
    const stopped = await pasteJson('stop', [200]);
    expect(stopped).to.include({ task_id: taskId, status: 'stopped', done: true });
  });

  it('Webhooks: sets the endpoint, whose secret signs the test event it receives', async () => {
    const endpoint = await pasteJson('webhook-set', [200]);
    expect(endpoint).to.include({ object: 'webhook', url: readerVars.WEBHOOK_URL });
    expect(endpoint.secret).to.match(/^whsec_/);
    const delivery = await pasteJson('webhook-test', [200]);
    expect(delivery).to.be.an('object');
    const [received] = await receiver.waitForRequests(1, { filter: (request) => JSON.parse(request.body).type === 'webhook.test' });
    expect(verifySignature(received!.rawBody, String(received!.headers['service-signature']), endpoint.secret)).to.equal(true);
  });

  it('Retrying safely: the same key returns the first task; with another request, 409 idempotency_conflict', async () => {
    const first = (await service.api(org.key, 'GET', `/v1/tasks?session_id=${await shellVar('SESSION_ID')}`)).body.data.find((task: { request_id: string }) => task.request_id === 'order-1042-size');
    const again = await pasteJson('start-task-again', [200]);
    expect(again).to.include({ task_id: first.task_id, status: 'completed' });
    const conflict = await pasteJson('start-task-conflict', [409]);
    expect(conflict.error).to.include({ type: 'conflict', code: 'idempotency_conflict', task_id: first.task_id });
  });

  it('Errors: an unknown field is a 400 naming it; an unknown task a 404', async () => {
    const unknown = await pasteJson('error-unknown-field', [400]);
    expect(unknown.error).to.include({ type: 'invalid_request' });
    expect(unknown.error.message).to.equal('body has an unknown field "promt"; did you mean "prompt"?');
    expect(guide).to.contain(unknown.error.message);
    const missing = await pasteJson('error-not-found', [404]);
    expect(missing.error).to.include({ type: 'not_found' });
  });

  it('went through every block of the guide, in order', () => {
    expect(pasted).to.equal(order.length);
  });
});
