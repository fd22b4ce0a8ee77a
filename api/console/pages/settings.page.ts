import type { ConsoleRouting } from '../console-routing';
import { renderPage } from '../views';

/** The settings pages, in the order of their tabs: path under /console/settings (also the name of its view and script) and title. */
const SETTINGS_PAGES = [
  { path: 'api-keys', title: 'API keys' },
  { path: 'members', title: 'Members' },
  { path: 'webhook', title: 'Webhook' },
  { path: 'audit-log', title: 'Audit log' },
] as const;

/** Suggestions for the audit log's filters (any value may be typed: the log is filtered by exact match). */
const AUDIT_OBJECT_TYPES = ['agent', 'api_key', 'invitation', 'org', 'runner', 'session', 'start_state', 'task', 'test_case', 'test_run', 'test_set', 'tool_secret', 'user', 'webhook', 'webhook_delivery'];
const AUDIT_ACTIONS = [
  'api_key.created', 'api_key.revoked', 'member.invited', 'invitation.accepted', 'invitation.revoked', 'member.added', 'member.role_changed', 'member.removed', 'user.signed_in', 'user.signed_out', 'user.password_set',
  'webhook.created', 'webhook.updated', 'webhook.deleted', 'webhook.test_sent', 'webhook.redelivery_requested', 'tool_secret.rotated',
  'agent.created', 'agent.published', 'agent.draft_published', 'agent.version_restored', 'session.created', 'task.created', 'task.stopped',
  'runner.created', 'runner.deleted', 'start_state.created', 'test_case.created', 'test_set.created', 'test_run.created', 'test_run.cancelled',
];

/**
 * Settings (docs/console.md, "Pages: Settings"): the org's API keys, members and roles, webhook
 * endpoint with its delivery log, and audit log. Each page's script reads and changes them
 * through /v1; admin-only actions are shown to everyone and a member sees the API's 403 message.
 */
export function settingsPages({ router, page }: ConsoleRouting): void {
  router.get('/settings', page((ctx) => ctx.redirect('/console/settings/api-keys')));
  for (const { path, title } of SETTINGS_PAGES) {
    router.get(
      `/settings/${path}`,
      page((ctx, signedIn) =>
        renderPage(
          ctx,
          signedIn,
          `settings-${path}`,
          { tabs: SETTINGS_PAGES, current: path, objectTypes: AUDIT_OBJECT_TYPES, actions: AUDIT_ACTIONS },
          {
            title: `${title} · Settings`,
            section: 'settings',
            scripts: ['settings-common.js', `settings-${path}.js`],
            pageData: { userId: signedIn.auth.userId },
          },
        ),
      ),
    );
  }
}
