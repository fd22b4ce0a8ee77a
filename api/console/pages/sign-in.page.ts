import type { Context } from 'koa';
import { ApiError } from '../../../shared/errors';
import { sameSecret } from '../../../shared/auth/same-secret';
import { clientAddress } from '../../middleware/rate-limit';
import type { ConsoleRouting } from '../console.router';
import { formBody } from '../console.router';
import { clearConsoleCookie, consoleToken, setConsoleCookie, signInFormToken, signInFormTokenMatches } from '../console-cookies';
import { renderPage } from '../views';

/** Where to go after signing in: a console path given by the sign-in redirect, else the console. */
function nextPath(value: unknown): string {
  return typeof value === 'string' && /^\/console(\/|$|\?)/.test(value) && !value.startsWith('//') ? value : '/console';
}

/**
 * Signing in and out (docs/console.md, "Signing in"): an email and password through a form
 * guarded by a double-submit CSRF token, a one-time link from the CLI or an invitation, and
 * sign-out. Each sets or clears the session cookie (HttpOnly, Secure, SameSite=Lax).
 */
export function signInPages({ router, container }: ConsoleRouting): void {
  const { users, config } = container;
  const showForm = (ctx: Context, options: { next: string; email?: string; error?: string; status?: number }) =>
    renderPage(ctx, null, 'sign-in', { next: options.next, email: options.email ?? '', error: options.error ?? null, csrf: signInFormToken(ctx) }, { title: 'Sign in', status: options.status });

  router.get('/sign-in', async (ctx) => {
    if (await users.signedIn(consoleToken(ctx))) return ctx.redirect(nextPath(ctx.query.next));
    showForm(ctx, { next: nextPath(ctx.query.next) });
  });

  router.post('/sign-in', formBody, async (ctx) => {
    const form = (ctx.request as unknown as { body: Record<string, unknown> }).body ?? {};
    const next = nextPath(form.next);
    const email = typeof form.email === 'string' ? form.email : '';
    if (!signInFormTokenMatches(ctx, form._csrf)) return showForm(ctx, { next, email, error: 'The form expired; please sign in again.', status: 403 });
    try {
      const session = await users.signInWithPassword({ email, password: typeof form.password === 'string' ? form.password : '' }, clientAddress(ctx.req, config.trustProxy));
      setConsoleCookie(ctx, session.token, config.consoleSessionMs);
      ctx.redirect(next);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      showForm(ctx, { next, email, error: error.message, status: error.status });
    }
  });

  router.get('/sign-in/:token', async (ctx) => {
    try {
      const session = await users.signInWithLink(ctx.params.token!, clientAddress(ctx.req, config.trustProxy));
      setConsoleCookie(ctx, session.token, config.consoleSessionMs);
      ctx.set('Referrer-Policy', 'no-referrer');
      ctx.redirect('/console/account?welcome=1');
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      showForm(ctx, { next: '/console', error: error.message, status: error.status });
    }
  });

  router.post('/sign-out', formBody, async (ctx) => {
    const token = consoleToken(ctx);
    const signedIn = await users.signedIn(token);
    const form = (ctx.request as unknown as { body: Record<string, unknown> }).body ?? {};
    // Only the page's own form signs out: another site cannot sign a person out.
    if (signedIn && !(typeof form._csrf === 'string' && sameSecret(form._csrf, signedIn.csrfToken))) {
      ctx.status = 403;
      ctx.type = 'text/plain';
      ctx.body = 'Missing or wrong CSRF token';
      return;
    }
    if (token) await users.signOut(token);
    clearConsoleCookie(ctx);
    ctx.redirect('/console/sign-in');
  });
}
