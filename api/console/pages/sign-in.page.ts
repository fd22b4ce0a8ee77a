import type { Context } from 'koa';
import { ApiError } from '../../../shared/errors';
import { clientAddress } from '../../middleware/rate-limit';
import type { ConsoleRouting } from '../console-routing';
import { formBody } from '../console-routing';
import { clearConsoleCookie, consoleToken, setConsoleCookie, signInFormToken, signInFormTokenMatches, sessionFormTokenMatches } from '../console-cookies';
import { renderPage } from '../views';

/** Where to go after signing in: a console path given by the sign-in redirect, else the console. */
function nextPath(value: unknown): string {
  return typeof value === 'string' && /^\/console(\/|$|\?)/.test(value) && !value.startsWith('//') ? value : '/console';
}

/** An org id named by a sign-in link (`?org=`) or a form, or '' when none is. */
function orgField(value: unknown): string {
  return typeof value === 'string' && /^org_[a-z0-9]{1,40}$/.test(value) ? value : '';
}

/**
 * Signing in and out (docs/console.md, "Signing in"): an email and password through a form
 * guarded by a double-submit CSRF token (into the org named by `?org=`, or the person chooses
 * among their own orgs), a one-time link from the CLI, switching to another of one's orgs, and
 * sign-out. Each sets or clears the session cookie (HttpOnly, Secure, SameSite=Lax).
 */
export function signInPages({ router, container, page }: ConsoleRouting): void {
  const { users, config } = container;
  const showForm = (ctx: Context, options: { next: string; org?: string; email?: string; error?: string; status?: number }) =>
    renderPage(
      ctx,
      null,
      'sign-in',
      { next: options.next, org: options.org ?? '', email: options.email ?? '', error: options.error ?? null, csrf: signInFormToken(ctx) },
      { title: 'Sign in', status: options.status },
    );

  router.get('/sign-in', async (ctx) => {
    const org = orgField(ctx.query.org);
    const signedIn = await users.signedIn(consoleToken(ctx));
    if (signedIn && (!org || org === signedIn.auth.orgId)) return ctx.redirect(nextPath(ctx.query.next));
    showForm(ctx, { next: nextPath(ctx.query.next), org });
  });

  router.post('/sign-in', formBody, async (ctx) => {
    const form = (ctx.request as unknown as { body: Record<string, unknown> }).body ?? {};
    const next = nextPath(form.next);
    const org = orgField(form.org);
    const email = typeof form.email === 'string' ? form.email : '';
    if (!signInFormTokenMatches(ctx, form._csrf)) return showForm(ctx, { next, org, email, error: 'The form expired; please sign in again.', status: 403 });
    try {
      const password = typeof form.password === 'string' ? form.password : '';
      const session = await users.signInWithPassword({ email, password, ...(org ? { orgId: org } : {}) }, clientAddress(ctx.req, config.trustProxy));
      setConsoleCookie(ctx, session.token, config.consoleSessionMs);
      // Someone in several orgs who named none chooses one among their own.
      ctx.redirect(!org && session.orgCount > 1 ? `/console/orgs?next=${encodeURIComponent(next)}` : next);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      showForm(ctx, { next, org, email, error: error.message, status: error.status });
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

  router.get(
    '/orgs',
    page(async (ctx, signedIn) => {
      const orgs = await users.orgsOf(signedIn);
      renderPage(ctx, signedIn, 'orgs', { orgs, next: nextPath(ctx.query.next) }, { title: 'Your orgs' });
    }),
  );

  router.post('/orgs/switch', formBody, async (ctx) => {
    const token = consoleToken(ctx);
    const signedIn = await users.signedIn(token);
    const form = (ctx.request as unknown as { body: Record<string, unknown> }).body ?? {};
    if (!signedIn) return ctx.redirect('/console/sign-in');
    if (!sessionFormTokenMatches(form._csrf, signedIn)) {
      ctx.status = 403;
      ctx.type = 'text/plain';
      ctx.body = 'Missing or wrong CSRF token';
      return;
    }
    try {
      const session = await users.switchOrg(token!, orgField(form.org_id));
      setConsoleCookie(ctx, session.token, config.consoleSessionMs);
      ctx.redirect(nextPath(form.next));
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      renderPage(ctx, signedIn, 'problem', { title: 'Cannot switch', message: error.message }, { title: 'Cannot switch', status: error.status });
    }
  });

  router.post('/sign-out', formBody, async (ctx) => {
    const token = consoleToken(ctx);
    const signedIn = await users.signedIn(token);
    const form = (ctx.request as unknown as { body: Record<string, unknown> }).body ?? {};
    // Only the page's own form signs out: another site cannot sign a person out.
    if (signedIn && !sessionFormTokenMatches(form._csrf, signedIn)) {
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
