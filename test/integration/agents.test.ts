import { expect } from 'chai';
import { DEFAULT_GUARDRAILS } from '../../shared/guardrails/guardrails.types';
import { DEFAULT_MODEL, MODEL_IDS } from '../../shared/models/catalog';
import { ApiError } from '../../shared/errors';
import { newId } from '../../shared/ids';
import { up as giveExistingOrgsADefaultAgent } from '../../migrations/20261122000104_default_agents_for_existing_orgs';
import { startTestService, type TestService } from '../support/service';
import { ACME_DNS, tableResolver } from '../support/table-resolver';

type Org = { orgId: string; key: string; keyId: string };

describe('agents', () => {
  let service: TestService;
  let org: Org;
  let actor: { type: 'api_key'; key_id: string; name: string; prefix: string };
  let counter = 0;
  const newAgentId = (stem = 'agent') => `${stem}-${++counter}`;

  before(async () => {
    service = await startTestService({}, ['web'], { hostResolver: tableResolver(ACME_DNS) });
    org = await service.newOrg();
    actor = { type: 'api_key', key_id: org.keyId, name: 'Default key', prefix: org.key.slice(0, 12) };
  });
  after(async () => service.stop());

  const api = (method: string, path: string, body?: unknown) => service.api(org.key, method, path, body);
  async function ok(method: string, path: string, body?: unknown) {
    const response = await api(method, path, body);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    return response.body;
  }
  async function create(body: Record<string, unknown> = {}) {
    return ok('POST', '/v1/agents', { agent_id: newAgentId(), ...body });
  }
  const auditOf = async (agentId: string, key = org.key) =>
    (await service.api(key, 'GET', `/v1/audit_log?object_type=agent&object_id=${agentId}&limit=100`)).body.data as Array<{
      action: string;
      actor: unknown;
      data: Record<string, unknown>;
      request_id: string | null;
    }>;

  describe('the default agent', () => {
    it('comes with every new org: agent_id default, version 1, published, no draft, every default filled in', async () => {
      const fresh = await service.newOrg('Fresh org');
      const list = (await service.api(fresh.key, 'GET', '/v1/agents')).body;
      expect(list.has_more).to.equal(false);
      expect(list.next_cursor).to.equal(null);
      expect(list.data).to.have.length(1);
      const agent = list.data[0];
      expect(agent).to.deep.include({
        object: 'agent',
        agent_id: 'default',
        name: 'Default agent',
        instructions: '',
        model: null,
        effort: null,
        greeting: '',
        display_name: '',
        narration: true,
        customer_answers: true,
        customer_approvals: true,
        is_default: true,
        invite_url_template: `${service.running.container.config.baseUrl}/invite/{code}`,
        version: 1,
        has_draft: false,
        based_on_version: 1,
        saved_at: null,
        saved_by: null,
        created_by: null,
        updated_by: null,
      });
      expect(agent.guardrails).to.deep.equal(DEFAULT_GUARDRAILS);
      expect(agent.tools).to.deep.equal({ files: { enabled: true, access: 'read_write' }, http: [] });
      expect(agent.created_at).to.be.a('string');
      const audit = await auditOf('default', fresh.key);
      expect(audit.map((entry) => entry.action)).to.deep.equal(['agent.created']);
      expect(await service.running.container.agents.getDefaultAgentId(fresh.orgId)).to.equal('default');
    });

    it('moves when another agent is created with is_default: true, leaving exactly one default', async () => {
      const fresh = await service.newOrg('Default moves');
      const created = await service.api(fresh.key, 'POST', '/v1/agents', { agent_id: 'support', is_default: true });
      expect(created.status).to.equal(200);
      expect(created.body.is_default).to.equal(true);
      const list = (await service.api(fresh.key, 'GET', '/v1/agents')).body.data as Array<{ agent_id: string; is_default: boolean }>;
      expect(list.filter((a) => a.is_default).map((a) => a.agent_id)).to.deep.equal(['support']);
      expect(await service.running.container.agents.getDefaultAgentId(fresh.orgId)).to.equal('support');
      const audit = await auditOf('support', fresh.key);
      expect(audit[0]!.data).to.deep.include({ is_default: true, previous_default: 'default' });
    });

    it('does not move when an agent is created without is_default or with is_default: false', async () => {
      const fresh = await service.newOrg('Default stays');
      await service.api(fresh.key, 'POST', '/v1/agents', { agent_id: 'one' });
      const second = await service.api(fresh.key, 'POST', '/v1/agents', { agent_id: 'two', is_default: false });
      expect(second.body.is_default).to.equal(false);
      expect(await service.running.container.agents.getDefaultAgentId(fresh.orgId)).to.equal('default');
    });

    it('moves with PATCH is_default: true alone, without publishing a version', async () => {
      const fresh = await service.newOrg('Default patch');
      await service.api(fresh.key, 'POST', '/v1/agents', { agent_id: 'sales' });
      const patched = await service.api(fresh.key, 'PATCH', '/v1/agents/sales', { is_default: true });
      expect(patched.status).to.equal(200);
      expect(patched.body).to.deep.include({ is_default: true, version: 1 });
      const previous = (await service.api(fresh.key, 'GET', '/v1/agents/default')).body;
      expect(previous.is_default).to.equal(false);
      expect(previous.version).to.equal(1);
      const audit = await auditOf('sales', fresh.key);
      expect(audit[0]).to.deep.include({ action: 'agent.default_set' });
      expect(audit[0]!.data).to.deep.equal({ previous_default: 'default' });
      // Setting it again is no change and no audit entry.
      await service.api(fresh.key, 'PATCH', '/v1/agents/sales', { is_default: true });
      expect((await auditOf('sales', fresh.key)).length).to.equal(audit.length);
    });

    it('moves with a PATCH that also publishes a change', async () => {
      const fresh = await service.newOrg('Default patch and publish');
      await service.api(fresh.key, 'POST', '/v1/agents', { agent_id: 'ops' });
      const patched = (await service.api(fresh.key, 'PATCH', '/v1/agents/ops', { is_default: true, name: 'Operations' })).body;
      expect(patched).to.deep.include({ is_default: true, version: 2, name: 'Operations' });
      expect((await service.api(fresh.key, 'GET', '/v1/agents/default')).body.is_default).to.equal(false);
    });

    it('cannot be unset except by making another agent the default: 409 default_agent_required', async () => {
      const fresh = await service.newOrg('Default unset');
      const response = await service.api(fresh.key, 'PATCH', '/v1/agents/default', { is_default: false, name: 'Renamed' });
      expect(response.status).to.equal(409);
      expect(response.body.error).to.deep.include({ type: 'conflict', code: 'default_agent_required' });
      expect(response.body.error.message).to.match(/default/);
      const after = (await service.api(fresh.key, 'GET', '/v1/agents/default')).body;
      expect(after).to.deep.include({ is_default: true, version: 1, name: 'Default agent' });
    });

    it('accepts is_default: false on an agent that is not the default', async () => {
      const created = await create();
      const patched = await ok('PATCH', `/v1/agents/${created.agent_id}`, { is_default: false, greeting: 'Hi' });
      expect(patched).to.deep.include({ is_default: false, version: 2, greeting: 'Hi' });
    });

    it('is given to orgs that existed before agents by a data migration', async () => {
      const db = service.running.container.db;
      const orgId = newId('org');
      await db('orgs').insert({ id: orgId, name: 'Older org' }); // as before agents existed: no hook ran
      await giveExistingOrgsADefaultAgent(db);
      const agent = await service.running.container.agents.get(orgId, 'default');
      expect(agent).to.deep.include({ is_default: true, version: 1, name: 'Default agent', has_draft: false });
      expect(agent.guardrails).to.deep.equal(DEFAULT_GUARDRAILS);
      expect(agent.tools).to.deep.equal({ files: { enabled: true, access: 'read_write' }, http: [] });
      // Running it again changes nothing.
      await giveExistingOrgsADefaultAgent(db);
      expect(await db('agents').where({ org_id: orgId })).to.have.length(1);
    });

    it('stays single when two agents are made the default at once', async () => {
      const fresh = await service.newOrg('Default race');
      const ids = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'];
      for (const id of ids) await service.api(fresh.key, 'POST', '/v1/agents', { agent_id: id });
      const responses = await Promise.all(ids.map((id) => service.api(fresh.key, 'PATCH', `/v1/agents/${id}`, { is_default: true })));
      expect(responses.map((r) => r.status)).to.deep.equal(ids.map(() => 200));
      const defaults = await service.running.container.db('agents').where({ org_id: fresh.orgId, is_default: true });
      expect(defaults).to.have.length(1);
    });
  });

  describe('POST /v1/agents', () => {
    it('creates version 1, published, with no draft, filled from the API key', async () => {
      const agentId = newAgentId('created');
      const created = await ok('POST', '/v1/agents', {
        agent_id: agentId,
        name: 'Support',
        instructions: 'Help with invoices.',
        model: MODEL_IDS[0],
        effort: 'high',
        greeting: 'Hello!',
        display_name: 'Helper',
        narration: false,
        customer_answers: false,
        customer_approvals: false,
        guardrails: { mode: 'unattended', max_steps: 20 },
        tools: { files: { access: 'read_only' }, http: [{ name: 'lookup', description: 'Finds an order', url: 'https://api.acme.com/lookup' }] },
        invite_url_template: 'https://acme.com/join/{code}',
      });
      expect(created).to.deep.include({
        object: 'agent',
        agent_id: agentId,
        name: 'Support',
        instructions: 'Help with invoices.',
        model: MODEL_IDS[0],
        effort: 'high',
        greeting: 'Hello!',
        display_name: 'Helper',
        narration: false,
        customer_answers: false,
        customer_approvals: false,
        is_default: false,
        invite_url_template: 'https://acme.com/join/{code}',
        version: 1,
        has_draft: false,
        based_on_version: 1,
        saved_at: null,
        saved_by: null,
      });
      expect(created.created_by).to.deep.equal(actor);
      expect(created.updated_by).to.deep.equal(actor);
      expect(created.guardrails).to.deep.equal({ ...DEFAULT_GUARDRAILS, mode: 'unattended', max_steps: 20 });
      expect(created.tools).to.deep.equal({
        files: { enabled: true, access: 'read_only' },
        http: [{ name: 'lookup', description: 'Finds an order', url: 'https://api.acme.com/lookup', approval: 'never' }],
      });
      expect(await ok('GET', `/v1/agents/${agentId}`)).to.deep.equal(created);
      const versions = await ok('GET', `/v1/agents/${agentId}/versions`);
      expect(versions.data).to.have.length(1);
      expect(versions.data[0]).to.deep.include({ object: 'agent_version', version: 1, origin: 'created', is_published: true, based_on_version: null });
      const audit = await auditOf(agentId);
      expect(audit).to.have.length(1);
      expect(audit[0]).to.deep.include({ action: 'agent.created', actor });
      expect(audit[0]!.request_id).to.be.a('string');
    });

    it('names the agent after its id when no name is sent', async () => {
      const created = await create();
      expect(created.name).to.equal(created.agent_id);
    });

    it('answers 409 conflict for an agent_id that exists, also for default', async () => {
      const created = await create();
      for (const agentId of [created.agent_id, 'default']) {
        const response = await api('POST', '/v1/agents', { agent_id: agentId, name: 'Again' });
        expect(response.status).to.equal(409);
        expect(response.body.error.type).to.equal('conflict');
        expect(response.body.error.message).to.contain(agentId);
      }
      expect((await ok('GET', `/v1/agents/${created.agent_id}`)).name).to.equal(created.name);
    });

    it('lets two orgs use the same agent_id', async () => {
      const other = await service.newOrg('Same ids');
      const created = await create();
      const response = await service.api(other.key, 'POST', '/v1/agents', { agent_id: created.agent_id });
      expect(response.status).to.equal(200);
    });
  });

  describe('GET /v1/agents', () => {
    it('returns every agent in one page, newest first', async () => {
      const fresh = await service.newOrg('Listing');
      for (let i = 0; i < 25; i++) await service.api(fresh.key, 'POST', '/v1/agents', { agent_id: `list-${i}` });
      const list = (await service.api(fresh.key, 'GET', '/v1/agents')).body;
      expect(list.data).to.have.length(26);
      expect(list.data[0].agent_id).to.equal('list-24');
      expect(list.data[25].agent_id).to.equal('default');
      expect(list).to.include({ has_more: false, next_cursor: null });
    });
  });

  describe('Agent versions transitions', () => {
    it('published, no draft → a draft is saved: has_draft true, saved_at and saved_by set, only sent fields change', async () => {
      const created = await create({ name: 'Before', greeting: 'Hello', guardrails: { max_steps: 40 } });
      const draft = await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { name: 'After', guardrails: { mode: 'unattended' } });
      expect(draft).to.deep.include({
        object: 'agent_draft',
        name: 'After',
        greeting: 'Hello',
        version: 1,
        has_draft: true,
        based_on_version: 1,
        restored_from_version: null,
      });
      expect(draft.guardrails).to.deep.equal({ ...DEFAULT_GUARDRAILS, max_steps: 40, mode: 'unattended' });
      expect(draft.saved_by).to.deep.equal(actor);
      expect(draft.updated_by).to.deep.equal(actor);
      expect(Date.parse(draft.saved_at)).to.be.closeTo(Date.now(), 60_000);
      // The published agent is unchanged, but says a draft exists.
      const published = await ok('GET', `/v1/agents/${created.agent_id}`);
      expect(published).to.deep.include({ object: 'agent', name: 'Before', version: 1, has_draft: true, based_on_version: 1 });
      expect(published.guardrails.mode).to.equal('supervised');
      expect(await ok('GET', `/v1/agents/${created.agent_id}/draft`)).to.deep.equal(draft);
      const audit = await auditOf(created.agent_id);
      expect(audit[0]).to.deep.include({ action: 'agent.draft_saved', actor });
      expect(audit[0]!.data).to.deep.include({ fields: ['name', 'guardrails'], based_on_version: 1, started: true });
    });

    it('GET draft without a draft is the published version with has_draft false', async () => {
      const created = await create({ greeting: 'Hi' });
      const draft = await ok('GET', `/v1/agents/${created.agent_id}/draft`);
      const { object: _a, ...publishedRest } = created;
      const { object, restored_from_version, ...draftRest } = draft;
      expect(object).to.equal('agent_draft');
      expect(restored_from_version).to.equal(null);
      expect(draftRest).to.deep.equal(publishedRest);
    });

    it('a second save keeps earlier draft changes and based_on_version, and moves saved_at', async () => {
      const created = await create();
      const first = await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { name: 'First' });
      await new Promise((resolve) => setTimeout(resolve, 15));
      const second = await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { greeting: 'Second' });
      expect(second).to.deep.include({ name: 'First', greeting: 'Second', based_on_version: 1, has_draft: true });
      expect(Date.parse(second.saved_at)).to.be.greaterThan(Date.parse(first.saved_at));
    });

    it('an empty draft save starts a draft identical to the published version', async () => {
      const created = await create({ greeting: 'Same' });
      const draft = await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, {});
      expect(draft).to.deep.include({ has_draft: true, greeting: 'Same', based_on_version: 1 });
    });

    it('draft → publish: the draft gets the next version number and has_draft is false', async () => {
      const created = await create({ name: 'One' });
      await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { name: 'Two', effort: 'medium' });
      const published = await ok('POST', `/v1/agents/${created.agent_id}/draft/publish`);
      expect(published).to.deep.include({
        object: 'agent',
        name: 'Two',
        effort: 'medium',
        version: 2,
        has_draft: false,
        based_on_version: 2,
        saved_at: null,
        saved_by: null,
      });
      expect(published.undone_versions).to.deep.equal([]);
      expect(published.updated_by).to.deep.equal(actor);
      const draft = await ok('GET', `/v1/agents/${created.agent_id}/draft`);
      expect(draft).to.deep.include({ has_draft: false, name: 'Two', version: 2 });
      const v2 = await ok('GET', `/v1/agents/${created.agent_id}/versions/2`);
      expect(v2).to.deep.include({ version: 2, name: 'Two', origin: 'draft', based_on_version: 1, is_published: true, undone_versions: [] });
      expect(v2.created_by).to.deep.equal(actor);
      const v1 = await ok('GET', `/v1/agents/${created.agent_id}/versions/1`);
      expect(v1).to.deep.include({ name: 'One', is_published: false });
      const audit = await auditOf(created.agent_id);
      expect(audit[0]).to.deep.include({ action: 'agent.draft_published', actor });
      expect(audit[0]!.data).to.deep.include({ version: 2, based_on_version: 1, undone_versions: [] });
    });

    it('publishing with no draft answers 409 no_draft and changes nothing', async () => {
      const created = await create();
      const response = await api('POST', `/v1/agents/${created.agent_id}/draft/publish`);
      expect(response.status).to.equal(409);
      expect(response.body.error).to.deep.include({ type: 'conflict', code: 'no_draft' });
      expect((await ok('GET', `/v1/agents/${created.agent_id}`)).version).to.equal(1);
    });

    it('published → PATCH /v1/agents/{id}: published directly, version + 1, only sent fields change', async () => {
      const created = await create({ name: 'Kept', greeting: 'Old', guardrails: { sites: { allow: ['acme.com'] } } });
      const patched = await ok('PATCH', `/v1/agents/${created.agent_id}`, { greeting: 'New', guardrails: { sites: { block: ['evil.com'] } } });
      expect(patched).to.deep.include({ object: 'agent', name: 'Kept', greeting: 'New', version: 2, has_draft: false, based_on_version: 2 });
      expect(patched.guardrails.sites).to.deep.equal({ allow: ['acme.com'], block: ['evil.com'] });
      expect(patched.updated_by).to.deep.equal(actor);
      const v2 = await ok('GET', `/v1/agents/${created.agent_id}/versions/2`);
      expect(v2).to.deep.include({ origin: 'patched', based_on_version: 1, greeting: 'New' });
      const audit = await auditOf(created.agent_id);
      expect(audit[0]).to.deep.include({ action: 'agent.published', actor });
      expect(audit[0]!.data).to.deep.include({ version: 2, fields: ['greeting', 'guardrails'] });
    });

    it('PATCH while a draft exists keeps the draft; based_on_version falls behind version', async () => {
      const created = await create({ name: 'Base', greeting: 'Base greeting' });
      await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { name: 'Draft name' });
      const patched = await ok('PATCH', `/v1/agents/${created.agent_id}`, { greeting: 'Hotfix' });
      expect(patched).to.deep.include({ name: 'Base', greeting: 'Hotfix', version: 2, has_draft: true, based_on_version: 1 });
      const draft = await ok('GET', `/v1/agents/${created.agent_id}/draft`);
      expect(draft).to.deep.include({ name: 'Draft name', greeting: 'Base greeting', version: 2, based_on_version: 1, has_draft: true });
    });

    it('publishing a draft whose based_on_version is below version undoes the later publish, and says so', async () => {
      const created = await create({ name: 'Base', greeting: 'Base greeting' });
      await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { name: 'Draft name' });
      await ok('PATCH', `/v1/agents/${created.agent_id}`, { greeting: 'Hotfix 1' });
      await ok('PATCH', `/v1/agents/${created.agent_id}`, { greeting: 'Hotfix 2' });
      const published = await ok('POST', `/v1/agents/${created.agent_id}/draft/publish`);
      expect(published).to.deep.include({ version: 4, name: 'Draft name', greeting: 'Base greeting', has_draft: false });
      expect(published.undone_versions).to.deep.equal([2, 3]);
      const v4 = await ok('GET', `/v1/agents/${created.agent_id}/versions/4`);
      expect(v4).to.deep.include({ origin: 'draft', based_on_version: 1, undone_versions: [2, 3], greeting: 'Base greeting' });
      const audit = await auditOf(created.agent_id);
      expect(audit[0]!.data).to.deep.include({ version: 4, based_on_version: 1, undone_versions: [2, 3] });
    });

    it('any → restore: that version sits in the draft in place of any draft; nothing changes until published', async () => {
      const created = await create({ name: 'V1', greeting: 'one' });
      await ok('PATCH', `/v1/agents/${created.agent_id}`, { name: 'V2' });
      await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { name: 'Draft', greeting: 'draft greeting' });
      const restored = await ok('POST', `/v1/agents/${created.agent_id}/versions/1/restore`);
      expect(restored).to.deep.include({
        object: 'agent_draft',
        name: 'V1',
        greeting: 'one',
        version: 2,
        has_draft: true,
        based_on_version: 2,
        restored_from_version: 1,
      });
      expect(restored.updated_by).to.deep.equal(actor);
      expect(restored.saved_by).to.deep.equal(actor);
      const published = await ok('GET', `/v1/agents/${created.agent_id}`);
      expect(published).to.deep.include({ name: 'V2', version: 2, has_draft: true });
      const resolved = await service.running.container.agents.resolveForTask(org.orgId, created.agent_id, 'published');
      expect(resolved.config.name).to.equal('V2');
      const audit = await auditOf(created.agent_id);
      expect(audit[0]).to.deep.include({ action: 'agent.version_restored', actor });
      expect(audit[0]!.data).to.deep.include({ version: 1, based_on_version: 2, replaced_draft: true });
    });

    it('restore then publish: the restored config becomes the next version', async () => {
      const created = await create({ name: 'V1', guardrails: { max_steps: 10 } });
      await ok('PATCH', `/v1/agents/${created.agent_id}`, { name: 'V2', guardrails: { max_steps: 99 } });
      await ok('POST', `/v1/agents/${created.agent_id}/versions/1/restore`);
      const published = await ok('POST', `/v1/agents/${created.agent_id}/draft/publish`);
      expect(published).to.deep.include({ name: 'V1', version: 3, has_draft: false });
      expect(published.guardrails.max_steps).to.equal(10);
      expect(published.undone_versions).to.deep.equal([]);
      const v3 = await ok('GET', `/v1/agents/${created.agent_id}/versions/3`);
      expect(v3).to.deep.include({ origin: 'draft', based_on_version: 2, restored_from_version: 1, name: 'V1' });
      const draft = await ok('GET', `/v1/agents/${created.agent_id}/draft`);
      expect(draft.restored_from_version).to.equal(null);
    });

    it('restore then edit keeps restored_from_version; a PATCH after the restore is undone by its publish', async () => {
      const created = await create({ name: 'V1' });
      await ok('PATCH', `/v1/agents/${created.agent_id}`, { name: 'V2' });
      await ok('POST', `/v1/agents/${created.agent_id}/versions/1/restore`);
      const edited = await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { greeting: 'edited' });
      expect(edited).to.deep.include({ name: 'V1', greeting: 'edited', restored_from_version: 1, based_on_version: 2 });
      await ok('PATCH', `/v1/agents/${created.agent_id}`, { display_name: 'Later' });
      const published = await ok('POST', `/v1/agents/${created.agent_id}/draft/publish`);
      expect(published).to.deep.include({ version: 4, display_name: '', greeting: 'edited' });
      expect(published.undone_versions).to.deep.equal([3]);
    });

    it('restores the published version itself, and answers 404 for a version that does not exist', async () => {
      const created = await create({ name: 'Only' });
      const restored = await ok('POST', `/v1/agents/${created.agent_id}/versions/1/restore`);
      expect(restored).to.deep.include({ name: 'Only', has_draft: true, restored_from_version: 1 });
      for (const version of [2, 99]) {
        const response = await api('POST', `/v1/agents/${created.agent_id}/versions/${version}/restore`);
        expect(response.status).to.equal(404);
        expect(response.body.error.type).to.equal('not_found');
        expect(response.body.error.message).to.contain(`version ${version}`);
      }
      const zero = await api('POST', `/v1/agents/${created.agent_id}/versions/0/restore`);
      expect(zero.status).to.equal(400);
      expect(zero.body.error.message).to.equal('path parameter version must be at least 1');
      expect((await api('GET', `/v1/agents/${created.agent_id}/versions/7`)).status).to.equal(404);
    });

    it('discarding the draft leaves the published version; discarding nothing changes nothing', async () => {
      const created = await create({ name: 'Published' });
      await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { name: 'Unwanted' });
      const discarded = await ok('DELETE', `/v1/agents/${created.agent_id}/draft`);
      expect(discarded).to.deep.include({ object: 'agent_draft', name: 'Published', has_draft: false, version: 1, saved_at: null, saved_by: null });
      expect(await ok('GET', `/v1/agents/${created.agent_id}`)).to.deep.include({ name: 'Published', has_draft: false, version: 1 });
      const audit = await auditOf(created.agent_id);
      expect(audit[0]).to.deep.include({ action: 'agent.draft_discarded', actor });
      const again = await ok('DELETE', `/v1/agents/${created.agent_id}/draft`);
      expect(again.has_draft).to.equal(false);
      expect(await auditOf(created.agent_id)).to.have.length(audit.length);
      expect((await api('POST', `/v1/agents/${created.agent_id}/draft/publish`)).status).to.equal(409);
    });

    it('lists versions newest first with pagination', async () => {
      const created = await create({ name: 'v1' });
      for (let v = 2; v <= 5; v++) await ok('PATCH', `/v1/agents/${created.agent_id}`, { name: `v${v}` });
      const first = await ok('GET', `/v1/agents/${created.agent_id}/versions?limit=2`);
      expect(first.data.map((v: { version: number }) => v.version)).to.deep.equal([5, 4]);
      expect(first.data[0].is_published).to.equal(true);
      expect(first.has_more).to.equal(true);
      const second = await ok('GET', `/v1/agents/${created.agent_id}/versions?limit=2&cursor=${first.next_cursor}`);
      expect(second.data.map((v: { name: string }) => v.name)).to.deep.equal(['v3', 'v2']);
      const third = await ok('GET', `/v1/agents/${created.agent_id}/versions?limit=2&cursor=${second.next_cursor}`);
      expect(third).to.deep.include({ has_more: false, next_cursor: null });
      expect(third.data.map((v: { version: number }) => v.version)).to.deep.equal([1]);
    });
  });

  describe('guardrails and tools', () => {
    it('come back whole after partial updates: objects merge field by field, arrays replace', async () => {
      const created = await create({ guardrails: { apps: { allow: ['Safari'] }, confirm: ['send'] }, tools: { files: { enabled: false } } });
      const patched = await ok('PATCH', `/v1/agents/${created.agent_id}`, {
        guardrails: { apps: { block: ['Terminal'] }, max_minutes: 30 },
        tools: { files: { access: 'read_only' } },
      });
      expect(patched.guardrails).to.deep.equal({
        ...DEFAULT_GUARDRAILS,
        confirm: ['send'],
        apps: { allow: ['Safari'], block: ['Terminal'] },
        max_minutes: 30,
      });
      expect(patched.tools).to.deep.equal({ files: { enabled: false, access: 'read_only' }, http: [] });
      const cleared = await ok('PATCH', `/v1/agents/${created.agent_id}`, { guardrails: { max_minutes: null, confirm: [] } });
      expect(cleared.guardrails).to.deep.include({ max_minutes: null, confirm: [] });
    });

    it('accept a category in both confirm and block and return both lists as set', async () => {
      const created = await create({ guardrails: { confirm: ['purchase', 'send'], block: ['send', 'delete'] } });
      expect(created.guardrails.confirm).to.deep.equal(['purchase', 'send']);
      expect(created.guardrails.block).to.deep.equal(['send', 'delete']);
    });

    it('store site rules as lowercase hosts, reducing a scheme, path or port, and keep app rules as given', async () => {
      const created = await create({
        guardrails: {
          sites: { allow: ['https://Shop.Example.COM:8443/cart?x=1', 'docs.acme.io'], block: ['HTTP://Evil.com/path', 'ads.net:80'] },
          apps: { allow: ['Microsoft Excel', 'excel.exe', 'com.apple.Safari'], block: ['Terminal'] },
        },
      });
      expect(created.guardrails.sites).to.deep.equal({ allow: ['shop.example.com', 'docs.acme.io'], block: ['evil.com', 'ads.net'] });
      expect(created.guardrails.apps).to.deep.equal({ allow: ['Microsoft Excel', 'excel.exe', 'com.apple.Safari'], block: ['Terminal'] });
    });

    it('keep every HTTP tool field, with approval defaulting to never', async () => {
      const created = await create({
        tools: {
          http: [
            { name: 'refund', description: 'Refunds an order', url: 'https://api.acme.com/refund', approval: 'always' },
            { name: 'lookup', description: 'Looks an order up', url: 'https://api.acme.com/lookup' },
          ],
        },
      });
      expect(created.tools.http).to.deep.equal([
        { name: 'refund', description: 'Refunds an order', url: 'https://api.acme.com/refund', approval: 'always' },
        { name: 'lookup', description: 'Looks an order up', url: 'https://api.acme.com/lookup', approval: 'never' },
      ]);
      const replaced = await ok('PATCH', `/v1/agents/${created.agent_id}`, { tools: { http: [] } });
      expect(replaced.tools.http).to.deep.equal([]);
    });

    it('fills in the default invite page and resets to it with null', async () => {
      const created = await create({ invite_url_template: 'https://acme.com/i/{code}?src=agent' });
      expect(created.invite_url_template).to.equal('https://acme.com/i/{code}?src=agent');
      const reset = await ok('PATCH', `/v1/agents/${created.agent_id}`, { invite_url_template: null });
      expect(reset.invite_url_template).to.equal(`${service.running.container.config.baseUrl}/invite/{code}`);
    });
  });

  describe('across orgs', () => {
    it('answers 404 for another org\'s agent on every endpoint', async () => {
      const other = await service.newOrg('Intruder');
      const created = await create();
      await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { name: 'secret draft' });
      await ok('PUT', `/v1/agents/${created.agent_id}/files/notes.txt`, { content: 'secret' });
      const id = created.agent_id;
      const calls: Array<[string, string, unknown?]> = [
        ['GET', `/v1/agents/${id}`],
        ['PATCH', `/v1/agents/${id}`, { name: 'x' }],
        ['GET', `/v1/agents/${id}/draft`],
        ['PATCH', `/v1/agents/${id}/draft`, { name: 'x' }],
        ['POST', `/v1/agents/${id}/draft/publish`],
        ['DELETE', `/v1/agents/${id}/draft`],
        ['GET', `/v1/agents/${id}/versions`],
        ['GET', `/v1/agents/${id}/versions/1`],
        ['POST', `/v1/agents/${id}/versions/1/restore`],
        ['GET', `/v1/agents/${id}/files`],
        ['GET', `/v1/agents/${id}/files/notes.txt`],
        ['PUT', `/v1/agents/${id}/files/notes.txt`, { content: 'overwritten' }],
        ['DELETE', `/v1/agents/${id}/files/notes.txt`],
      ];
      for (const [method, path, body] of calls) {
        const response = await service.api(other.key, method, path, body);
        expect(response.status, `${method} ${path}`).to.equal(404);
        expect(response.body.error.type).to.equal('not_found');
      }
      expect((await service.api(other.key, 'GET', '/v1/agents')).body.data.map((a: { agent_id: string }) => a.agent_id)).to.deep.equal(['default']);
      // Nothing changed for the owner.
      const draft = await ok('GET', `/v1/agents/${id}/draft`);
      expect(draft).to.deep.include({ name: 'secret draft', version: 1, has_draft: true });
      expect((await ok('GET', `/v1/agents/${id}/files/notes.txt`)).content).to.equal('secret');
    });
  });

  describe('concurrent saves and publishes', () => {
    it('never lose a version nor give two versions one number', async () => {
      const created = await create();
      const id = created.agent_id;
      const requests: Array<Promise<{ status: number }>> = [];
      for (let i = 0; i < 12; i++) {
        requests.push(api('PATCH', `/v1/agents/${id}`, { greeting: `patch ${i}` }));
        requests.push(api('PATCH', `/v1/agents/${id}/draft`, { name: `draft ${i}` }));
        requests.push(api('POST', `/v1/agents/${id}/draft/publish`));
      }
      const responses = await Promise.all(requests);
      const statuses = responses.map((r) => r.status);
      for (const status of statuses) expect([200, 409]).to.include(status);
      const patches = statuses.filter((s, i) => i % 3 === 0 && s === 200).length;
      const publishes = statuses.filter((s, i) => i % 3 === 2 && s === 200).length;
      expect(patches).to.equal(12);
      const agent = await ok('GET', `/v1/agents/${id}`);
      expect(agent.version).to.equal(1 + patches + publishes);
      const rows = await service.running.container.db('agent_versions').where({ org_id: org.orgId, agent_id: id }).orderBy('version');
      expect(rows.map((r: { version: number }) => r.version)).to.deep.equal(Array.from({ length: agent.version }, (_, i) => i + 1));
    });

    it('create the same agent_id at once: one 200, the rest 409', async () => {
      const id = newAgentId('race');
      const responses = await Promise.all(Array.from({ length: 6 }, () => api('POST', '/v1/agents', { agent_id: id })));
      expect(responses.filter((r) => r.status === 200)).to.have.length(1);
      expect(responses.filter((r) => r.status === 409)).to.have.length(5);
    });
  });

  describe('for tasks (AgentService)', () => {
    it('resolveForTask gives the published version, or the draft with its based_on_version and a flag', async () => {
      const agents = service.running.container.agents;
      const created = await create({ name: 'Published', model: MODEL_IDS[2] });
      await ok('PATCH', `/v1/agents/${created.agent_id}`, { name: 'Published 2' });
      const published = await agents.resolveForTask(org.orgId, created.agent_id, 'published');
      expect(published).to.deep.include({ agent_id: created.agent_id, version: 2, draft: false, model: MODEL_IDS[2], effort: 'low' });
      expect(published.config.name).to.equal('Published 2');
      expect(published.invite_url_template).to.equal(`${service.running.container.config.baseUrl}/invite/{code}`);

      const noDraft = await agents.resolveForTask(org.orgId, created.agent_id, 'draft');
      expect(noDraft).to.deep.include({ version: 2, draft: false });
      expect(noDraft.config.name).to.equal('Published 2');

      await ok('PATCH', `/v1/agents/${created.agent_id}/draft`, { name: 'Drafted', model: null, effort: 'high' });
      await ok('PATCH', `/v1/agents/${created.agent_id}`, { greeting: 'later' });
      const draft = await agents.resolveForTask(org.orgId, created.agent_id, 'draft');
      expect(draft).to.deep.include({ version: 2, draft: true, model: DEFAULT_MODEL, effort: 'high' });
      expect(draft.config.name).to.equal('Drafted');
      expect((await agents.resolveForTask(org.orgId, created.agent_id, 'published')).version).to.equal(3);
    });

    it('resolveForTask refuses another org\'s agent with 404', async () => {
      const other = await service.newOrg('Resolver');
      const created = await create();
      try {
        await service.running.container.agents.resolveForTask(other.orgId, created.agent_id, 'published');
        expect.fail('resolved another org\'s agent');
      } catch (error) {
        expect(error).to.be.instanceOf(ApiError);
        expect((error as ApiError).status).to.equal(404);
      }
    });
  });
});
