// Settings, Audit log: every change in the org, newest first, with its actor; filtered by the
// form's fields (kept in the page's address), a page at a time.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when } = window.deskhand;
  const { show, actorText, wideRow } = window.settings;
  const FILTERS = ['object_type', 'object_id', 'action'];
  const form = document.getElementById('audit-filters');
  const body = document.getElementById('audit-body');
  const status = document.getElementById('audit-status');
  const more = document.getElementById('more-audit');
  const params = new URLSearchParams(location.search);
  const query = new URLSearchParams({ limit: '50' });
  for (const name of FILTERS) {
    const value = (params.get(name) || '').trim();
    form.elements[name].value = value;
    if (value) query.set(name, value);
  }
  let cursor = null;
  let shown = 0;

  function entryRow(entry) {
    const data = Object.keys(entry.data || {}).length ? JSON.stringify(entry.data) : '';
    return el(
      'tr',
      {},
      el('td', {}, when(entry.created_at)),
      el('td', {}, el('code', {}, entry.action)),
      el('td', {}, entry.object_type, ' ', el('code', {}, entry.object_id)),
      el('td', { class: 'actor' }, actorText(entry.actor)),
      el('td', {}, data ? el('code', { class: 'data' }, data) : '', entry.request_id ? el('div', { class: 'note' }, 'request ', el('code', {}, entry.request_id)) : ''),
    );
  }

  async function load() {
    const page = new URLSearchParams(query);
    if (cursor) page.set('cursor', cursor);
    try {
      const list = await api('GET', '/v1/audit_log?' + page.toString());
      if (!cursor) body.replaceChildren();
      body.append(...list.data.map(entryRow));
      shown += list.data.length;
      cursor = list.next_cursor;
      more.hidden = !list.has_more;
      const filtered = FILTERS.some((name) => query.has(name));
      if (shown === 0) body.replaceChildren(wideRow(5, filtered ? 'No entries match these filters.' : 'No entries yet.'));
      show(status, shown === 0 ? '' : shown + (shown === 1 ? ' entry' : ' entries') + (list.has_more ? ' shown; older ones follow.' : '.'));
    } catch (error) {
      more.hidden = true;
      show(status, 'Cannot read the audit log: ' + error.message, true);
    }
  }

  more.addEventListener('click', load);
  load();
});
