// /console/evals/compare?a=…&b=…: picking two runs, and run B against run A (the baseline) case by
// case through GET /v1/test_runs/{b}/compare?with={a}.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, pageData, when, say } = window.deskhand;
  const { rate, agentText } = window.deskhandEvals;
  const data = pageData();
  const form = document.getElementById('compare-form');

  async function fillPickers() {
    const runs = (await api('GET', '/v1/test_runs?limit=100')).data;
    for (const [select, current] of [[document.getElementById('compare-a'), data.a], [document.getElementById('compare-b'), data.b]]) {
      const options = runs.map((run) => el('option', { value: run.test_run_id, selected: run.test_run_id === current || null }, run.test_run_id + ' · ' + agentText(run) + ' · ' + run.status + ' · ' + when(run.created_at)));
      // A run named in the address but older than this page stays choosable.
      if (current && !runs.some((run) => run.test_run_id === current)) options.unshift(el('option', { value: current, selected: true }, current));
      select.replaceChildren(el('option', { value: '' }, runs.length ? 'Choose a run' : 'No test runs yet'), ...options);
    }
  }

  const LABELS = { regressed: 'regressed', improved: 'improved', flaky: 'flaky', unchanged: 'unchanged' };

  async function compare() {
    const result = await api('GET', '/v1/test_runs/' + encodeURIComponent(data.b) + '/compare?with=' + encodeURIComponent(data.a));
    document.querySelector('[data-testid="pass-rate-A"]').textContent = rate(result.baseline_pass_rate);
    document.querySelector('[data-testid="pass-rate-B"]').textContent = rate(result.pass_rate);
    const totals = result.totals;
    document.getElementById('compare-totals').textContent =
      totals.regressed + ' regressed, ' + totals.improved + ' improved, ' + totals.flaky + ' flaky, ' + totals.unchanged + ' unchanged' +
      ' (pass rate ' + rate(result.baseline_pass_rate) + ' in A, ' + rate(result.pass_rate) + ' in B).';
    document.querySelector('#compare-table tbody').replaceChildren(
      ...result.cases.map((item) =>
        el(
          'tr',
          { 'data-case': item.key || item.test_case_id },
          el('th', { scope: 'row' }, el('code', {}, item.key || item.test_case_id)),
          el('td', {}, rate(item.baseline_pass_rate)),
          el('td', {}, rate(item.pass_rate)),
          el('td', {}, item.label ? el('span', { class: 'badge ' + item.label }, LABELS[item.label]) : el('span', { class: 'note' }, 'not comparable (a side has no scored try)')),
        ),
      ),
    );
  }

  form.addEventListener('submit', (event) => {
    if (form.querySelector('#compare-a').value && form.querySelector('#compare-b').value) return;
    event.preventDefault();
    say(form, 'Choose both runs.', true);
  });

  fillPickers().catch((error) => say(form, 'Could not list the runs: ' + error.message, true));
  if (data.baseline && data.current) {
    compare().catch((error) => {
      const totals = document.getElementById('compare-totals');
      totals.textContent = 'Could not compare: ' + error.message;
      totals.classList.add('error');
    });
  }
});
