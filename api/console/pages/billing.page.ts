import type { ConsoleRouting } from '../console-routing';
import { renderPage } from '../views';

/**
 * Billing (docs/console.md, "Pages: Billing"; docs/billing.md): the plan and choosing another,
 * this month's minutes with a chart, the balance, the top-ups list, auto top-up and a one-off
 * top-up. The page's script reads and changes them through /v1 as the signed-in person; what
 * needs the owner or admin role is shown to everyone, and a refusal shows the API's message.
 */
export function billingPages({ router, page }: ConsoleRouting): void {
  router.get(
    '/billing',
    page((ctx, signedIn) =>
      renderPage(ctx, signedIn, 'billing', {}, {
        title: 'Billing',
        section: 'billing',
        // chart.js (served by the console itself, assets.routes.ts) before the page's script, which draws with it.
        scripts: ['chart.umd.js', 'billing.js'],
      }),
    ),
  );
}
