// Billing: the plan and choosing another (PUT /v1/plan, owners), this month's usage with a chart of
// minutes by day (chart.js, with the same figures in a table), the balance, auto top-up and a
// one-off top-up (admins), and the top-ups list. Refusals show the API's own message in place.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say, show, wideRow, growingList } = window.deskhand;
  const pageStatus = document.getElementById('billing-status');
  const plansBody = document.getElementById('plans-body');
  const paymentsBody = document.getElementById('payments-body');
  const paymentsStatus = document.getElementById('payments-status');
  const morePayments = document.getElementById('more-payments');
  const topUpForm = document.getElementById('top-up-form');
  const autoForm = document.getElementById('auto-top-up-form');
  const money = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });
  const KINDS = { credit: 'Credit', top_up: 'Top-up', auto_top_up: 'Auto top-up' };
  let currentPlanId = null;
  let chart = null;

  const dollars = (cents) => money.format(cents / 100);
  const cents = (input) => Math.round(Number(input.value) * 100);
  const minutes = (count) => count + (count === 1 ? ' minute' : ' minutes');
  const price = (plan) => (plan.price_per_minute_cents === null ? 'No paid minutes' : dollars(plan.price_per_minute_cents));
  const setText = (id, text) => {
    document.getElementById(id).textContent = text;
  };

  function showPlan(plan) {
    currentPlanId = plan.plan_id;
    setText('plan-name', plan.name);
    setText('plan-free', plan.free_minutes.toLocaleString('en-US'));
    setText('plan-price', price(plan));
    setText('plan-concurrent', String(plan.concurrent_tasks));
  }

  function planRow(plan) {
    const status = el('p', { class: 'form-status', role: 'status', 'aria-live': 'polite' });
    let action;
    if (plan.plan_id === currentPlanId) action = el('span', { class: 'badge current' }, 'Current plan');
    else if (!plan.self_serve) action = el('span', { class: 'note' }, 'Set up on request');
    else {
      action = el('button', { type: 'button', class: 'primary' }, 'Choose ' + plan.name);
      action.addEventListener('click', async () => {
        action.disabled = true;
        try {
          const chosen = await api('PUT', '/v1/plan', { plan_id: plan.plan_id });
          showPlan(chosen);
          show(pageStatus, 'You are now on the ' + chosen.name + ' plan.');
          await Promise.all([loadPlans(), loadUsage()]);
        } catch (error) {
          action.disabled = false;
          show(status, error.message, true);
        }
      });
    }
    return el(
      'tr',
      { 'data-plan-id': plan.plan_id },
      el('th', { scope: 'row' }, plan.name, el('div', { class: 'note' }, plan.description)),
      el('td', {}, plan.free_minutes.toLocaleString('en-US')),
      el('td', {}, price(plan)),
      el('td', {}, String(plan.concurrent_tasks)),
      el('td', {}, action, status),
    );
  }

  async function loadPlans() {
    const plans = await api('GET', '/v1/plans');
    plansBody.replaceChildren(...plans.data.map(planRow));
  }

  /** Every day of the month (UTC) from the usage's period, with its minutes (0 on days without). */
  function days(usage) {
    const counted = new Map(usage.by_day.map((day) => [day.date, day.minutes]));
    const list = [];
    for (let day = new Date(usage.period_start); day < new Date(usage.period_end); day.setUTCDate(day.getUTCDate() + 1)) {
      const date = day.toISOString().slice(0, 10);
      list.push({ date, minutes: counted.get(date) || 0 });
    }
    return list;
  }

  function drawChart(usage) {
    const month = days(usage);
    const canvas = document.getElementById('usage-chart');
    const busiest = usage.by_day.reduce((top, day) => (top && top.minutes >= day.minutes ? top : day), null);
    const summary =
      'Minutes by day in ' + usage.month + ' (UTC): ' + minutes(usage.minutes_used) + ' on ' + usage.by_day.length + (usage.by_day.length === 1 ? ' day' : ' days') +
      (busiest ? '; the most on ' + busiest.date + ', ' + minutes(busiest.minutes) : '') + '. The table below has every day\'s figures.';
    setText('chart-summary', summary);
    canvas.setAttribute('aria-label', summary);
    const data = {
      labels: month.map((day) => String(Number(day.date.slice(8)))),
      datasets: [{ label: 'Minutes', data: month.map((day) => day.minutes), backgroundColor: '#3340a0' }],
    };
    if (chart) {
      chart.data = data;
      chart.update();
      return;
    }
    chart = new window.Chart(canvas, {
      type: 'bar',
      data,
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: { legend: { display: false }, tooltip: { callbacks: { title: (items) => month[items[0].dataIndex].date } } },
        scales: { x: { title: { display: true, text: 'Day of the month' } }, y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'Minutes' } } },
      },
    });
  }

  async function loadUsage() {
    const usage = await api('GET', '/v1/usage');
    showPlan(usage.plan);
    setText('usage-heading', 'This month (' + usage.month + ')');
    setText('usage-balance', dollars(usage.balance_cents));
    setText('usage-free-left', usage.free_minutes_left.toLocaleString('en-US') + ' of ' + usage.plan.free_minutes.toLocaleString('en-US'));
    setText('usage-minutes', usage.minutes_used + ' (' + usage.task_minutes + ' on people\'s computers, ' + usage.machine_minutes + ' on eval machines)');
    setText('usage-spent', dollars(usage.spent_cents));
    setText('usage-running', usage.running_tasks + ' of ' + usage.plan.concurrent_tasks + ' at once');
    const byDay = document.getElementById('by-day-body');
    byDay.replaceChildren(...usage.by_day.map((day) => el('tr', {}, el('td', {}, day.date), el('td', {}, String(day.minutes)))));
    if (!usage.by_day.length) byDay.append(wideRow(2, 'No minutes yet this month.'));
    const byAgent = document.getElementById('by-agent-body');
    byAgent.replaceChildren(...usage.by_agent.map((agent) => el('tr', {}, el('td', {}, el('code', {}, agent.agent_id)), el('td', {}, String(agent.minutes)))));
    if (!usage.by_agent.length) byAgent.append(wideRow(2, 'No task minutes yet this month.'));
    drawChart(usage);
  }

  function showAccount(account) {
    const card = { none: 'No card is saved yet: a card is saved with the payment provider\'s card form (POST /v1/billing/card).', ok: 'A card is saved.', needs_attention: 'The saved card needs attention: its last payment failed.' }[account.card.status];
    setText('card-state', (account.payments_available ? '' : 'Payments are not set up on this server. ') + card);
    document.getElementById('auto-enabled').checked = account.auto_topup.enabled;
    document.getElementById('auto-amount').value = (account.auto_topup.amount_cents / 100).toFixed(2);
    document.getElementById('auto-threshold').value = (account.auto_topup.threshold_cents / 100).toFixed(2);
    document.getElementById('auto-limit').value = (account.auto_topup.monthly_limit_cents / 100).toFixed(2);
    setText('auto-used', 'Auto top-ups this month: ' + dollars(account.auto_topup.used_this_month_cents) + '.');
  }

  async function loadAccount() {
    try {
      showAccount(await api('GET', '/v1/billing'));
    } catch (error) {
      say(autoForm, 'Cannot read the auto top-up settings: ' + error.message, true);
    }
  }

  function paymentRow(entry) {
    return el(
      'tr',
      { 'data-entry-id': entry.id },
      el('td', {}, when(entry.created_at)),
      el('td', {}, KINDS[entry.kind] || entry.kind),
      el('td', { class: entry.amount_cents < 0 ? 'error' : null }, dollars(entry.amount_cents)),
      el('td', {}, dollars(entry.balance_after_cents)),
      el('td', { class: 'billing-wrap' }, entry.description, entry.payment_id ? el('div', { class: 'note' }, el('code', {}, entry.payment_id)) : null),
    );
  }

  const loadPayments = growingList({
    body: paymentsBody,
    more: morePayments,
    path: (query) => '/v1/billing/ledger?' + new URLSearchParams([['kind', 'payments'], ...query]),
    row: paymentRow,
    columns: 5,
    empty: 'No top-ups or credits yet.',
    shown: () => show(paymentsStatus, ''),
    failed: (error) => {
      paymentsBody.replaceChildren(wideRow(5, 'Not shown.'));
      show(paymentsStatus, 'Cannot read the top-ups: ' + error.message, true);
    },
  });

  topUpForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const button = topUpForm.querySelector('button');
    button.disabled = true;
    say(topUpForm, 'Charging the card…');
    try {
      const entry = await api('POST', '/v1/billing/top_ups', { amount_cents: cents(document.getElementById('top-up-amount')) });
      say(topUpForm, 'Added ' + dollars(entry.amount_cents) + '; the balance is ' + dollars(entry.balance_after_cents) + '.');
      await Promise.all([loadPayments(true), loadUsage()]);
    } catch (error) {
      say(topUpForm, 'No top-up: ' + error.message, true);
    } finally {
      button.disabled = false;
    }
  });

  autoForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const settings = {
      enabled: document.getElementById('auto-enabled').checked,
      amount_cents: cents(document.getElementById('auto-amount')),
      threshold_cents: cents(document.getElementById('auto-threshold')),
      monthly_limit_cents: cents(document.getElementById('auto-limit')),
    };
    try {
      showAccount(await api('PUT', '/v1/billing/settings', { auto_topup: settings }));
      say(autoForm, settings.enabled ? 'Saved: auto top-up is on.' : 'Saved: auto top-up is off.');
    } catch (error) {
      say(autoForm, 'Not saved: ' + error.message, true);
    }
  });


  loadUsage()
    .then(loadPlans)
    .catch((error) => show(pageStatus, 'Cannot read the plan and usage: ' + error.message, true));
  loadAccount();
  loadPayments(true);
});
