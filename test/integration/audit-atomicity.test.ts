import { expect } from 'chai';
import type { Container } from '../../shared/container';
import { startTestService, waitFor, type TestService } from '../support/service';
import { connectDesktop, follow, script } from '../support/tasks';
import type { DesktopClient } from '../../shared/simulator/desktop-client';

const REFUSE_AUDIT_ROWS = `
  create function test_refuse_audit_rows() returns trigger language plpgsql as $$
    begin raise exception 'audit row refused by the test'; end $$;
  create trigger test_refuse_audit_rows before insert on audit_log for each row execute function test_refuse_audit_rows();
`;
const ALLOW_AUDIT_ROWS = 'drop trigger if exists test_refuse_audit_rows on audit_log; drop function if exists test_refuse_audit_rows()';

async function refused(change: Promise<unknown>): Promise<void> {
  const error = await change.then(
    () => null,
    (caught: Error) => caught,
  );
  expect(error?.message).to.match(/audit row refused by the test/);
}

/**
 * Every change outside the task loop and sessions is written with its audit row in one
 * transaction: when the audit row cannot be written, the change is not made either. A trigger
 * installed for these tests (and dropped after them) makes every audit insert fail.
 */
describe('audit rows commit with the change they record', () => {
  let service: TestService;
  let container: Container;
  let orgId: string;
  const team = { actor: { type: 'api_key' as const, key_id: 'key_test', name: 'test', prefix: 'dh_test_' }, requestId: 'req_audit_test' };

  before(async () => {
    service = await startTestService({}, ['web']);
    container = service.running.container;
    ({ orgId } = await service.newOrg('Audited org'));
    await container.agents.create(orgId, { agent_id: 'audited', name: 'Audited' }, team);
    await container.agentFiles.write(orgId, 'audited', 'notes.txt', 'first', { kind: 'team', ...team });
    await container.db.raw(REFUSE_AUDIT_ROWS);
  });

  after(async () => {
    await container.db.raw(ALLOW_AUDIT_ROWS);
    await service.stop();
  });

  it('creates no org (nor its key, agent or tool secret) when its audit row fails', async () => {
    await refused(container.orgs.create('Org without audit'));
    expect(await container.db('orgs').where({ name: 'Org without audit' }).first()).to.equal(undefined);
  });

  it('changes no plan, credits nothing and keeps the auto top-up settings when their audit row fails', async () => {
    const caller = { orgId, actor: team.actor, requestId: team.requestId };
    const before = await container.db('billing_accounts').where({ org_id: orgId }).first();
    await refused(container.billing.levers.setPlan(orgId, 'enterprise', caller, { operator: true }));
    await refused(container.billing.levers.credit(orgId, 500, caller));
    await refused(container.billing.levers.updateSettings(orgId, { threshold_cents: 123 }, caller));
    const after = await container.db('billing_accounts').where({ org_id: orgId }).first();
    expect(after).to.deep.equal(before);
    expect(await container.db('billing_ledger').where({ org_id: orgId })).to.deep.equal([]);
  });

  it('creates, publishes and drafts no agent change when its audit row fails', async () => {
    await refused(container.agents.create(orgId, { agent_id: 'unaudited' }, team));
    await refused(container.agents.patch(orgId, 'audited', { instructions: 'Changed.' }, team));
    await refused(container.agents.saveDraft(orgId, 'audited', { instructions: 'Drafted.' }, team));
    expect(await container.db('agents').where({ org_id: orgId, agent_id: 'unaudited' }).first()).to.equal(undefined);
    const agent = await container.agents.get(orgId, 'audited');
    expect(agent.version).to.equal(1);
    expect(agent.has_draft).to.equal(false);
  });

  it('writes and deletes no agent file when its audit row fails', async () => {
    await refused(container.agentFiles.write(orgId, 'audited', 'notes.txt', 'second', { kind: 'team', ...team }));
    await refused(container.agentFiles.delete(orgId, 'audited', 'notes.txt', { kind: 'team', ...team }));
    expect((await container.agentFiles.read(orgId, 'audited', 'notes.txt')).content).to.equal('first');
  });

  it('revokes no API key when its audit row fails', async () => {
    const { keyId } = await (async () => {
      await container.db.raw('alter table audit_log disable trigger test_refuse_audit_rows');
      try {
        return await service.newOrg('Org whose key stays');
      } finally {
        await container.db.raw('alter table audit_log enable trigger test_refuse_audit_rows');
      }
    })();
    await refused(container.apiKeys.revoke(keyId, null));
    expect((await container.db('api_keys').where({ id: keyId }).first()).revoked_at).to.equal(null);
  });

  it('rotates no tool secret and changes no webhook when its audit row fails', async () => {
    const before = await container.toolSecrets.get(orgId);
    await refused(container.toolSecrets.rotate(orgId, team));
    expect((await container.toolSecrets.get(orgId)).secret).to.equal(before.secret);

    await refused(container.webhooks.update(orgId, { events: ['task.completed'] }, team));
    expect((await container.webhooks.get(orgId)).events).to.deep.equal([]);
  });
});

