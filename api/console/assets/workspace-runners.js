// Runners: the org's own and the cloud's (status, slots, busy, images, last seen), refreshing while
// the page is open; register one (its token shown once), delete one.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say } = window.deskhand;
  const { badge, updateRows, refreshEvery, actionButton } = window.deskhandWorkspace;
  const body = document.querySelector('[data-testid="runners"] tbody');
  const listStatus = document.getElementById('runners-status');
  const form = document.getElementById('new-runner');
  const created = document.getElementById('created-runner');

  const seen = (runner) => (runner.last_seen_at ? when(runner.last_seen_at) : 'never');

  function row(runner) {
    const remove = runner.scope === 'org'
      ? actionButton('Delete', { class: 'danger', 'aria-label': `Delete runner ${runner.name}` }, () => {
        if (!confirm(`Delete the runner ${runner.name}? Its token stops working at once.`)) return Promise.resolve(null);
        return api('DELETE', `/v1/runners/${encodeURIComponent(runner.runner_id)}`);
      }, (deleted) => (deleted ? load() : undefined))
      : null;
    return el('tr', null,
      el('td', null, el('div', null, runner.name), el('code', { class: 'note' }, runner.runner_id)),
      el('td', null, runner.scope === 'org' ? 'the org\'s' : 'cloud'),
      el('td', null, badge(runner.status)),
      el('td', null, String(runner.slots)),
      el('td', null, String(runner.busy)),
      el('td', null, runner.images.join(', ')),
      el('td', null, runner.labels.join(', ')),
      el('td', null, runner.version || ''),
      el('td', { class: 'ws-seen' }, seen(runner)),
      el('td', null, remove));
  }

  async function load() {
    try {
      const page = await api('GET', '/v1/runners');
      // last_seen_at moves with every heartbeat: its cell is brought up to date in place, and a row
      // is redrawn (losing focus) only when anything else changes.
      updateRows(body, page.data, {
        id: (runner) => runner.runner_id,
        render: row,
        empty: 'No runners yet.',
        columns: 10,
        stamp: (runner) => JSON.stringify({ ...runner, last_seen_at: null }),
        patch: (tr, runner) => {
          tr.querySelector('.ws-seen').textContent = seen(runner);
        },
      });
      listStatus.textContent = '';
      listStatus.classList.remove('error');
    } catch (error) {
      listStatus.textContent = error.message;
      listStatus.classList.add('error');
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    say(form, 'Registering…');
    try {
      const runner = await api('POST', '/v1/runners', { name: form.querySelector('#runner-name').value });
      created.querySelector('[data-testid="runner-token"]').textContent = runner.token;
      const command = created.querySelector('[data-testid="runner-command"]');
      command.textContent = `npx deskhand runner --token ${runner.token} --base-url ${command.dataset.baseUrl} --name '${runner.name.replace(/'/g, '\'\\\'\'')}'`;
      created.hidden = false;
      form.reset();
      say(form, `Runner ${runner.name} registered: it shows online once it connects with its token.`);
      await load();
    } catch (error) {
      say(form, error.message, true);
    }
  });

  load();
  refreshEvery(5000, load);
});
