import type { Context } from 'koa';
import Router from '@koa/router';
import type { Container } from '../../shared/container';
import { ApiError } from '../../shared/errors';
import type { SignedIn } from '../../shared/users/users.service';
import { consoleToken } from './console-cookies';
import type { ConsoleRouting } from './console-routing';
import { renderPage } from './views';
import { assetRoutes } from './assets.routes';
import { signInPages } from './pages/sign-in.page';
import { invitationPages } from './pages/invitations.page';
import { accountPages } from './pages/account.page';
import { workspacePages } from './pages/workspace.page';
import { tasksPages } from './pages/tasks.page';
import { settingsPages } from './pages/settings.page';
import { evalsPages } from './pages/evals.page';
import { billingPages } from './pages/billing.page';

/** A not-found or error page in the console's layout, for what a person opened by hand. */
export function renderProblem(ctx: Context, signedIn: SignedIn | null, status: number, title: string, message: string): void {
  renderPage(ctx, signedIn, 'problem', { title, message }, { title, status });
}

/**
 * The console at /console: people sign in (a password or a one-time link), then open pages that
 * read and change the org through the same /v1 API integrators use (docs/console.md).
 */
export function consoleRouter(container: Container): Router {
  const router = new Router({ prefix: '/console' });
  const routing: ConsoleRouting = {
    router,
    container,
    page: (handler) => async (ctx) => {
      const signedIn = await container.users.signedIn(consoleToken(ctx));
      if (!signedIn) {
        ctx.redirect(`/console/sign-in?next=${encodeURIComponent(ctx.originalUrl)}`);
        return;
      }
      try {
        await handler(ctx, signedIn);
      } catch (error) {
        if (!(error instanceof ApiError) || error.status >= 500) throw error;
        renderProblem(ctx, signedIn, error.status, error.status === 404 ? 'Not found' : 'Cannot open this page', error.message);
      }
    },
  };
  router.get('/', routing.page((ctx) => ctx.redirect('/console/tasks')));
  assetRoutes(routing);
  signInPages(routing);
  invitationPages(routing);
  accountPages(routing);
  workspacePages(routing);
  tasksPages(routing);
  settingsPages(routing);
  evalsPages(routing);
  billingPages(routing);
  return router;
}
