// What the workspace pages (sessions, agents, start states, runners) share: status badges, table
// rows kept in place while a list refreshes (so focus and messages stay put), lists a page at a
// time, refreshing while the page is shown, and a button that calls the API and shows its answer
// next to itself.
'use strict';
(function () {
  const { el, wideRow } = window.deskhand;

  function badge(status) {
    return el('span', { class: `badge ${status}` }, status);
  }

  /**
   * Shows `items` as the rows of `tbody` (`render(item)` makes one). Rows whose item has not
   * changed (by `stamp`, the whole item by default) are kept as they are, with `patch(row, item)`
   * bringing what `stamp` leaves out up to date; a changed item's row alone is replaced, unless
   * the list itself changed (then all are).
   */
  function updateRows(tbody, items, { id, render, empty, columns, stamp = (item) => JSON.stringify(item), patch = null }) {
    const rows = Array.from(tbody.children).filter((row) => row.dataset.id !== undefined);
    const sameList = rows.length === items.length && rows.every((row, index) => row.dataset.id === id(items[index]));
    const make = (item) => {
      const row = render(item);
      row.dataset.id = id(item);
      row.dataset.stamp = stamp(item);
      return row;
    };
    if (sameList && items.length > 0) {
      items.forEach((item, index) => {
        if (rows[index].dataset.stamp !== stamp(item)) rows[index].replaceWith(make(item));
        else if (patch) patch(rows[index], item);
      });
      return;
    }
    tbody.replaceChildren(...items.map(make));
    if (items.length === 0) tbody.append(wideRow(columns, empty));
  }

  /**
   * A list shown a page at a time, with its "Next page" and "First page" buttons, and a status line
   * that says when the API cannot be reached. `path(query)` is the page's API path (`query` holds
   * its `limit` and `cursor`; add filters to it), `show(page)` shows the page read. Returns `load`
   * (the page shown, read again) and `restart` (the first page).
   */
  function pagedList({ path, show, more, first, status }) {
    let cursor = null;
    let nextCursor = null;
    async function load() {
      const query = new URLSearchParams({ limit: '20' });
      if (cursor) query.set('cursor', cursor);
      try {
        const page = await window.deskhand.api('GET', path(query));
        show(page);
        nextCursor = page.next_cursor;
        more.hidden = !page.has_more;
        first.hidden = cursor === null;
        status.textContent = '';
        status.classList.remove('error');
      } catch (error) {
        status.textContent = error.message;
        status.classList.add('error');
      }
    }
    const go = (to) => {
      cursor = to;
      return load();
    };
    more.addEventListener('click', () => go(nextCursor));
    first.addEventListener('click', () => go(null));
    return { load, restart: () => go(null) };
  }

  /** Calls `load` every `ms` while the page is shown. */
  function refreshEvery(ms, load) {
    setInterval(() => {
      if (!document.hidden) load();
    }, ms);
  }

  /**
   * A button that runs `action` (an API call) and shows what went wrong right after it (such as
   * the API's 403 message when the person's role may not do it). `done` runs after success.
   */
  function actionButton(label, attributes, action, done) {
    const message = el('span', { class: 'ws-message', role: 'status', 'aria-live': 'polite' });
    const button = el('button', { type: 'button', ...attributes }, label);
    button.addEventListener('click', async () => {
      button.disabled = true;
      message.textContent = '';
      message.classList.remove('error');
      try {
        const answer = await action();
        button.disabled = false;
        if (done) await done(answer, message);
      } catch (error) {
        button.disabled = false;
        message.textContent = error.message;
        message.classList.add('error');
      }
    });
    return el('span', { class: 'ws-action' }, button, message);
  }

  /** An actor of the audit log in words. */
  function actor(who) {
    if (!who) return '';
    if (who.type === 'user') return who.email || 'a person';
    if (who.type === 'api_key') return `API key ${who.name || who.prefix || who.key_id}`;
    return who.type;
  }

  window.deskhandWorkspace = { badge, updateRows, pagedList, refreshEvery, actionButton, actor };
})();
