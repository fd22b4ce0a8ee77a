// The tasks list (/console/tasks): GET /v1/tasks with the page's filters, older pages through
// next_cursor, and the newest page read again every few seconds while the page is visible, so
// that new tasks appear and statuses change without a reload.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, pageData, when } = window.deskhand;
  const POLL_MS = 3000;
  const filters = pageData().filters || {};
  const rows = document.getElementById('tasks-rows');
  const status = document.getElementById('tasks-status');
  const more = document.getElementById('tasks-more');
  /** task_id → its row, so that a poll changes rows in place (focus and scrolling stay put). */
  const shown = new Map();
  let nextCursor = null;
  let timer = null;

  function query(cursor) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(filters)) if (value) params.set(name, value);
    if (cursor) params.set('cursor', cursor);
    const text = params.toString();
    return '/v1/tasks' + (text ? '?' + text : '');
  }

  /** The prompt's first line, short enough for a table cell. */
  function headline(prompt) {
    const line = prompt.split('\n').find((part) => part.trim()) || prompt;
    return line.length > 80 ? line.slice(0, 79) + '…' : line;
  }

  function cells(task) {
    return [
      el('td', {}, el('a', { href: '/console/tasks/' + encodeURIComponent(task.task_id) }, headline(task.prompt)), el('div', { class: 'note mono' }, task.task_id)),
      el('td', {}, el('span', { class: 'badge ' + task.status, 'data-testid': 'task-status' }, task.status), task.pending ? el('div', { class: 'note' }, task.pending.type === 'question' ? 'waits for an answer' : 'waits for an approval') : null),
      el('td', {}, task.agent_id + (task.agent_draft ? ' (draft)' : ' v' + task.agent_version)),
      el('td', { class: 'mono' }, task.session_id),
      el('td', {}, el('time', { datetime: task.created_at }, when(task.created_at))),
      el('td', {}, task.active_seconds + ' s'),
    ];
  }

  function put(task, where) {
    const known = shown.get(task.task_id);
    if (known) {
      known.replaceChildren(...cells(task));
      return;
    }
    const row = el('tr', { 'data-task-id': task.task_id }, cells(task));
    shown.set(task.task_id, row);
    if (where === 'top') rows.prepend(row);
    else rows.append(row);
  }

  function describe() {
    status.classList.remove('error');
    status.textContent = shown.size === 0 ? 'No tasks' + (Object.values(filters).some(Boolean) ? ' match these filters.' : ' yet.') : shown.size + (shown.size === 1 ? ' task' : ' tasks') + ' shown.';
  }

  function failed(error) {
    status.textContent = error.message;
    status.classList.add('error');
  }

  async function loadMore() {
    more.disabled = true;
    try {
      const page = await api('GET', query(nextCursor));
      page.data.forEach((task) => put(task, 'bottom'));
      nextCursor = page.has_more ? page.next_cursor : null;
      more.hidden = nextCursor === null;
      describe();
    } catch (error) {
      failed(error);
    } finally {
      more.disabled = false;
    }
  }

  /** Reads the newest page again: rows change in place, new tasks go on top (newest first). */
  async function refresh() {
    try {
      const page = await api('GET', query(null));
      const fresh = page.data.filter((task) => !shown.has(task.task_id));
      page.data.forEach((task) => shown.has(task.task_id) && put(task));
      fresh.reverse().forEach((task) => put(task, 'top'));
      if (fresh.length > 0) describe();
    } catch (error) {
      failed(error);
    }
  }

  function schedule() {
    clearTimeout(timer);
    timer = document.hidden ? null : setTimeout(async () => {
      await refresh();
      schedule();
    }, POLL_MS);
  }

  document.addEventListener('visibilitychange', () => {
    if (document.hidden) return clearTimeout(timer);
    refresh().then(schedule);
  });
  more.addEventListener('click', loadMore);
  loadMore().then(schedule);
});
