import type { Context, Middleware } from 'koa';
import type Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { Container } from '../../shared/container';
import type { SignedIn } from '../../shared/users/users.service';

/**
 * What the console's router hands each page module (api/console/console.router.ts), in a module
 * of its own so that the pages need not import the router that imports them.
 */
export interface ConsoleRouting {
  router: Router;
  container: Container;
  /** A page for signed-in people: anyone else is sent to sign in and brought back after. */
  page(handler: (ctx: Context, signedIn: SignedIn) => Promise<void> | void): Middleware;
}

/** Parses the console's own HTML forms (sign-in, sign-out); everything else goes through /v1. */
export const formBody = koaBody({ json: false, urlencoded: true, text: false, multipart: false, formLimit: '16kb' });
