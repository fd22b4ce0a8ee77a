import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ConsoleRouting } from '../console-routing';
import { CONSOLE_SOURCE, renderPage } from '../views';

/** docs/evals.md, shown by the console so the import instructions are one click away, offline too. */
const EVALS_GUIDE = path.join(CONSOLE_SOURCE, '..', '..', 'docs', 'evals.md');

interface GuideSection {
  level: 2 | 3;
  title: string;
  id: string;
  text: string;
}

/** The guide cut at its `##` and `###` headings (so each can be linked to); the text between stays as written. */
function guideSections(markdown: string): { title: string; intro: string; sections: GuideSection[] } {
  const [first = '', ...rest] = markdown.split(/^(?=#{2,3} )/m);
  const title = /^# (.*)$/m.exec(first)?.[1] ?? 'Evals';
  const sections = rest.map((part): GuideSection => {
    const newline = part.indexOf('\n');
    const heading = part.slice(0, newline === -1 ? undefined : newline);
    const level = heading.startsWith('### ') ? 3 : 2;
    const name = heading.replace(/^#+ /, '').trim();
    return { level, title: name, id: name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, ''), text: newline === -1 ? '' : part.slice(newline + 1).trim() };
  });
  return { title, intro: first.replace(/^# .*$/m, '').trim(), sections };
}

/**
 * Evals (docs/console.md, "Pages: Evals"): the org's test runs with their summaries, its test
 * sets and cases, starting and cancelling a run; one run's cases and tries (each linking to its
 * task's replay), updating while it runs; two runs compared case by case. Every read and change
 * goes through /v1 from the page's script; the handlers only check that a run is the org's.
 */
export function evalsPages({ router, container, page }: ConsoleRouting): void {
  const { testRuns, testSets } = container;
  /** A run's test set by name; null for a run of listed cases or a set deleted since. */
  const setName = async (orgId: string, testSetId: string | null) => (testSetId ? testSets.get(orgId, testSetId).then((set) => set.name, () => null) : null);

  router.get(
    '/evals',
    page((ctx, signedIn) => {
      renderPage(ctx, signedIn, 'evals-index', {}, { title: 'Evals', section: 'evals', scripts: ['evals-common.js', 'evals-index.js'] });
    }),
  );

  router.get(
    '/evals/runs/:test_run_id',
    page(async (ctx, signedIn) => {
      // Another org's run, or none: the service's 404 becomes the console's not-found page.
      const run = await testRuns.get(signedIn.auth.orgId, ctx.params.test_run_id!);
      renderPage(ctx, signedIn, 'evals-run', { run, setName: await setName(signedIn.auth.orgId, run.test_set_id) }, { title: `Test run ${run.test_run_id}`, section: 'evals', scripts: ['evals-common.js', 'evals-run.js'], pageData: { run } });
    }),
  );

  router.get(
    '/evals/compare',
    page(async (ctx, signedIn) => {
      const a = typeof ctx.query.a === 'string' ? ctx.query.a.trim() : '';
      const b = typeof ctx.query.b === 'string' ? ctx.query.b.trim() : '';
      // Both named: both must be the org's runs. Otherwise the page offers to pick them.
      const runs = a && b ? await Promise.all([testRuns.get(signedIn.auth.orgId, a), testRuns.get(signedIn.auth.orgId, b)]) : null;
      const setNames = runs ? await Promise.all(runs.map((run) => setName(signedIn.auth.orgId, run.test_set_id))) : [];
      renderPage(
        ctx,
        signedIn,
        'evals-compare',
        { a, b, baseline: runs?.[0] ?? null, current: runs?.[1] ?? null, setNames },
        { title: 'Compare test runs', section: 'evals', scripts: ['evals-common.js', 'evals-compare.js'], pageData: { a, b, baseline: runs?.[0] ?? null, current: runs?.[1] ?? null } },
      );
    }),
  );

  router.get(
    '/evals/guide',
    page((ctx, signedIn) => {
      const guide = guideSections(readFileSync(EVALS_GUIDE, 'utf8'));
      renderPage(ctx, signedIn, 'evals-guide', guide, { title: guide.title, section: 'evals' });
    }),
  );
}
