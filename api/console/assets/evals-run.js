// /console/evals/runs/{id}: the run's summary, its cases and its tries (each linking to its task's
// replay), read again every few seconds while the run is queued or running.
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  const { api, el, pageData, wideRow } = window.deskhand;
  const { rate, duration, runTime, triesDone, badge, isActive, poll } = window.deskhandEvals;

  let run = pageData().run;
  const base = '/v1/test_runs/' + encodeURIComponent(run.test_run_id);
  /** The tries read so far (pages of 100, newest first), and the cursor of the next page. */
  let tries = [];
  let cursor = null;
  const live = document.getElementById('run-live');
  const cancelButton = document.getElementById('cancel-run');
  const moreButton = document.getElementById('tries-more');
  const text = (testId, value) => (document.querySelector('[data-testid="' + testId + '"]').textContent = value);

  function drawSummary() {
    const status = document.getElementById('run-status');
    status.className = 'badge ' + run.status;
    status.textContent = run.status;
    const counts = run.summary.tries;
    text('tries-done', triesDone(run));
    text('tries-by-status', ['passed', 'failed', 'error', 'cancelled', 'running', 'queued'].map((name) => counts[name] + ' ' + name).join(', '));
    text('pass-rate', rate(run.summary.pass_rate) + (run.summary.pass_rate === null ? ' (no try scored yet)' : ' (' + counts.passed + ' of ' + (counts.passed + counts.failed) + ' scored)'));
    text('run-time', runTime(run));
    cancelButton.hidden = !isActive(run);
  }

  /** Mean of the numbers given, or null without any. */
  function mean(values) {
    const known = values.filter((value) => value !== null && value !== undefined);
    return known.length ? known.reduce((sum, value) => sum + value, 0) / known.length : null;
  }

  function drawCases() {
    const body = document.querySelector('#cases-table tbody');
    body.replaceChildren(
      ...run.summary.cases.map((item) => {
        const mine = tries.filter((entry) => entry.test_case_id === item.test_case_id && entry.ended_at);
        const steps = mean(mine.map((entry) => entry.steps));
        return el(
          'tr',
          { 'data-case': item.test_case_id },
          el('th', { scope: 'row' }, el('code', {}, item.key || item.test_case_id)),
          el('td', {}, String(item.tries)),
          el('td', {}, item.passed + ' of ' + item.scored),
          el('td', {}, rate(item.pass_rate)),
          el('td', {}, rate(item.pass_at_k)),
          el('td', {}, rate(item.pass_hat_k)),
          el('td', {}, item.flaky ? el('span', { class: 'badge flaky' }, 'flaky') : 'no'),
          el('td', { class: 'evals-nowrap' }, duration(mean(mine.map((entry) => entry.duration_ms)))),
          el('td', {}, steps === null ? '–' : String(Math.round(steps * 10) / 10)),
        );
      }),
    );
    const caption = document.getElementById('cases-caption');
    caption.textContent =
      'Pass rate over scored tries (an error or a cancelled try is not scored); k is the case\'s tries per run. Avg time and steps over ' +
      (cursor ? 'the ' + tries.length + ' latest tries shown below.' : 'its ended tries.');
  }

  function verdict(entry) {
    const parts = [];
    if (entry.check) {
      parts.push(
        el(
          'div',
          { class: 'evals-verdict' },
          el('strong', {}, 'Check: '),
          entry.check.exit_code === 0 ? 'passed (exit 0)' : 'failed (' + (entry.check.exit_code === null ? entry.check.error || 'no exit status' : 'exit ' + entry.check.exit_code) + ')',
          entry.check.output ? el('details', {}, el('summary', {}, 'Output'), el('pre', {}, entry.check.output)) : null,
        ),
      );
    }
    if (entry.rubric) {
      parts.push(
        el(
          'div',
          { class: 'evals-verdict' },
          el('strong', {}, 'Rubric: '),
          (entry.rubric.passed ? 'passed' : 'failed') + ' (judge: ' + entry.rubric.judge_model + ')',
          el('ul', {}, ...entry.rubric.criteria.map((criterion) => el('li', {}, el('span', { class: criterion.passed ? 'evals-yes' : 'evals-no' }, criterion.passed ? 'met: ' : 'not met: '), criterion.criterion, ' — ', criterion.reason))),
        ),
      );
    }
    if (entry.error) parts.push(el('div', { class: 'evals-verdict error' }, entry.error));
    if (!parts.length) parts.push(entry.phase && isActive({ status: entry.status }) ? 'at ' + entry.phase : '–');
    return parts;
  }

  function tryRow(entry) {
    return el(
      'tr',
      { 'data-try': entry.try_id },
      el('td', {}, entry.key ? el('code', {}, entry.key) : el('code', {}, entry.test_case_id)),
      el('td', {}, String(entry.attempt)),
      el('td', {}, badge(entry.status)),
      el('td', {}, verdict(entry)),
      el('td', {}, entry.steps === null ? '–' : String(entry.steps)),
      el('td', { class: 'evals-nowrap' }, duration(entry.duration_ms)),
      el('td', {}, String(entry.infra_retries)),
      el('td', {}, entry.task_id ? el('a', { href: '/console/tasks/' + encodeURIComponent(entry.task_id) }, 'Replay ', el('code', {}, entry.task_id)) : '–'),
    );
  }

  /** What each drawn row was drawn from, by try: rows of tries that did not change stay (and so do the focus and an opened output). */
  const drawn = new Map();

  function drawTries() {
    const body = document.querySelector('#tries-table tbody');
    const rows = [...body.querySelectorAll('tr[data-try]')];
    const sameOrder = rows.length === tries.length && rows.every((row, index) => row.dataset.try === tries[index].try_id);
    if (!sameOrder) drawn.clear();
    const fresh = tries.map((entry, index) => {
      const signature = JSON.stringify(entry);
      if (sameOrder && drawn.get(entry.try_id) === signature) return rows[index];
      drawn.set(entry.try_id, signature);
      const row = tryRow(entry);
      if (sameOrder) rows[index].replaceWith(row);
      return row;
    });
    if (!sameOrder) body.replaceChildren(...fresh);
    if (!tries.length) body.append(wideRow(8, 'No tries.'));
    moreButton.hidden = !cursor;
  }

  async function readPage(after) {
    return api('GET', base + '/tries?limit=100' + (after ? '&cursor=' + encodeURIComponent(after) : ''));
  }

  /** Reads again as many tries as are shown (their statuses change while the run goes on). */
  async function rereadTries() {
    const wanted = Math.max(tries.length, 1);
    const fresh = [];
    let next = null;
    let more = false;
    do {
      const page = await readPage(next);
      fresh.push(...page.data);
      more = page.has_more;
      next = page.next_cursor;
    } while (more && fresh.length < wanted);
    return { tries: fresh, cursor: more ? next : null };
  }

  /** Counts reads and changes: a read that a later read or a cancel overtook is dropped, so an older state never shows over a newer one. */
  let generation = 0;

  async function refresh() {
    const mine = ++generation;
    const [fresh, reread] = await Promise.all([api('GET', base), rereadTries()]);
    if (mine !== generation) return;
    tries = reread.tries;
    cursor = reread.cursor;
    const was = run.status;
    run = fresh;
    drawSummary();
    drawCases();
    drawTries();
    if (was !== run.status) live.textContent = 'The run is ' + run.status + '.';
  }

  const follower = poll(refresh, () => isActive(run), live);

  moreButton.addEventListener('click', async () => {
    generation += 1;
    try {
      const page = await readPage(cursor);
      tries = tries.concat(page.data);
      cursor = page.has_more ? page.next_cursor : null;
      drawCases();
      drawTries();
    } catch (error) {
      live.textContent = error.message;
    }
  });

  cancelButton.addEventListener('click', async () => {
    live.classList.remove('error');
    try {
      generation += 1;
      run = await api('POST', base + '/cancel');
      drawSummary();
      live.textContent = 'Run cancelled: its running tries stop and the queued ones are skipped.';
      await refresh();
    } catch (error) {
      live.textContent = error.message;
      live.classList.add('error');
    }
  });

  drawSummary();
  drawCases();
  refresh()
    .then(() => follower.start())
    .catch((error) => {
      live.textContent = 'Could not load the tries: ' + error.message;
      live.classList.add('error');
    });
});
