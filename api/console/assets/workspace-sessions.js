// Sessions: create one (its code, invite link and one-time token), list them by status a page at a
// time, expire one. Statuses refresh while the page is open.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say } = window.deskhand;
  const { badge, updateRows, pagedList, refreshEvery, actionButton } = window.deskhandWorkspace;
  const form = document.getElementById('new-session');
  const created = document.getElementById('created-session');
  const filter = document.getElementById('session-status');
  const body = document.querySelector('[data-testid="sessions"] tbody');
  // The session just created, followed above the list.
  let createdCode = null;

  function row(session) {
    const device = session.device ? `${session.device.name} (${session.device.os}, ${session.device.width}×${session.device.height})` : '';
    const tasks = el('a', { href: `/console/tasks?session_id=${encodeURIComponent(session.code)}` }, session.task_count === 1 ? '1 task' : `${session.task_count} tasks`);
    const expire = session.status === 'expired'
      ? null
      : actionButton('Expire', { class: 'danger', 'aria-label': `Expire session ${session.code}` }, () => api('POST', `/v1/sessions/${encodeURIComponent(session.code)}/expire`), () => pager.load());
    return el('tr', null,
      el('td', null, el('code', null, session.code)),
      el('td', null, el('a', { href: `/console/agents/${encodeURIComponent(session.agent_id)}` }, session.agent_id)),
      el('td', null, badge(session.status)),
      el('td', null, device),
      el('td', null, when(session.created_at)),
      el('td', null, tasks),
      el('td', { class: 'ws-wrap' }, el('a', { href: session.invite_url }, session.invite_url)),
      el('td', null, expire));
  }

  const pager = pagedList({
    path: (query) => {
      if (filter.value) query.set('status', filter.value);
      return `/v1/sessions?${query}`;
    },
    show: (page) =>
      updateRows(body, page.data, {
        id: (session) => session.code,
        render: row,
        empty: filter.value ? `No ${filter.value} sessions.` : 'No sessions yet.',
        columns: 8,
        // Not shown, and it moves while a computer is connected.
        stamp: (session) => JSON.stringify({ ...session, last_active_at: null }),
      }),
    more: document.getElementById('sessions-more'),
    first: document.getElementById('sessions-first'),
    status: document.getElementById('sessions-status'),
  });

  async function refreshCreated() {
    if (!createdCode) return;
    try {
      const session = await api('GET', `/v1/sessions/${encodeURIComponent(createdCode)}`);
      const status = created.querySelector('[data-testid="created-status"]');
      if (status.textContent !== session.status) {
        status.textContent = session.status;
        status.className = `badge ${session.status}`;
      }
    } catch {
      // The list's status line says when the API cannot be reached.
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const agent = form.querySelector('#session-agent').value;
    say(form, 'Creating…');
    try {
      const session = await api('POST', '/v1/sessions', agent ? { agent_id: agent } : {});
      createdCode = session.code;
      created.querySelector('[data-testid="created-code"]').textContent = session.code;
      const invite = created.querySelector('[data-testid="created-invite"]');
      invite.href = session.invite_url;
      invite.textContent = session.invite_url;
      created.querySelector('[data-testid="created-token"]').textContent = session.token;
      created.hidden = false;
      await refreshCreated();
      say(form, `Session ${session.code} created.`);
      await pager.restart();
    } catch (error) {
      say(form, error.message, true);
    }
  });

  filter.addEventListener('change', () => pager.restart());
  document.getElementById('session-filter').addEventListener('submit', (event) => event.preventDefault());

  pager.load();
  refreshEvery(3000, () => {
    pager.load();
    refreshCreated();
  });
});
