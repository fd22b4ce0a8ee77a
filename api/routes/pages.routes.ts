import fs from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { normalizePairingCode } from '../../shared/sessions/pairing-code';
import { notFound } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { renderInvitePage } from '../pages/invite.page';
import { ASSETS_DIR } from '../console/views';

/** Pages people open in a browser. */
export function pageRoutes(container: Container): RouteSpec[] {
  const favicon = fs.readFileSync(path.join(ASSETS_DIR, 'favicon.svg'));
  return [
    defineRoute({
      method: 'get',
      path: '/invite/{code}',
      operationId: 'invitePage',
      summary: 'The invite page: the agent\'s greeting, its name, the pairing code and how to connect',
      description:
        'The HTML page the invite link opens for the person: the agent\'s display name and greeting, the pairing code (on one line, also on a phone), and how to install the app and connect; once a computer has paired, the session\'s state (connected, with the computer\'s name, or disconnected). In development only, how to try it with the reference desktop client. 404 (still HTML) when the code is unknown or has expired ("This session has ended" when a computer had paired). No authentication: the code is the capability.',
      tag: 'Pages',
      auth: 'none',
      params: Type.Object({ code: Type.String({ minLength: 1, maxLength: 20 }) }),
      response: { contentType: 'text/html', description: 'An HTML page (404 when the code is unknown or expired)' },
      errors: [{ ...notFound('<!doctype html>… This session has ended …'), html: true }],
      handler: async ({ params, ctx }) => {
        const code = normalizePairingCode(params.code);
        const invite = code ? await container.sessions.invite(code) : null;
        ctx.status = invite && invite.status !== 'expired' ? 200 : 404;
        ctx.type = 'text/html; charset=utf-8';
        ctx.set('Cache-Control', 'no-store');
        // img-src for its icon (/favicon.ico).
        ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'");
        ctx.body = renderInvitePage({
          code: code ?? params.code,
          displayName: invite?.agent.displayName ?? '',
          greeting: invite?.agent.greeting ?? '',
          baseUrl: container.config.baseUrl,
          status: invite?.status ?? 'unknown',
          paired: invite?.paired ?? false,
          deviceName: invite?.deviceName ?? null,
          developerHint: container.config.env === 'development',
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/favicon.ico',
      operationId: 'favicon',
      summary: 'The service\'s icon',
      description:
        'The icon browsers show beside the title of the console\'s pages and the invite page (which link it), and ask for on any page: an SVG (api/console/assets/favicon.svg, also at /console/assets/favicon.svg), served as image/svg+xml and cached for a day. No authentication.',
      tag: 'Pages',
      auth: 'none',
      response: { contentType: 'image/svg+xml', description: 'The icon (SVG)' },
      errors: [],
      handler: async ({ ctx }) => {
        ctx.type = 'image/svg+xml';
        ctx.set('Cache-Control', 'public, max-age=86400');
        ctx.set('X-Content-Type-Options', 'nosniff');
        // An SVG opened on its own is a document: it may show itself and run nothing.
        ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
        ctx.body = favicon;
      },
    }),
  ];
}
