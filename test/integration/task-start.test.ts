import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { RawDesktop } from '../support/raw-desktop';
import { RawRunner } from '../support/raw-runner';
import { startTestService, waitFor, type TestService } from '../support/service';

/**
 * POST /v1/sessions/{id}/tasks: which agent version it runs (`agent_version`, the same rule as a
 * test run's), and what it says when the session cannot take a task.
 */
describe('POST /v1/sessions/{session_id}/tasks', () => {
  let service: TestService;
  let org: { orgId: string; key: string };
  const desktops: RawDesktop[] = [];
  const api = (method: string, path: string, body?: unknown) => service.api(org.key, method, path, body);
  async function ok(method: string, path: string, body?: unknown) {
    const response = await api(method, path, body);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    return response.body;
  }
  /** A session of `agentId` with a computer connected. */
  async function connected(agentId?: string): Promise<string> {
    const { code } = await ok('POST', '/v1/sessions', agentId ? { agent_id: agentId } : {});
    const desktop = new RawDesktop(service.baseUrl);
    desktops.push(desktop);
    expect((await desktop.hello(code)).ok).to.equal(true);
    return code;
  }
  const storedConfig = async (taskId: string) => (await service.running.container.db('tasks').where({ id: taskId }).first()).agent_config;

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' }, ['web']);
    org = await service.newOrg('Task start org');
    await ok('POST', '/v1/agents', { agent_id: 'versioned', instructions: 'Version one.' });
    await ok('PATCH', '/v1/agents/versioned', { instructions: 'Version two.' });
    await ok('PATCH', '/v1/agents/versioned/draft', { instructions: 'The draft.' });
  });
  afterEach(() => {
    for (const desktop of desktops.splice(0)) desktop.close();
  });
  after(async () => service?.stop());

  describe('agent_version', () => {
    it('runs the published version by number, an earlier one included, and the task answers that number', async () => {
      const earlier = await ok('POST', `/v1/sessions/${await connected('versioned')}/tasks`, { prompt: 'done "x"', agent_version: 1 });
      expect(earlier).to.include({ agent_id: 'versioned', agent_version: 1, agent_draft: false });
      expect((await storedConfig(earlier.task_id)).instructions).to.equal('Version one.');
      const current = await ok('POST', `/v1/sessions/${await connected('versioned')}/tasks`, { prompt: 'done "x"', agent_version: 2 });
      expect(current).to.include({ agent_version: 2, agent_draft: false });
      expect((await storedConfig(current.task_id)).instructions).to.equal('Version two.');
      const published = await ok('POST', `/v1/sessions/${await connected('versioned')}/tasks`, { prompt: 'done "x"', agent_version: 'published' });
      expect(published).to.include({ agent_version: 2, agent_draft: false });
      const draft = await ok('POST', `/v1/sessions/${await connected('versioned')}/tasks`, { prompt: 'done "x"', agent_version: 'draft' });
      expect(draft).to.include({ agent_version: 2, agent_draft: true });
      expect((await storedConfig(draft.task_id)).instructions).to.equal('The draft.');
    });

    it('answers 404 naming a version the agent does not have, and 400 for what is not a version', async () => {
      const code = await connected('versioned');
      const missing = await api('POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "x"', agent_version: 3 });
      expect(missing.status).to.equal(404);
      expect(missing.body.error).to.deep.equal({ type: 'not_found', message: 'Agent versioned has no version 3; its published version is 2' });
      for (const bad of [0, -1, 1.5, 'latest', '2', null]) {
        const refused = await api('POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "x"', agent_version: bad });
        expect(refused.status, JSON.stringify(bad)).to.equal(400);
        expect(refused.body.error.message, JSON.stringify(bad)).to.match(/^agent_version /);
      }
      expect((await service.running.container.db('tasks').where({ session_id: code })).length).to.equal(0);
    });

    it('the same request_id returns the same task for the same version, and 409 idempotency_conflict for another', async () => {
      const code = await connected('versioned');
      const first = await ok('POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "x"', agent_version: 1, request_id: 'versioned-1' });
      const again = await ok('POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "x"', agent_version: 1, request_id: 'versioned-1' });
      expect(again.task_id).to.equal(first.task_id);
      const other = await api('POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "x"', agent_version: 2, request_id: 'versioned-1' });
      expect(other.status).to.equal(409);
      expect(other.body.error).to.include({ code: 'idempotency_conflict', task_id: first.task_id });
      expect(other.body.error.message).to.contain('agent_version');
    });
  });

  describe('POST /v1/test_runs: the same rule', () => {
    it('tries a published version by number, an earlier one included; 404 naming one the agent does not have', async () => {
      const image = `task-start-${randomBytes(4).toString('hex')}`;
      const { token } = await ok('POST', '/v1/runners', { name: 'images' });
      const runner = new RawRunner(service.baseUrl);
      try {
        expect((await runner.hello(token, { images: [image] })).ok).to.equal(true);
        const [aCase] = (await ok('POST', '/v1/test_cases/batch', { cases: [{ name: 'Quick', prompt: 'done "x"', start_state: image, success: { check_script: 'true' } }] })).data;
        const made: string[] = [];
        const run = async (agent_version: unknown) => {
          const response = await api('POST', '/v1/test_runs', { test_case_ids: [aCase.test_case_id], agent_id: 'versioned', agent_version });
          if (response.status === 200) made.push(response.body.test_run_id);
          return response;
        };
        const earlier = await run(1);
        expect(earlier.status, JSON.stringify(earlier.body)).to.equal(200);
        expect(earlier.body).to.include({ agent_version: 1, draft: false });
        expect((await run('published')).body).to.include({ agent_version: 2, draft: false });
        expect((await run('draft')).body).to.include({ agent_version: 2, draft: true });
        const missing = await run(3);
        expect(missing.status).to.equal(404);
        expect(missing.body.error).to.deep.equal({ type: 'not_found', message: 'Agent versioned has no version 3; its published version is 2' });
        expect((await run(0)).status).to.equal(400);
        // Nothing tries them here (no evals worker): cancelled, they leave no work behind.
        for (const runId of made) await ok('POST', `/v1/test_runs/${runId}/cancel`);
      } finally {
        runner.close();
      }
    });
  });

  describe('a session that cannot take a task', () => {
    it('one whose computer dropped: 409 not_connected saying it has been offline since when, not that it never paired', async () => {
      const { code } = await ok('POST', '/v1/sessions', {});
      const never = await api('POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "x"' });
      expect(never.status).to.equal(409);
      expect(never.body.error.message).to.equal(`No computer is connected to session ${code}: none has paired yet; the person must enter the code in the app first`);
      const desktop = new RawDesktop(service.baseUrl);
      desktops.push(desktop);
      await desktop.hello(code);
      desktop.close();
      await waitFor(async () => (await ok('GET', `/v1/sessions/${code}`)).status === 'disconnected', 5000, 'the session disconnected');
      const { last_active_at: since } = await ok('GET', `/v1/sessions/${code}`);
      const dropped = await api('POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "x"' });
      expect(dropped.status).to.equal(409);
      expect(dropped.body.error).to.deep.equal({
        type: 'conflict',
        code: 'not_connected',
        message: `No computer is connected to session ${code}: its computer has been offline since ${since}; the person must open the app again to reconnect`,
      });
    });

    it('an expired one: 404 saying it expired, and when, while GET still reads it', async () => {
      const { code } = await ok('POST', '/v1/sessions', {});
      const { expires_at: at } = await ok('POST', `/v1/sessions/${code}/expire`);
      const refused = await api('POST', `/v1/sessions/${code}/tasks`, { prompt: 'done "x"' });
      expect(refused.status).to.equal(404);
      expect(refused.body.error).to.deep.equal({
        type: 'not_found',
        message: `Session ${code} expired at ${at}; its code no longer works and it takes no tasks. Create a new session for the person.`,
      });
      expect((await ok('GET', `/v1/sessions/${code}`)).status).to.equal('expired');
      const unknown = await api('POST', '/v1/sessions/ZZZZ-ZZZZ/tasks', { prompt: 'done "x"' });
      expect(unknown.body.error).to.deep.equal({ type: 'not_found', message: 'No session ZZZZ-ZZZZ' });
    });
  });
});
