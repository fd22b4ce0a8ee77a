// What every console page shares: calling the /v1 API as the signed-in person (the session cookie
// goes along; anything that changes state carries the page's CSRF token), and small helpers.
'use strict';
(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]');

  /** An error answered by the API: its status and the spec's error body. */
  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error && body.error.message) || 'Request failed (' + status + ')');
      this.status = status;
      this.error = (body && body.error) || {};
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (method !== 'GET' && method !== 'HEAD' && csrf) headers['X-CSRF-Token'] = csrf.content;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
    if (response.status === 401) {
      location.href = '/console/sign-in?next=' + encodeURIComponent(location.pathname + location.search);
      throw new ApiError(401, null);
    }
    const text = await response.text();
    const parsed = text ? JSON.parse(text) : null;
    if (!response.ok) throw new ApiError(response.status, parsed);
    return parsed;
  }

  /** `el('td', { class: 'x' }, 'text', child)`: an element with attributes and children (text is never parsed as HTML). */
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
    return node;
  }

  function pageData() {
    const node = document.getElementById('page-data');
    return node ? JSON.parse(node.textContent) : {};
  }

  function when(iso) {
    return iso ? new Date(iso).toLocaleString() : '';
  }

  /** Shows `text` in a status element (role=status), as an error when `bad`. */
  function show(node, text, bad) {
    node.textContent = text;
    node.classList.toggle('error', Boolean(bad));
  }

  /** Shows `text` in a form's status line (`.form-status`), as an error when `bad`. */
  function say(form, text, bad) {
    const status = form.querySelector('.form-status');
    if (status) show(status, text, bad);
  }

  /** A table row with one cell spanning `columns`, for "nothing here" and the like. */
  function wideRow(columns, text) {
    return el('tr', {}, el('td', { colspan: columns, class: 'note' }, text));
  }

  /**
   * A table that shows a list a page at a time, each page added below the last when its "more"
   * button is pressed. `path(query)` is a page's API path (`query` holds its `limit` and `cursor`;
   * add filters to it), `row(item)` an item's row, `empty` the text of the one row shown when the
   * list has none (`columns` wide). After each page, `shown(list)`; when one cannot be read,
   * `failed(error)`. Returns `read`: `read(true)` shows the first page again, `read(false)` adds the next.
   */
  function growingList({ body, more, path, row, columns, empty, limit = 20, shown = () => {}, failed }) {
    let cursor = null;
    async function read(fromStart) {
      if (fromStart) cursor = null;
      const query = new URLSearchParams({ limit: String(limit) });
      if (cursor) query.set('cursor', cursor);
      try {
        const list = await api('GET', path(query));
        if (fromStart) body.replaceChildren();
        body.append(...list.data.map(row));
        if (!body.children.length) body.append(wideRow(columns, empty));
        cursor = list.next_cursor;
        more.hidden = !list.has_more;
        shown(list);
      } catch (error) {
        failed(error);
      }
    }
    more.addEventListener('click', () => read(false));
    return read;
  }

  window.deskhand = { api, el, pageData, when, say, show, wideRow, growingList, ApiError };
})();
