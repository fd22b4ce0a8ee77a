// What the workspace pages (sessions, agents, start states, runners) share: status badges, table
// rows kept in place while a list refreshes (so focus and messages stay put), refreshing while
// the page is shown, and a button that calls the API and shows its answer next to itself.
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

  window.deskhandWorkspace = { badge, updateRows, refreshEvery, actionButton, actor };
})();
