// Start states: the images of the org's runners and the org's own states (status, version),
// refreshing while the page is open; create, open (the live view), save, delete.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say } = window.deskhand;
  const { badge, updateRows, pagedList, refreshEvery, actionButton } = window.deskhandWorkspace;
  const body = document.querySelector('[data-testid="start-states"] tbody');
  const form = document.getElementById('new-state');
  const from = document.getElementById('state-from');
  const method = document.getElementById('state-method');

  const path = (state) => `/v1/start_states/${encodeURIComponent(state.start_state_id)}`;

  function actions(state) {
    if (state.kind === 'image') return null;
    const name = state.name;
    const list = [];
    if (state.status === 'open' && state.view) {
      list.push(el('a', { href: state.view.screen_url, 'data-testid': 'live-view' }, `Live view (until ${when(state.view.expires_at)})`));
      list.push(actionButton('Save', { class: 'primary', 'aria-label': `Save ${name} as its next version` }, () => api('POST', `${path(state)}/save`), () => load()));
    }
    if (state.status === 'ready') list.push(actionButton('Open', { 'aria-label': `Open ${name} with a live view` }, () => api('POST', `${path(state)}/open`), () => load()));
    list.push(actionButton('Delete', { class: 'danger', 'aria-label': `Delete ${name}` }, () => {
      if (!confirm(`Delete the start state ${name} and its saved disks?`)) return Promise.resolve(null);
      return api('DELETE', path(state));
    }, (deleted) => (deleted ? load() : undefined)));
    return el('div', { class: 'row' }, list);
  }

  function row(state) {
    const detail = [];
    if (state.method) detail.push(`set up ${state.method === 'hand' ? 'by hand' : `by ${state.method}`}`);
    if (state.task_id) detail.push(el('a', { href: `/console/tasks/${encodeURIComponent(state.task_id)}` }, 'its task'));
    return el('tr', null,
      el('td', null, el('div', null, state.name), el('code', { class: 'note' }, state.start_state_id),
        state.description ? el('div', { class: 'note' }, state.description) : null,
        state.error ? el('div', { class: 'error' }, state.error) : null),
      el('td', null, state.kind),
      el('td', null, badge(state.status)),
      el('td', null, String(state.version)),
      el('td', null, state.os, state.labels.length ? el('div', { class: 'note' }, state.labels.join(', ')) : null),
      el('td', null, state.from || '', detail.length ? el('div', { class: 'note' }, ...detail.flatMap((part, index) => (index ? [', ', part] : [part]))) : null),
      el('td', null, when(state.updated_at)),
      el('td', null, actions(state)));
  }

  /** The choices of "Made from": images, and ready states of this page (kept when the page changes). */
  function offer(states) {
    const choices = states.filter((state) => state.kind === 'image' || state.status === 'ready');
    const known = new Set(Array.from(from.options).map((option) => option.value));
    for (const state of choices) {
      if (known.has(state.start_state_id)) continue;
      from.append(el('option', { value: state.start_state_id }, state.kind === 'image' ? `${state.name} (image)` : `${state.name} (${state.start_state_id}, version ${state.version})`));
    }
  }

  const pager = pagedList({
    path: (query) => `/v1/start_states?${query}`,
    show: (page) => {
      updateRows(body, page.data, {
        id: (state) => state.start_state_id,
        render: row,
        empty: 'No images and no start states yet: an image appears once a runner that has it connects.',
        columns: 8,
      });
      offer(page.data);
    },
    more: document.getElementById('states-more'),
    first: document.getElementById('states-first'),
    status: document.getElementById('states-status'),
  });
  const load = () => pager.load();

  function showMethodFields() {
    document.getElementById('state-script-field').hidden = method.value !== 'script';
    document.getElementById('state-instruction-field').hidden = method.value !== 'instruction';
  }
  method.addEventListener('change', showMethodFields);
  showMethodFields();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const values = new FormData(form);
    const state = { name: String(values.get('name')).trim(), from: String(values.get('from') || ''), method: method.value };
    if (state.method === 'script') state.script = String(values.get('script'));
    if (state.method === 'instruction') state.instruction = String(values.get('instruction'));
    const description = String(values.get('description')).trim();
    if (description) state.description = description;
    say(form, 'Creating…');
    try {
      const made = await api('POST', '/v1/start_states', state);
      say(form, `Start state ${made.name} created (${made.status}).`);
      form.reset();
      showMethodFields();
      await pager.restart();
    } catch (error) {
      say(form, error.message, true);
    }
  });

  load();
  refreshEvery(3000, load);
});
