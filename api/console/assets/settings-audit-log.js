// Settings, Audit log: every change in the org, newest first, with its actor; filtered by the
// form's fields (kept in the page's address), a page at a time.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { el, when, growingList } = window.deskhand;
  const { show, actorText, wideRow } = window.settings;
  const FILTERS = ['object_type', 'object_id', 'action'];
  const form = document.getElementById('audit-filters');
  const body = document.getElementById('audit-body');
  const status = document.getElementById('audit-status');
  const more = document.getElementById('more-audit');
  const params = new URLSearchParams(location.search);
  const query = new URLSearchParams();
  for (const name of FILTERS) {
    const value = (params.get(name) || '').trim();
    form.elements[name].value = value;
    if (value) query.set(name, value);
  }

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

  const filtered = FILTERS.some((name) => query.has(name));
  let shown = 0;
  const load = growingList({
    body,
    more,
    limit: 50,
    path: (page) => '/v1/audit_log?' + new URLSearchParams([...query, ...page]),
    row: entryRow,
    columns: 5,
    empty: filtered ? 'No entries match these filters.' : 'No entries yet.',
    shown: (list) => {
      shown += list.data.length;
      show(status, shown === 0 ? '' : shown + (shown === 1 ? ' entry' : ' entries') + (list.has_more ? ' shown; older ones follow.' : '.'));
    },
    failed: (error) => {
      more.hidden = true;
      show(status, 'Cannot read the audit log: ' + error.message, true);
    },
  });
  load(true);
});
