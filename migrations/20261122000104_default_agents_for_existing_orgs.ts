import type { Knex } from 'knex';
import { newId } from '../shared/ids';

/**
 * Data: every org has exactly one default agent. Orgs made from now on get theirs when they are
 * created (`OrgService.onCreated`); this gives one to each org that existed before agents did.
 * The config is written out whole, as the defaults were when agents arrived, so that a later
 * change of defaults does not change these agents unseen.
 */
const DEFAULT_AGENT_CONFIG = {
  name: 'Default agent',
  instructions: '',
  model: null,
  effort: null,
  greeting: '',
  display_name: '',
  narration: true,
  customer_answers: true,
  customer_approvals: true,
  guardrails: {
    mode: 'supervised',
    confirm: ['purchase', 'send', 'delete', 'install', 'security', 'terms'],
    block: [],
    apps: { allow: [], block: [] },
    sites: { allow: [], block: [] },
    safety_checks: 'ask',
    scope: '',
    screen_check: false,
    max_steps: 150,
    max_minutes: null,
    approval_timeout_minutes: null,
  },
  tools: { files: { enabled: true, access: 'read_write' }, http: [] },
  invite_url_template: null,
};

export async function up(knex: Knex): Promise<void> {
  const orgs = (await knex('orgs')
    .whereNotExists(knex('agents').whereRaw('agents.org_id = orgs.id').andWhere({ is_default: true }))
    .select('id')) as Array<{ id: string }>;
  for (const { id } of orgs) {
    const taken = await knex('agents').where({ org_id: id, agent_id: 'default' }).first('agent_id');
    if (taken) {
      await knex('agents').where({ org_id: id, agent_id: 'default' }).update({ is_default: true });
      continue;
    }
    await knex('agents').insert({ org_id: id, agent_id: 'default', version: 1, is_default: true });
    await knex('agent_versions').insert({
      org_id: id,
      agent_id: 'default',
      version: 1,
      config: JSON.stringify(DEFAULT_AGENT_CONFIG),
      origin: 'created',
    });
    await knex('audit_log').insert({
      id: newId('aud'),
      org_id: id,
      actor: null,
      action: 'agent.created',
      object_type: 'agent',
      object_id: 'default',
      data: JSON.stringify({ version: 1, fields: [], is_default: true }),
    });
  }
}

export async function down(): Promise<void> {
  // Nothing to undo on its own: the agents it made go with the agents tables (their own down).
}
