// Settings, API keys: list the org's keys, create one (shown once), revoke one (asks first).
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say } = window.deskhand;
  const { show, rowStatus, askFirst, copyButton, wideRow } = window.settings;
  const body = document.getElementById('keys-body');
  const status = document.getElementById('keys-status');
  const form = document.getElementById('create-key-form');
  const box = document.getElementById('new-key');
  const secret = box.querySelector('.secret');
  copyButton(document.getElementById('copy-key'), secret, box.querySelector('.form-status'));
  document.getElementById('hide-key').addEventListener('click', () => {
    secret.textContent = '';
    box.hidden = true;
    form.querySelector('input').focus();
  });

  function keyRow(key) {
    const status = rowStatus();
    const actions = el('td', {}, status);
    if (!key.revoked_at) {
      actions.prepend(
        askFirst({
          label: 'Revoke',
          about: key.name,
          question: 'Revoke ' + key.name + '? Requests with it will be refused at once.',
          yes: 'Yes, revoke',
          status,
          run: async () => {
            await api('DELETE', '/v1/api_keys/' + encodeURIComponent(key.key_id));
            await load();
            show(document.getElementById('keys-status'), 'Revoked ' + key.name + '.');
          },
        }),
      );
    }
    return el(
      'tr',
      { 'data-key-id': key.key_id },
      el('td', {}, key.name),
      el('td', {}, el('code', {}, key.prefix + '…')),
      el('td', {}, when(key.created_at)),
      el('td', {}, key.last_used_at ? when(key.last_used_at) : 'never'),
      el('td', {}, key.revoked_at ? [el('span', { class: 'badge failed' }, 'revoked'), ' ', when(key.revoked_at)] : el('span', { class: 'badge ready' }, 'active')),
      actions,
    );
  }

  async function load() {
    try {
      const list = await api('GET', '/v1/api_keys');
      body.replaceChildren(...(list.data.length ? list.data.map(keyRow) : [wideRow(6, 'No keys yet.')]));
      show(status, '');
    } catch (error) {
      body.replaceChildren(wideRow(6, 'The keys are not shown.'));
      show(status, 'Cannot list the keys: ' + error.message, true);
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const name = form.querySelector('#key-name').value;
    try {
      const created = await api('POST', '/v1/api_keys', { name });
      form.reset();
      secret.textContent = created.key;
      box.hidden = false;
      say(form, 'Created ' + created.name + '. Copy the key below: it is shown only once.');
      await load();
    } catch (error) {
      say(form, 'Not created: ' + error.message, true);
    }
  });

  load();
});
