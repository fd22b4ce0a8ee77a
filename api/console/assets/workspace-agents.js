// Agents: the org's agents as published (with a mark when a draft waits), and creating one.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say } = window.deskhand;
  const { badge, updateRows } = window.deskhandWorkspace;
  const body = document.querySelector('[data-testid="agents"] tbody');
  const listStatus = document.getElementById('agents-status');
  const form = document.getElementById('new-agent');

  function row(agent) {
    return el('tr', null,
      el('td', null, el('a', { href: `/console/agents/${encodeURIComponent(agent.agent_id)}` }, agent.agent_id), agent.is_default ? [' ', badge('default')] : null),
      el('td', null, agent.name),
      el('td', null, String(agent.version)),
      el('td', null, agent.model || 'service default'),
      el('td', null, agent.has_draft ? badge('draft') : ''),
      el('td', null, when(agent.updated_at)));
  }

  async function load() {
    try {
      const page = await api('GET', '/v1/agents');
      updateRows(body, page.data, { id: (agent) => agent.agent_id, render: row, empty: 'No agents yet.', columns: 6 });
    } catch (error) {
      listStatus.textContent = error.message;
      listStatus.classList.add('error');
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const values = new FormData(form);
    const agent = { agent_id: String(values.get('agent_id')).trim() };
    const name = String(values.get('name')).trim();
    if (name) agent.name = name;
    const instructions = String(values.get('instructions'));
    if (instructions) agent.instructions = instructions;
    if (values.get('is_default')) agent.is_default = true;
    say(form, 'Creating…');
    try {
      const made = await api('POST', '/v1/agents', agent);
      location.href = `/console/agents/${encodeURIComponent(made.agent_id)}`;
    } catch (error) {
      say(form, error.message, true);
    }
  });

  load();
});
