// Settings, Webhook: the endpoint (URL, events), its secret (rotate: the new one shown once), a
// test event, and the delivery log with every attempt (status, time, answer) and redelivery.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say, growingList } = window.deskhand;
  const { show, rowStatus, button, askFirst, wideRow } = window.settings;
  const form = document.getElementById('webhook-form');
  const urlInput = document.getElementById('webhook-url');
  const eventTypes = document.getElementById('event-types');
  const secretCard = document.getElementById('secret-card');
  const secretState = document.getElementById('secret-state');
  const secretStatus = secretCard.querySelector('.form-status');
  const newSecret = document.getElementById('new-secret');
  const testButton = document.getElementById('send-test');
  const testStatus = testButton.closest('.card').querySelector('.form-status');
  const deliveriesBody = document.getElementById('deliveries-body');
  const deliveriesStatus = document.getElementById('deliveries-status');
  const more = document.getElementById('more-deliveries');
  let polling = null;

  function showEndpoint(webhook) {
    urlInput.value = webhook.url || '';
    eventTypes.replaceChildren(
      ...webhook.event_types.map((type) => {
        const id = 'event-' + type.replace(/[^a-z0-9]+/g, '-');
        return el('div', { class: 'event-type' }, el('input', { type: 'checkbox', id, name: 'events', value: type, checked: webhook.events.includes(type) }), ' ', el('label', { for: id }, type));
      }),
    );
    secretState.textContent = webhook.has_secret
      ? 'Deliveries are signed with the endpoint\'s secret. It was shown when it was made; rotate it to get a new one.'
      : 'No secret yet: one is made when you save a URL.';
    if (webhook.secret) {
      newSecret.querySelector('.secret').textContent = webhook.secret;
      newSecret.hidden = false;
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const events = [...eventTypes.querySelectorAll('input:checked')].map((box) => box.value);
    const url = urlInput.value.trim();
    try {
      const webhook = await api('PUT', '/v1/webhook', { url: url || null, events });
      showEndpoint(webhook);
      say(form, webhook.url ? 'Saved.' + (webhook.secret ? ' Its signing secret is shown below, once.' : '') : 'Removed the endpoint.');
    } catch (error) {
      say(form, 'Not saved: ' + error.message, true);
    }
  });

  document.getElementById('rotate-row').append(
    askFirst({
      label: 'Rotate secret',
      about: null,
      question: 'Make a new secret? The old one stops working at once.',
      yes: 'Yes, rotate',
      status: secretStatus,
      run: async () => {
        const webhook = await api('PUT', '/v1/webhook', { rotate_secret: true });
        showEndpoint(webhook);
        show(secretStatus, 'Rotated: the new secret is shown above, once.');
      },
    }),
  );

  testButton.addEventListener('click', async () => {
    testButton.disabled = true;
    try {
      const delivery = await api('POST', '/v1/webhook/test');
      show(testStatus, 'Sent a test event (' + delivery.event_id + '); follow it in the delivery log.');
      await loadDeliveries(true);
    } catch (error) {
      show(testStatus, 'Not sent: ' + error.message, true);
    } finally {
      testButton.disabled = false;
    }
  });

  function attemptItem(attempt) {
    const outcome = attempt.status_code === null ? 'no answer' : 'HTTP ' + attempt.status_code;
    return el(
      'li',
      { class: 'attempt' },
      el('span', { class: 'badge ' + (attempt.ok ? 'succeeded' : 'failed') }, outcome),
      ' #' + attempt.n + ' at ' + when(attempt.started_at) + ', ' + attempt.duration_ms + ' ms',
      attempt.error ? el('div', { class: 'error' }, attempt.error) : null,
      attempt.response_body ? el('details', {}, el('summary', {}, 'Answer'), el('pre', {}, attempt.response_body)) : null,
    );
  }

  function deliveryRow(delivery) {
    const status = rowStatus();
    const redeliver = button('Redeliver', delivery.event_type + ' ' + delivery.event_id, {});
    const row = el(
      'tr',
      { 'data-delivery-id': delivery.delivery_id, 'data-status': delivery.status },
      el('td', {}, delivery.event_type, el('div', {}, el('code', {}, delivery.event_id))),
      el('td', {}, el('span', { class: 'badge ' + delivery.status }, delivery.status), delivery.next_attempt_at ? el('div', { class: 'note' }, 'next try ' + when(delivery.next_attempt_at)) : null),
      el('td', {}, delivery.attempts.length ? el('ol', { class: 'attempts' }, ...delivery.attempts.map(attemptItem)) : 'none yet'),
      el('td', {}, when(delivery.created_at)),
      el('td', {}, redeliver, status),
    );
    redeliver.addEventListener('click', async () => {
      redeliver.disabled = true;
      try {
        const again = await api('POST', '/v1/webhook/deliveries/' + encodeURIComponent(delivery.delivery_id) + '/redeliver');
        const next = deliveryRow(again);
        row.replaceWith(next);
        show(next.querySelector('.row-status'), 'Sending again.');
        follow();
      } catch (error) {
        redeliver.disabled = false;
        show(status, error.message, true);
      }
    });
    return row;
  }

  const loadDeliveries = growingList({
    body: deliveriesBody,
    more,
    path: (query) => '/v1/webhook/deliveries?' + query,
    row: deliveryRow,
    columns: 5,
    empty: 'No deliveries yet.',
    shown: () => {
      show(deliveriesStatus, '');
      follow();
    },
    failed: (error) => show(deliveriesStatus, 'Cannot read the delivery log: ' + error.message, true),
  });

  /** While a shown delivery is pending, reads it again every two seconds (GET one delivery) until it settles. */
  function follow() {
    if (polling) return;
    polling = setTimeout(async () => {
      polling = null;
      const pending = [...deliveriesBody.querySelectorAll('tr[data-status="pending"]')];
      for (const row of pending) {
        try {
          const delivery = await api('GET', '/v1/webhook/deliveries/' + encodeURIComponent(row.dataset.deliveryId));
          if (delivery.status !== 'pending' || delivery.attempts.length !== row.querySelectorAll('.attempt').length) {
            const next = deliveryRow(delivery);
            if (row.isConnected) row.replaceWith(next);
            if (delivery.status !== 'pending') show(deliveriesStatus, 'Delivery of ' + delivery.event_type + ' ' + delivery.status + '.');
          }
        } catch {
          return;
        }
      }
      if (deliveriesBody.querySelector('tr[data-status="pending"]')) follow();
    }, 2000);
  }

  document.getElementById('refresh-deliveries').addEventListener('click', () => loadDeliveries(true));

  api('GET', '/v1/webhook')
    .then(showEndpoint)
    .catch((error) => say(form, 'Cannot read the endpoint: ' + error.message, true));
  loadDeliveries(true);
});
