// What the settings pages share: status lines, actions that ask first, copying a secret, and how
// an audit-log actor reads. Loaded after console.js and before each settings page's own script.
'use strict';
(function () {
  const { el, show, wideRow } = window.deskhand;

  /** A status line for one row's actions, read out when it changes. */
  function rowStatus() {
    return el('p', { class: 'form-status row-status', role: 'status', 'aria-live': 'polite' });
  }

  /** A button whose visible text is `label` and whose accessible name adds what it acts on. */
  function button(label, about, attributes) {
    return el('button', { type: 'button', ...attributes }, label, about ? el('span', { class: 'visually-hidden' }, ' ' + about) : null);
  }

  /**
   * A button that asks before it acts: clicking it shows `question` with a confirm and a cancel
   * button in its place; confirming runs `run()`. A refusal (the API's message, e.g. the 403 of a
   * member) is shown in `status`, next to the action.
   */
  function askFirst({ label, about, question, yes, status, run }) {
    const holder = el('span', { class: 'ask-first' });
    const start = button(label, about, { class: 'danger' });
    const ask = () => {
      const confirm = button(yes, about, { class: 'danger' });
      const cancel = button('Cancel', null, {});
      cancel.addEventListener('click', () => {
        holder.replaceChildren(start);
        start.focus();
      });
      confirm.addEventListener('click', async () => {
        confirm.disabled = true;
        cancel.disabled = true;
        try {
          await run();
        } catch (error) {
          show(status, error.message, true);
          holder.replaceChildren(start);
          start.focus();
        }
      });
      holder.replaceChildren(el('span', { class: 'question' }, question), ' ', confirm, ' ', cancel);
      confirm.focus();
    };
    start.addEventListener('click', ask);
    holder.append(start);
    return holder;
  }

  /** Wires a "Copy" button to copy the text of `source`, saying how it went in `status`. */
  function copyButton(buttonNode, source, status) {
    buttonNode.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(source.textContent);
        show(status, 'Copied.');
      } catch {
        show(status, 'Could not copy: select the text and copy it by hand.', true);
      }
    });
  }

  /** Who made a change, as the audit log records it: a person's email, or an API key's name and prefix. */
  function actorText(actor) {
    if (!actor) return 'Deskhand itself (the service or its CLI)';
    if (actor.type === 'user') return actor.email || 'a person';
    return 'API key ' + (actor.name || actor.key_id) + (actor.prefix ? ' (' + actor.prefix + '…)' : '');
  }

  window.settings = { show, rowStatus, button, askFirst, copyButton, actorText, wideRow };
})();
