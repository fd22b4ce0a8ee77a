// What the evals pages share: how rates, times and statuses are written, and polling a run.
'use strict';
(function () {
  const { el } = window.deskhand;

  /** 0.8333 → "83%"; null (nothing scored yet) → "–". */
  function rate(value) {
    return value === null || value === undefined ? '–' : Math.round(value * 1000) / 10 + '%';
  }

  /** Milliseconds as "850 ms", "12.4 s", "3 min 5 s", "1 h 2 min". */
  function duration(ms) {
    if (ms === null || ms === undefined || Number.isNaN(ms)) return '–';
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60_000) return Math.round(ms / 100) / 10 + ' s';
    const minutes = Math.floor(ms / 60_000);
    if (minutes < 60) return minutes + ' min ' + Math.round((ms % 60_000) / 1000) + ' s';
    return Math.floor(minutes / 60) + ' h ' + (minutes % 60) + ' min';
  }

  /** A run's time: from its start to its end, or to now while it goes on. */
  function runTime(run) {
    if (!run.started_at) return run.status === 'cancelled' ? '–' : 'not started';
    const end = run.ended_at ? new Date(run.ended_at) : new Date();
    return duration(end - new Date(run.started_at)) + (run.ended_at ? '' : ' so far');
  }

  /** Tries that ended (passed, failed, error, cancelled) of all the run's tries. */
  function triesDone(run) {
    const tries = run.summary.tries;
    return tries.passed + tries.failed + tries.error + tries.cancelled + ' of ' + tries.total;
  }

  /** The run's pass@k and pass^k: the means over its cases that have one (each case's k is its repeat). */
  function meanOf(run, field) {
    const values = run.summary.cases.map((item) => item[field]).filter((value) => value !== null);
    return values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : null;
  }

  function badge(status) {
    return el('span', { class: 'badge ' + status }, status);
  }

  function isActive(run) {
    return run.status === 'queued' || run.status === 'running';
  }

  function agentText(run) {
    return run.agent_id + (run.draft ? ' (draft on v' + run.agent_version + ')' : ' v' + run.agent_version);
  }

  /** Asks `read` again every few seconds while `active()` holds; errors are shown in `status` and polling goes on. */
  function poll(read, active, status) {
    let timer = null;
    const tick = async () => {
      timer = null;
      if (!active()) return;
      try {
        await read();
      } catch (error) {
        if (status) status.textContent = 'Could not refresh: ' + error.message;
      }
      if (active()) timer = setTimeout(tick, 2500);
    };
    return {
      start() {
        if (timer === null && active()) timer = setTimeout(tick, 2500);
      },
    };
  }

  window.deskhandEvals = { rate, duration, runTime, triesDone, meanOf, badge, isActive, agentText, poll };
})();
