import { clearLine, cursorTo } from 'node:readline';
import type { TestRun } from './evals-run-follow';

/**
 * What `evals run --wait` shows. On a terminal a person watches: a progress bar redrawn in
 * place, then a table. Anywhere else (CI logs, a pipe) a program reads: one JSON line per change
 * of the counts, then one summary line, so a log stays short and each line parses on its own.
 */
export interface RunOutput {
  /** A reading of the run; shown only when its status or counts changed since the last one. */
  progress(run: TestRun): void;
  /** The run ended: its summary. */
  summary(run: TestRun): void;
  /** Waiting stopped before the end (Ctrl+C): leave the screen tidy. */
  interrupted(): void;
}

export function runOutput(stream: NodeJS.WriteStream = process.stdout): RunOutput {
  return stream.isTTY ? terminalOutput(stream) : jsonLinesOutput(stream);
}

const done = (tries: TestRun['summary']['tries']) => tries.passed + tries.failed + tries.error + tries.cancelled;

/** Shows `show` only when the status or the counts differ from the previous reading. */
function onChange(show: (run: TestRun) => void): (run: TestRun) => void {
  let last = '';
  return (run) => {
    const now = JSON.stringify([run.status, run.summary.tries]);
    if (now === last) return;
    last = now;
    show(run);
  };
}

function jsonLinesOutput(stream: NodeJS.WritableStream): RunOutput {
  const line = (value: object) => stream.write(`${JSON.stringify(value)}\n`);
  return {
    progress: onChange((run) => line({ event: 'progress', test_run_id: run.test_run_id, status: run.status, done: done(run.summary.tries), tries: run.summary.tries })),
    summary: (run) =>
      line({
        event: 'summary',
        test_run_id: run.test_run_id,
        status: run.status,
        pass_rate: run.summary.pass_rate,
        tries: run.summary.tries,
        cases: run.summary.cases.map((c) => ({
          test_case_id: c.test_case_id,
          key: c.key,
          passed: c.passed,
          scored: c.scored,
          tries: c.tries,
          pass_rate: c.pass_rate,
          pass_at_k: c.pass_at_k,
          pass_hat_k: c.pass_hat_k,
          flaky: c.flaky,
        })),
      }),
    interrupted: () => undefined,
  };
}

const BAR_WIDTH = 20;

/** `[#####-----] 12/40 tries · 9 passed · 2 failed · 1 error` */
export function progressLine(run: TestRun): string {
  const { tries } = run.summary;
  const filled = tries.total === 0 ? 0 : Math.round((done(tries) / tries.total) * BAR_WIDTH);
  const parts = [`[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${done(tries)}/${tries.total} tries`, `${tries.passed} passed`, `${tries.failed} failed`, `${tries.error} error`];
  if (tries.cancelled) parts.push(`${tries.cancelled} cancelled`);
  if (run.status === 'queued') parts.push('queued');
  return parts.join(' · ');
}

const rate = (value: number | null) => (value === null ? '-' : value.toFixed(2));

/** The per-case table and the run's line, as text with aligned columns. */
export function summaryTable(run: TestRun): string {
  const head = ['case', 'passed', 'pass@k', 'pass^k', 'flaky'];
  const rows = run.summary.cases.map((c) => [c.key ?? c.test_case_id, `${c.passed}/${c.scored}`, rate(c.pass_at_k), rate(c.pass_hat_k), c.flaky ? 'flaky' : '']);
  const widths = head.map((_, i) => Math.max(...[head, ...rows].map((row) => row[i]!.length)));
  const format = (row: string[]) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  const { tries } = run.summary;
  const scored = tries.passed + tries.failed;
  const total = `${run.test_run_id} ${run.status}: pass rate ${rate(run.summary.pass_rate)} (${tries.passed} of ${scored} scored tries passed; ${tries.error} error, ${tries.cancelled} cancelled)`;
  return [format(head), ...rows.map(format), '', total].join('\n');
}

function terminalOutput(stream: NodeJS.WriteStream): RunOutput {
  let drawn = false;
  const endLine = () => {
    if (drawn) stream.write('\n');
    drawn = false;
  };
  return {
    progress: onChange((run) => {
      clearLine(stream, 0);
      cursorTo(stream, 0);
      stream.write(progressLine(run));
      drawn = true;
    }),
    summary: (run) => {
      endLine();
      stream.write(`\n${summaryTable(run)}\n`);
    },
    interrupted: endLine,
  };
}
