import { expect } from 'chai';
import { ApiError } from '../../shared/errors';
import { AGENT_FILE_LIMITS, type FileAccessor } from '../../shared/agents/agent-files.service';
import type { AgentTools } from '../../shared/agents/agent-config';
import { startTestService, type TestService } from '../support/service';

describe('agent file store', () => {
  let service: TestService;
  let org: { orgId: string; key: string; keyId: string };
  let actor: unknown;
  let counter = 0;

  before(async () => {
    service = await startTestService({}, ['web']);
    org = await service.newOrg();
    actor = { type: 'api_key', key_id: org.keyId, name: 'Default key', prefix: org.key.slice(0, 12) };
  });
  after(async () => service.stop());

  const api = (method: string, path: string, body?: unknown) => service.api(org.key, method, path, body);
  const files = () => service.running.container.agentFiles;
  const filePath = (agentId: string, path: string) => `/v1/agents/${agentId}/files/${encodeURIComponent(path)}`;
  async function newAgent(body: Record<string, unknown> = {}): Promise<string> {
    const agentId = `files-${++counter}`;
    const response = await api('POST', '/v1/agents', { agent_id: agentId, ...body });
    expect(response.status).to.equal(200);
    return agentId;
  }
  async function put(agentId: string, path: string, content: string) {
    return api('PUT', filePath(agentId, path), { content });
  }
  async function expectApiError(promise: Promise<unknown>, status: number, code?: string): Promise<ApiError> {
    try {
      await promise;
    } catch (error) {
      expect(error).to.be.instanceOf(ApiError);
      expect((error as ApiError).status).to.equal(status);
      if (code) expect((error as ApiError).code).to.equal(code);
      return error as ApiError;
    }
    throw new Error(`expected an ApiError ${status}`);
  }

  describe('through the API', () => {
    it('creates, reads, replaces, lists and deletes a file', async () => {
      const agentId = await newAgent();
      const created = await put(agentId, 'notes/todo.md', '# Todo\n- call Ana\n');
      expect(created.status).to.equal(200);
      expect(created.body).to.deep.include({ object: 'agent_file', agent_id: agentId, path: 'notes/todo.md', size_bytes: 18, created: true });
      expect(created.body.created_by).to.deep.equal(actor);
      expect(created.body).not.to.have.property('content');

      const read = await api('GET', filePath(agentId, 'notes/todo.md'));
      expect(read.status).to.equal(200);
      expect(read.body).to.deep.include({ path: 'notes/todo.md', content: '# Todo\n- call Ana\n', size_bytes: 18 });

      const replaced = await put(agentId, 'notes/todo.md', 'done');
      expect(replaced.body).to.deep.include({ created: false, size_bytes: 4 });
      expect((await api('GET', filePath(agentId, 'notes/todo.md'))).body.content).to.equal('done');

      await put(agentId, 'a.txt', 'a');
      await put(agentId, 'notes/z.txt', 'z');
      const list = await api('GET', `/v1/agents/${agentId}/files`);
      expect(list.status).to.equal(200);
      expect(list.body).to.deep.include({ has_more: false, next_cursor: null });
      expect(list.body.data.map((f: { path: string }) => f.path)).to.deep.equal(['a.txt', 'notes/todo.md', 'notes/z.txt']);
      expect(list.body.data[0]).not.to.have.property('content');
      const folder = await api('GET', `/v1/agents/${agentId}/files?folder=notes`);
      expect(folder.body.data.map((f: { path: string }) => f.path)).to.deep.equal(['notes/todo.md', 'notes/z.txt']);

      const deleted = await api('DELETE', filePath(agentId, 'notes/todo.md'));
      expect(deleted.status).to.equal(200);
      expect(deleted.body).to.deep.include({ object: 'agent_file', path: 'notes/todo.md' });
      expect((await api('GET', filePath(agentId, 'notes/todo.md'))).status).to.equal(404);
      const again = await api('DELETE', filePath(agentId, 'notes/todo.md'));
      expect(again.status).to.equal(404);
      expect(again.body.error.type).to.equal('not_found');
    });

    it('answers 404 for a file or an agent that does not exist', async () => {
      const agentId = await newAgent();
      expect((await api('GET', filePath(agentId, 'missing.txt'))).status).to.equal(404);
      expect((await api('GET', '/v1/agents/nobody-here/files')).status).to.equal(404);
      expect((await put('nobody-here', 'a.txt', 'x')).status).to.equal(404);
    });

    it('audits writes and deletes with the API key as actor', async () => {
      const agentId = await newAgent();
      await put(agentId, 'log.txt', 'one');
      await api('DELETE', filePath(agentId, 'log.txt'));
      const audit = (await api('GET', `/v1/audit_log?object_type=agent&object_id=${agentId}`)).body.data;
      expect(audit.map((e: { action: string }) => e.action)).to.deep.equal(['agent.file_deleted', 'agent.file_written', 'agent.created']);
      expect(audit[0]).to.deep.include({ actor });
      expect(audit[0].data).to.deep.equal({ path: 'log.txt' });
      expect(audit[1].data).to.deep.equal({ path: 'log.txt', size_bytes: 3, created: true });
    });

    it('lets the team write whatever tools.files says', async () => {
      const agentId = await newAgent({ tools: { files: { enabled: false, access: 'read_only' } } });
      expect((await put(agentId, 'kb.md', 'facts')).status).to.equal(200);
      expect((await api('GET', filePath(agentId, 'kb.md'))).body.content).to.equal('facts');
      expect((await api('DELETE', filePath(agentId, 'kb.md'))).status).to.equal(200);
    });

    it('keeps files across versions and drafts', async () => {
      const agentId = await newAgent();
      await put(agentId, 'kept.txt', 'kept');
      await api('PATCH', `/v1/agents/${agentId}`, { name: 'v2' });
      await api('PATCH', `/v1/agents/${agentId}/draft`, { name: 'draft' });
      await api('POST', `/v1/agents/${agentId}/versions/1/restore`);
      await api('POST', `/v1/agents/${agentId}/draft/publish`);
      expect((await api('GET', filePath(agentId, 'kept.txt'))).body.content).to.equal('kept');
    });
  });

  describe('paths', () => {
    let agentId: string;
    before(async () => {
      agentId = await newAgent();
    });

    it('accepts 1 and 200 characters of letters, digits, . _ - and /', async () => {
      for (const path of ['a', 'x'.repeat(200), 'Reports/2026-11/summary_v2.txt', '.hidden', 'a/b/c/d.e']) {
        const response = await put(agentId, path, 'x');
        expect(response.status, path).to.equal(200);
        expect(response.body.path).to.equal(path);
      }
    });

    it('drops a leading slash', async () => {
      const response = await put(agentId, '/lead.txt', 'x');
      expect(response.body.path).to.equal('lead.txt');
    });

    it('refuses 201 characters, other characters, empty parts and . or .. parts, naming path', async () => {
      const refused: Array<[string, string]> = [
        ['x'.repeat(201), 'path must be 1 to 200 characters'],
        ['has space.txt', "path may hold only letters, digits, '.', '_', '-' and '/'"],
        ['naïve.txt', "path may hold only letters, digits, '.', '_', '-' and '/'"],
        ['back\\slash', "path may hold only letters, digits, '.', '_', '-' and '/'"],
        ['a//b', 'path must not end with / or hold an empty folder name (//)'],
        ['folder/', 'path must not end with / or hold an empty folder name (//)'],
        ['../secrets', 'path must not hold . or .. as a folder or file name'],
        ['a/../b', 'path must not hold . or .. as a folder or file name'],
        ['./a', 'path must not hold . or .. as a folder or file name'],
      ];
      for (const [path, message] of refused) {
        const response = await put(agentId, path, 'x');
        expect(response.status, path).to.equal(400);
        expect(response.body.error).to.deep.equal({ type: 'invalid_request', message });
      }
    });
  });

  describe('limits', () => {
    it('accepts a file of 256 KB and refuses one byte more, naming content', async () => {
      const agentId = await newAgent();
      const atLimit = await put(agentId, 'big.txt', 'x'.repeat(AGENT_FILE_LIMITS.fileBytes));
      expect(atLimit.status).to.equal(200);
      expect(atLimit.body.size_bytes).to.equal(262_144);
      const past = await put(agentId, 'bigger.txt', 'x'.repeat(AGENT_FILE_LIMITS.fileBytes + 1));
      expect(past.status).to.equal(400);
      expect(past.body.error.type).to.equal('invalid_request');
      expect(past.body.error.message).to.match(/^content must be at most 262144 bytes/);
    });

    it('counts UTF-8 bytes, not characters', async () => {
      const agentId = await newAgent();
      const euro = '€'; // three bytes
      const fits = await put(agentId, 'euros.txt', euro.repeat(AGENT_FILE_LIMITS.fileBytes / 4) + 'x'.repeat(AGENT_FILE_LIMITS.fileBytes / 4));
      expect(fits.status).to.equal(200);
      expect(fits.body.size_bytes).to.equal(AGENT_FILE_LIMITS.fileBytes);
      const past = await put(agentId, 'euros2.txt', euro.repeat(AGENT_FILE_LIMITS.fileBytes / 3 + 1));
      expect(past.status).to.equal(400);
    });

    it('refuses text with a NUL character and a body without content', async () => {
      const agentId = await newAgent();
      const nul = await put(agentId, 'bin.dat', 'a\u0000b');
      expect(nul.status).to.equal(400);
      // Refused by the validation every route shares (api/routing.ts), before the file service's own check.
      expect(nul.body.error.message).to.equal('content must not contain a NUL character (\\u0000) or an unpaired surrogate');
      const missing = await api('PUT', filePath(agentId, 'x.txt'), {});
      expect(missing.body.error.message).to.equal('content is required');
    });

    it('holds 1,000 files per agent and refuses the 1,001st with 409 file_store_full, but still replaces one', async () => {
      const agentId = await newAgent();
      const team: FileAccessor = { kind: 'team', actor: null };
      for (let i = 0; i < AGENT_FILE_LIMITS.filesPerAgent; i++) await files().write(org.orgId, agentId, `f/${i}.txt`, 'x', team);
      const past = await put(agentId, 'one-more.txt', 'x');
      expect(past.status).to.equal(409);
      expect(past.body.error).to.deep.include({ type: 'conflict', code: 'file_store_full' });
      expect(past.body.error.message).to.contain('1000 files');
      expect((await put(agentId, 'f/7.txt', 'replaced')).status).to.equal(200);
      expect((await api('GET', `/v1/agents/${agentId}/files`)).body.data).to.have.length(1000);
    });

    it('holds 10 MB per agent and refuses one byte more with 409 file_store_full', async () => {
      const agentId = await newAgent();
      const team: FileAccessor = { kind: 'team', actor: null };
      const chunk = 'y'.repeat(AGENT_FILE_LIMITS.fileBytes);
      for (let i = 0; i < 39; i++) await files().write(org.orgId, agentId, `chunk-${i}.txt`, chunk, team);
      // 39 × 256 KB + 256 KB = exactly 10 MB.
      expect((await put(agentId, 'last.txt', chunk)).status).to.equal(200);
      const past = await put(agentId, 'tiny.txt', 'z');
      expect(past.status).to.equal(409);
      expect(past.body.error.code).to.equal('file_store_full');
      // Replacing a file with a smaller one frees room.
      expect((await put(agentId, 'last.txt', 'small')).status).to.equal(200);
      expect((await put(agentId, 'tiny.txt', 'z')).status).to.equal(200);
    });
  });

  describe('for the agent during a task (AgentFileService)', () => {
    const tools = (files: AgentTools['files']): AgentTools => ({ files, http: [] });
    const asAgent = (access: 'read_write' | 'read_only', enabled = true): FileAccessor => ({
      kind: 'agent',
      tools: tools({ enabled, access }),
      taskId: 'task_test',
    });

    it('lists, reads, writes and deletes with read_write, audited without an actor', async () => {
      const agentId = await newAgent();
      const agent = asAgent('read_write');
      const written = await files().write(org.orgId, agentId, 'memory/customer.md', 'Prefers email', agent);
      expect(written).to.deep.include({ path: 'memory/customer.md', created: true, created_by: null });
      expect((await files().read(org.orgId, agentId, 'memory/customer.md', agent)).content).to.equal('Prefers email');
      expect((await files().list(org.orgId, agentId, { accessor: agent })).map((f) => f.path)).to.deep.equal(['memory/customer.md']);
      await files().delete(org.orgId, agentId, 'memory/customer.md', agent);
      expect(await files().list(org.orgId, agentId, { accessor: agent })).to.deep.equal([]);
      const audit = (await api('GET', `/v1/audit_log?object_type=agent&object_id=${agentId}`)).body.data;
      expect(audit[0]).to.deep.include({ action: 'agent.file_deleted', actor: null });
      expect(audit[0].data).to.deep.equal({ path: 'memory/customer.md', task_id: 'task_test' });
      expect(audit[1].data).to.deep.include({ task_id: 'task_test' });
    });

    it('refuses writes and deletes with read_only (403 files_read_only) but reads and searches', async () => {
      const agentId = await newAgent();
      await put(agentId, 'kb.md', 'Refund window: 30 days');
      const agent = asAgent('read_only');
      await expectApiError(files().write(org.orgId, agentId, 'kb.md', 'changed', agent), 403, 'files_read_only');
      await expectApiError(files().delete(org.orgId, agentId, 'kb.md', agent), 403, 'files_read_only');
      expect((await files().read(org.orgId, agentId, 'kb.md', agent)).content).to.equal('Refund window: 30 days');
      expect((await files().search(org.orgId, agentId, 'refund', agent)).matches).to.have.length(1);
    });

    it('refuses everything when files are disabled (403 files_disabled)', async () => {
      const agentId = await newAgent();
      await put(agentId, 'kb.md', 'x');
      const agent = asAgent('read_write', false);
      await expectApiError(files().list(org.orgId, agentId, { accessor: agent }), 403, 'files_disabled');
      await expectApiError(files().read(org.orgId, agentId, 'kb.md', agent), 403, 'files_disabled');
      await expectApiError(files().search(org.orgId, agentId, 'x', agent), 403, 'files_disabled');
      await expectApiError(files().write(org.orgId, agentId, 'kb.md', 'y', agent), 403, 'files_disabled');
      await expectApiError(files().delete(org.orgId, agentId, 'kb.md', agent), 403, 'files_disabled');
    });

    it('search returns matching lines with their numbers, case-insensitively, by path', async () => {
      const agentId = await newAgent();
      await put(agentId, 'b.md', 'nothing\nInvoice 12 paid\ninvoice 13 open\n');
      await put(agentId, 'a.md', 'first line\nthe INVOICE template');
      await put(agentId, 'c.md', 'no match here');
      const result = await files().search(org.orgId, agentId, 'invoice');
      expect(result).to.deep.equal({
        truncated: false,
        matches: [
          { path: 'a.md', line: 2, text: 'the INVOICE template' },
          { path: 'b.md', line: 2, text: 'Invoice 12 paid' },
          { path: 'b.md', line: 3, text: 'invoice 13 open' },
        ],
      });
    });

    it('search takes % and _ literally, caps at 100 lines and cuts long lines to 500 characters', async () => {
      const agentId = await newAgent();
      await put(agentId, 'pct.txt', '50% off\n50 off\nsnake_case\nsnakeXcase');
      expect((await files().search(org.orgId, agentId, '50%')).matches.map((m) => m.text)).to.deep.equal(['50% off']);
      expect((await files().search(org.orgId, agentId, 'e_c')).matches.map((m) => m.text)).to.deep.equal(['snake_case']);
      await put(agentId, 'many.txt', Array.from({ length: 150 }, (_, i) => `hit ${i}`).join('\n'));
      const many = await files().search(org.orgId, agentId, 'hit');
      expect(many.matches).to.have.length(100);
      expect(many.truncated).to.equal(true);
      await put(agentId, 'long.txt', `needle${'n'.repeat(1000)}`);
      const long = await files().search(org.orgId, agentId, 'needle');
      expect(long.matches[0]!.text).to.have.length(500);
    });

    it('search checks its query: 1 to 200 characters on one line', async () => {
      const agentId = await newAgent();
      expect((await files().search(org.orgId, agentId, 'q'.repeat(200))).matches).to.deep.equal([]);
      const long = await expectApiError(files().search(org.orgId, agentId, 'q'.repeat(201)), 400);
      expect(long.message).to.equal('query must be 1 to 200 characters');
      await expectApiError(files().search(org.orgId, agentId, ''), 400);
      await expectApiError(files().search(org.orgId, agentId, 'two\nlines'), 400);
    });

    it('answers 404 for another org\'s agent', async () => {
      const agentId = await newAgent();
      const other = await service.newOrg('Other files');
      await expectApiError(files().read(other.orgId, agentId, 'x.txt'), 404);
      await expectApiError(files().write(other.orgId, agentId, 'x.txt', 'x', { kind: 'team', actor: null }), 404);
      await expectApiError(files().search(other.orgId, agentId, 'x'), 404);
    });

    it('checks the limits one write at a time when writes race', async () => {
      const agentId = await newAgent();
      const team: FileAccessor = { kind: 'team', actor: null };
      for (let i = 0; i < AGENT_FILE_LIMITS.filesPerAgent - 5; i++) await files().write(org.orgId, agentId, `r/${i}`, 'x', team);
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, (_, i) => files().write(org.orgId, agentId, `race/${i}`, 'x', team)),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(5);
      const count = await service.running.container.db('agent_files').where({ org_id: org.orgId, agent_id: agentId }).count<{ count: string }[]>('* as count');
      expect(Number(count[0]!.count)).to.equal(AGENT_FILE_LIMITS.filesPerAgent);
    });
  });
});
