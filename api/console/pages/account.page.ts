import type { ConsoleRouting } from '../console-routing';
import { PASSWORD_MIN_LENGTH } from '../../../shared/users/passwords';
import { renderPage } from '../views';

/** The signed-in person's account: who they are, their role, and their password (set through PUT /v1/me/password). */
export function accountPages({ router, container, page }: ConsoleRouting): void {
  router.get(
    '/account',
    page(async (ctx, signedIn) => {
      const members = await container.users.members(signedIn.auth.orgId);
      const me = members.find((member) => member.user_id === signedIn.auth.userId);
      renderPage(
        ctx,
        signedIn,
        'account',
        { welcome: ctx.query.welcome === '1', hasPassword: me?.has_password ?? false, minLength: PASSWORD_MIN_LENGTH, orgId: signedIn.auth.orgId },
        { title: 'Your account', scripts: ['account.js'] },
      );
    }),
  );
}
