import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Context } from 'koa';
import { Eta } from 'eta';
import type { SignedIn } from '../../shared/users/users.service';

/**
 * The console's pages are server-rendered Eta templates (api/console/views/*.eta, escaped by
 * default: `<%= %>` escapes, `<%~ %>` does not and is only for HTML we made), inside one layout
 * with one stylesheet. Each page's behaviour is a script of its own in api/console/assets/ that
 * calls the same `/v1` API as integrators do, with the console session's cookie and CSRF token.
 */

/** This folder in the sources, from the sources (api/console/) and from the compiled build (dist/api/console/). */
function sourceFolder(): string {
  let folder = __dirname;
  while (!existsSync(path.join(folder, 'package.json')) && path.dirname(folder) !== folder) folder = path.dirname(folder);
  return path.join(folder, 'api', 'console');
}

export const CONSOLE_SOURCE = sourceFolder();
export const ASSETS_DIR = path.join(CONSOLE_SOURCE, 'assets');

const eta = new Eta({ views: path.join(CONSOLE_SOURCE, 'views'), cache: true, autoEscape: true });

/** The content security policy of every console page: nothing but this origin, no inline script. */
export const CONSOLE_CSP =
  "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'";

export interface PageOptions {
  title: string;
  /** The nav entry shown as current. */
  section?: string;
  /** Scripts of this page (file names in api/console/assets/), loaded after console.js. */
  scripts?: string[];
  /** Data for the page's script, as JSON in a non-executable script tag (`#page-data`). */
  pageData?: unknown;
  status?: number;
}

/** Renders `view` (a template in views/) inside the layout and answers with it. */
export function renderPage(ctx: Context, signedIn: SignedIn | null, view: string, data: Record<string, unknown>, options: PageOptions): void {
  const body = eta.render(view, { ...data, signedIn });
  const html = eta.render('layout', {
    title: options.title,
    section: options.section ?? null,
    scripts: options.scripts ?? [],
    // `<` escaped so that no string in the data can close the script tag.
    pageData: options.pageData === undefined ? null : JSON.stringify(options.pageData).replace(/</g, '\\u003c'),
    signedIn,
    body,
  });
  ctx.status = options.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', CONSOLE_CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.body = html;
}