/**
 * The team's answers, decisions and stops are changes of the task loop: each writes its audit row
 * in the change's own transaction, so that with audit rows refused the task stays as it was.
 */
describe('audit rows commit with the task change they record', () => {
  let service: TestService;
  let container: Container;
  let orgId: string;
  let key: string;
  const desktops: DesktopClient[] = [];
  const team = { actor: { type: 'api_key' as const, key_id: 'key_test', name: 'test', prefix: 'dh_test_' }, orgId: '' };

  before(async () => {
    // Queues of its own: jobs other suites left behind must not reach this worker.
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_REDIS_PREFIX: `audit-atomicity-${Date.now()}` }, ['web', 'worker-agent']);
    container = service.running.container;
    ({ orgId, key } = await service.newOrg('Audited tasks'));
    team.orgId = orgId;
  });

  afterEach(async () => {
    await container.db.raw(ALLOW_AUDIT_ROWS);
  });

  after(async () => {
    for (const desktop of desktops) await desktop.close();
    await service.stop();
  });

  /** A task on a new computer, followed until `until` holds (audit rows allowed meanwhile). */
  async function taskWaiting(prompt: string, until: (task: any) => boolean): Promise<{ taskId: string; task: any }> {
    const { code, client } = await connectDesktop(service, key);
    desktops.push(client);
    const started = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt });
    expect(started.status).to.equal(200);
    const { task } = await follow(service, key, started.body.task_id, until);
    return { taskId: started.body.task_id, task };
  }

  const auditRows = (taskId: string) => container.db('audit_log').where({ object_id: taskId }).whereNot({ action: 'task.created' }).select('action');

  it('records no answer to a question when its audit row fails', async () => {
    const { taskId, task } = await taskWaiting(script('ask "Which size?" "S" "M"', 'done "Size {answer}"'), (t) => t.pending?.type === 'question');
    await container.db.raw(REFUSE_AUDIT_ROWS);
    await refused(container.tasks.respond(team, taskId, { question_id: task.pending.question_id, answer: 'M' }, 'req_answer'));
    const item = await container.db('task_items').where({ id: task.pending.question_id }).first();
    expect(item.state).to.equal('open');
    const after = await container.tasks.get(orgId, taskId);
    expect(after.pending?.type).to.equal('question');
    expect(after.cursor).to.equal(task.cursor);
    expect(await auditRows(taskId)).to.deep.equal([]);
  });

  it('records no approval decision when its audit row fails', async () => {
    const { taskId, task } = await taskWaiting(script('request_approval "Send the report"', 'done "Sent"'), (t) => t.pending?.type === 'approval');
    await container.db.raw(REFUSE_AUDIT_ROWS);
    await refused(container.tasks.respond(team, taskId, { approval_id: task.pending.approval_id, decision: 'approve' }, 'req_decide'));
    const item = await container.db('task_items').where({ id: task.pending.approval_id }).first();
    expect(item.state).to.equal('open');
    expect((await container.tasks.get(orgId, taskId)).pending?.type).to.equal('approval');
    expect(await auditRows(taskId)).to.deep.equal([]);
  });

  it('does not stop a task when its audit row fails, and stops it with its audit row otherwise', async () => {
    const { taskId } = await taskWaiting(script('sleep 3600'), (t) => t.status === 'running' && t.cursor >= 3);
    await waitFor(async () => (await container.db('task_events').where({ task_id: taskId, type: 'sleep' }).first()) !== undefined, 10_000, 'the sleep');
    await container.db.raw(REFUSE_AUDIT_ROWS);
    await refused(container.tasks.stop(team, taskId, 'req_stop'));
    const running = await container.tasks.get(orgId, taskId);
    expect(running.status).to.equal('running');
    expect(await auditRows(taskId)).to.deep.equal([]);

    await container.db.raw(ALLOW_AUDIT_ROWS);
    const stopped = await container.tasks.stop(team, taskId, 'req_stop_again');
    expect(stopped.status).to.equal('stopped');
    expect(await auditRows(taskId)).to.deep.equal([{ action: 'task.stopped' }]);
  });
});
