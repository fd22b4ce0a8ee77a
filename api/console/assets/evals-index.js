// /console/evals: start a test run, the runs (filtered, a page at a time, refreshed while they run),
// picking two to compare, and the org's test sets and cases.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, when, say, wideRow } = window.deskhand;
  const { rate, runTime, triesDone, meanOf, badge, isActive, agentText, poll } = window.deskhandEvals;

  const startForm = document.getElementById('start-form');
  const setSelect = document.getElementById('start-set');
  const agentSelect = document.getElementById('start-agent');
  const versionSelect = document.getElementById('start-version');
  const filterAgent = document.getElementById('filter-agent');
  const filterSet = document.getElementById('filter-set');
  const runsBody = document.querySelector('#runs-table tbody');
  const runsMore = document.getElementById('runs-more');
  const runsStatus = document.getElementById('runs-status');
  const compareButton = document.getElementById('compare-selected');

  let agents = [];
  /** Test set names by id, for the runs' rows. */
  const setNames = new Map();
  /** The runs shown, in order, by id: their rows are redrawn as they change. */
  let runs = [];
  let runsCursor = null;
  const ticked = [];

  function option(value, text, selected) {
    return el('option', { value, selected: selected || null }, text);
  }

  /** Reads every page of a list (test sets for the pickers: an org has tens, not thousands). */
  async function all(path) {
    const items = [];
    let cursor = null;
    do {
      const page = await api('GET', path + (path.includes('?') ? '&' : '?') + 'limit=100' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
      items.push(...page.data);
      cursor = page.has_more ? page.next_cursor : null;
    } while (cursor);
    return items;
  }

  function fillVersions() {
    const agent = agents.find((item) => item.agent_id === agentSelect.value);
    versionSelect.replaceChildren(
      option('', agent ? 'Published (version ' + agent.version + ')' : 'Published'),
      option('draft', agent && agent.has_draft ? 'Draft (changed since version ' + agent.based_on_version + ')' : 'Draft (same as published)'),
    );
  }

  async function loadPickers() {
    const [agentList, sets] = await Promise.all([api('GET', '/v1/agents'), all('/v1/test_sets')]);
    agents = agentList.data;
    for (const set of sets) setNames.set(set.test_set_id, set.name);
    agentSelect.replaceChildren(...agents.map((agent) => option(agent.agent_id, agent.name + ' (' + agent.agent_id + ')', agent.is_default)));
    filterAgent.replaceChildren(option('', 'All agents'), ...agents.map((agent) => option(agent.agent_id, agent.name + ' (' + agent.agent_id + ')')));
    setSelect.replaceChildren(
      sets.length ? option('', 'Choose a test set') : option('', 'No test sets yet'),
      ...sets.map((set) => option(set.test_set_id, set.name + ' (' + set.case_count + ' cases)')),
    );
    filterSet.replaceChildren(option('', 'All test sets'), ...sets.map((set) => option(set.test_set_id, set.name)));
    fillVersions();
  }

  function runRow(run) {
    const checked = ticked.includes(run.test_run_id);
    const cancel = isActive(run)
      ? el('button', { type: 'button', class: 'danger', onclick: () => cancelRun(run), 'aria-label': 'Cancel run ' + run.test_run_id }, 'Cancel')
      : null;
    return el(
      'tr',
      { 'data-run': run.test_run_id },
      el('td', {}, el('input', { type: 'checkbox', checked: checked || null, 'aria-label': 'Compare run ' + run.test_run_id, onchange: (event) => tick(run.test_run_id, event.target.checked) })),
      el('td', {}, el('a', { href: '/console/evals/runs/' + encodeURIComponent(run.test_run_id) }, el('code', {}, run.test_run_id))),
      el('td', {}, badge(run.status)),
      el('td', {}, agentText(run)),
      el('td', {}, run.test_set_id ? setNames.get(run.test_set_id) || el('code', {}, run.test_set_id) : 'listed cases'),
      el('td', {}, triesDone(run)),
      el('td', {}, rate(run.summary.pass_rate)),
      el('td', {}, rate(meanOf(run, 'pass_at_k'))),
      el('td', {}, rate(meanOf(run, 'pass_hat_k'))),
      el('td', { class: 'evals-nowrap' }, runTime(run)),
      el('td', {}, when(run.created_at)),
      el('td', { class: 'evals-action' }, cancel, el('span', { class: 'error', role: 'status' })),
    );
  }

  function drawRuns() {
    runsBody.replaceChildren(...runs.map(runRow));
    if (!runs.length) runsBody.append(wideRow(12, 'No test runs yet' + (filterAgent.value || filterSet.value ? ' with these filters.' : '.')));
    runsMore.hidden = !runsCursor;
  }

  function runsPath(cursor) {
    const query = new URLSearchParams({ limit: '20' });
    if (filterAgent.value) query.set('agent_id', filterAgent.value);
    if (filterSet.value) query.set('test_set_id', filterSet.value);
    if (cursor) query.set('cursor', cursor);
    return '/v1/test_runs?' + query;
  }

  async function loadRuns(more) {
    const page = await api('GET', runsPath(more ? runsCursor : null));
    runs = more ? runs.concat(page.data) : page.data;
    runsCursor = page.has_more ? page.next_cursor : null;
    drawRuns();
    refresher.start();
  }

  // Runs that are queued or running are read again until they end.
  const refresher = poll(
    async () => {
      const fresh = await Promise.all(runs.filter(isActive).map((run) => api('GET', '/v1/test_runs/' + encodeURIComponent(run.test_run_id))));
      // Only the rows of runs that changed are redrawn, so the focus stays where it is elsewhere.
      for (const run of fresh) {
        runs[runs.findIndex((item) => item.test_run_id === run.test_run_id)] = run;
        const row = runsBody.querySelector('tr[data-run="' + CSS.escape(run.test_run_id) + '"]');
        if (row) row.replaceWith(runRow(run));
      }
    },
    () => runs.some(isActive),
    runsStatus,
  );

  async function cancelRun(run) {
    const row = runsBody.querySelector('tr[data-run="' + CSS.escape(run.test_run_id) + '"]');
    try {
      const cancelled = await api('POST', '/v1/test_runs/' + encodeURIComponent(run.test_run_id) + '/cancel');
      runs[runs.findIndex((item) => item.test_run_id === run.test_run_id)] = cancelled;
      drawRuns();
      runsStatus.textContent = 'Run ' + run.test_run_id + ' cancelled.';
    } catch (error) {
      if (row) row.querySelector('.evals-action .error').textContent = error.message;
    }
  }

  function tick(runId, on) {
    const at = ticked.indexOf(runId);
    if (on && at === -1) ticked.push(runId);
    if (!on && at !== -1) ticked.splice(at, 1);
    // Two at most: ticking a third lets go of the oldest tick (only that box changes, so the focus stays).
    while (ticked.length > 2) {
      const dropped = runsBody.querySelector('tr[data-run="' + CSS.escape(ticked.shift()) + '"] input[type="checkbox"]');
      if (dropped) dropped.checked = false;
    }
    compareButton.disabled = ticked.length !== 2;
    runsStatus.textContent = ticked.length === 2 ? 'Two runs ticked: ' + ticked.join(' and ') + '.' : '';
  }

  compareButton.addEventListener('click', () => {
    if (ticked.length !== 2) return;
    // The older run is the baseline (A), the newer one the new run (B).
    const [a, b] = ticked
      .map((id) => runs.find((run) => run.test_run_id === id))
      .sort((x, y) => new Date(x.created_at) - new Date(y.created_at));
    location.href = '/console/evals/compare?a=' + encodeURIComponent(a.test_run_id) + '&b=' + encodeURIComponent(b.test_run_id);
  });

  runsMore.addEventListener('click', () => loadRuns(true).catch((error) => (runsStatus.textContent = error.message)));
  document.getElementById('runs-filter').addEventListener('change', () => {
    ticked.length = 0;
    compareButton.disabled = true;
    loadRuns(false).catch((error) => (runsStatus.textContent = error.message));
  });
  document.getElementById('runs-filter').addEventListener('submit', (event) => event.preventDefault());
  agentSelect.addEventListener('change', fillVersions);

  startForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = { test_set_id: setSelect.value, agent_id: agentSelect.value };
    if (versionSelect.value) body.agent_version = versionSelect.value;
    const repeat = startForm.querySelector('#start-repeat').value;
    if (repeat) body.repeat = Number(repeat);
    try {
      const run = await api('POST', '/v1/test_runs', body);
      say(startForm, '');
      const status = startForm.querySelector('.form-status');
      status.replaceChildren('Run ', el('a', { href: '/console/evals/runs/' + encodeURIComponent(run.test_run_id) }, run.test_run_id), ' queued: ' + run.summary.tries.total + ' tries.');
      await loadRuns(false);
    } catch (error) {
      say(startForm, error.message, true);
    }
  });

  /** A table read a page at a time with a "show more" button. */
  function pagedTable(path, body, more, row, empty) {
    let cursor = null;
    async function load(next) {
      const page = await api('GET', path + '?limit=20' + (next && cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
      if (!next) body.replaceChildren();
      body.append(...page.data.map(row));
      if (!body.children.length) body.append(wideRow(6, empty));
      cursor = page.has_more ? page.next_cursor : null;
      more.hidden = !cursor;
    }
    more.addEventListener('click', () => load(true).catch((error) => more.after(el('p', { class: 'error' }, error.message))));
    return load(false);
  }

  const sets = pagedTable('/v1/test_sets', document.querySelector('#sets-table tbody'), document.getElementById('sets-more'), (set) =>
    el('tr', {}, el('td', {}, set.name), el('td', {}, String(set.case_count)), el('td', {}, String(set.repeat)), el('td', {}, el('code', {}, set.test_set_id)), el('td', {}, when(set.updated_at))),
  'No test sets yet.');
  const cases = pagedTable('/v1/test_cases', document.querySelector('#cases-table tbody'), document.getElementById('cases-more'), (item) =>
    el(
      'tr',
      {},
      el('td', {}, item.name),
      el('td', {}, item.key ? el('code', {}, item.key) : '–'),
      el('td', {}, el('code', {}, item.start_state)),
      el('td', {}, [item.success.check_script ? 'check script' : null, item.success.rubric ? 'rubric' : null].filter(Boolean).join(' and ')),
      el('td', {}, item.category || '–'),
      el('td', {}, item.tags.join(', ') || '–'),
    ),
  'No test cases yet: import some from a file.');

  Promise.all([loadPickers(), loadRuns(false), sets, cases])
    .then(drawRuns)
    .catch((error) => {
      runsStatus.textContent = 'Could not load: ' + error.message;
      runsStatus.classList.add('error');
    });
});
