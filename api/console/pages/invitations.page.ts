import type { Context } from 'koa';
import { ApiError } from '../../../shared/errors';
import type { Actor } from '../../../shared/audit/actor';
import { clientAddress } from '../../middleware/rate-limit';
import type { ConsoleRouting } from '../console-routing';
import { formBody } from '../console-routing';
import { consoleToken, setConsoleCookie, signInFormToken, signInFormTokenMatches, sessionFormTokenMatches } from '../console-cookies';
import { renderPage } from '../views';

/** Who invited, as the invitation's page says it. */
function inviter(actor: Actor): string {
  if (actor === null) return 'the operator of this Deskhand';
  if (actor.type === 'user') return actor.email ?? 'a person of the org';
  return `an API key of the org${actor.name ? ` (${actor.name})` : ''}`;
}

/**
 * An invitation's one-time link (docs/console.md, "Joining an org"): the page shows the org, the
 * address and the role, and is accepted by the person who proves the address is theirs: signed
 * in as that account (one click), or with its password; an address without an account sets one
 * up with a new password. The page is the same whether or not the address has an account, and
 * opening it signs nobody in.
 */
export function invitationPages({ router, container }: ConsoleRouting): void {
  const { users, config } = container;

  const show = async (ctx: Context, token: string, options: { error?: string; status?: number } = {}) => {
    const invitation = await users.invitationByLink(token);
    ctx.set('Referrer-Policy', 'no-referrer');
    if (!invitation) {
      const message = 'This invitation has been used, revoked or has expired; ask the org for a new one.';
      return renderPage(ctx, null, 'problem', { title: 'Invitation not found', message }, { title: 'Invitation not found', status: 404 });
    }
    const signedIn = await users.signedIn(consoleToken(ctx));
    const sameAccount = signedIn !== null && signedIn.email.toLowerCase() === invitation.email.toLowerCase();
    const action = `/console/invitations/${token}`;
    renderPage(
      ctx,
      signedIn,
      'invitation',
      {
        action,
        orgName: invitation.orgName,
        email: invitation.email,
        role: invitation.role,
        invitedBy: inviter(invitation.invitedBy),
        expiresAt: invitation.expiresAt.toISOString(),
        signedInAs: signedIn?.email ?? null,
        sameAccount,
        csrf: sameAccount ? signedIn!.csrfToken : signInFormToken(ctx, action),
        error: options.error ?? null,
      },
      { title: `Join ${invitation.orgName}`, status: options.status },
    );
  };

  router.get('/invitations/:token', async (ctx) => show(ctx, ctx.params.token!));

  router.post('/invitations/:token', formBody, async (ctx) => {
    const token = ctx.params.token!;
    const form = (ctx.request as unknown as { body: Record<string, unknown> }).body ?? {};
    const sessionToken = consoleToken(ctx);
    const address = clientAddress(ctx.req, config.trustProxy);
    try {
      let session;
      if (form.as === 'signed-in') {
        const signedIn = await users.signedIn(sessionToken);
        if (!signedIn || !sessionFormTokenMatches(form._csrf, signedIn)) {
          return show(ctx, token, { error: 'The form expired; please try again.', status: 403 });
        }
        session = await users.acceptInvitation(token, { signedInToken: sessionToken! }, address);
      } else {
        if (!signInFormTokenMatches(ctx, form._csrf)) return show(ctx, token, { error: 'The form expired; please try again.', status: 403 });
        session = await users.acceptInvitation(token, { password: typeof form.password === 'string' ? form.password : '' }, address);
      }
      setConsoleCookie(ctx, session.token, config.consoleSessionMs);
      ctx.set('Referrer-Policy', 'no-referrer');
      ctx.redirect('/console/tasks?joined=1');
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      await show(ctx, token, { error: error.message, status: error.status });
    }
  });
}
