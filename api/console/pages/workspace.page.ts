import type { ConsoleRouting } from '../console-routing';
import { AGENT_LIMITS, EFFORTS } from '../../../shared/agents/agent-config';
import { DEFAULT_MODEL, MODEL_CATALOG } from '../../../shared/models/catalog';
import { renderPage } from '../views';

/**
 * The workspace pages: sessions, agents (versions, draft, publish, restore), start states and
 * runners. Each page's script reads and changes them through /v1 (docs/console.md, "Pages:
 * Workspace"); the handlers only render the frame and what the forms need to offer.
 */
export function workspacePages({ router, container, page }: ConsoleRouting): void {
  router.get(
    '/sessions',
    page(async (ctx, signedIn) => {
      const agents = await container.agents.list(signedIn.auth.orgId);
      const options = agents.data.map((agent) => ({ agent_id: agent.agent_id, name: agent.name, is_default: agent.is_default }));
      renderPage(ctx, signedIn, 'workspace-sessions', { agents: options }, { title: 'Sessions', section: 'sessions', scripts: ['workspace-common.js', 'workspace-sessions.js'] });
    }),
  );

  router.get(
    '/agents',
    page((ctx, signedIn) => {
      renderPage(ctx, signedIn, 'workspace-agents', { limits: AGENT_LIMITS }, { title: 'Agents', section: 'agents', scripts: ['workspace-common.js', 'workspace-agents.js'] });
    }),
  );

  router.get(
    '/agents/:agent_id',
    page(async (ctx, signedIn) => {
      // Another org's agent, or none: the service's 404 becomes the console's not-found page.
      const agent = await container.agents.get(signedIn.auth.orgId, ctx.params.agent_id!);
      const models = MODEL_CATALOG.map((model) => ({ id: model.id, name: model.name }));
      renderPage(
        ctx,
        signedIn,
        'workspace-agent',
        { agent, models, efforts: EFFORTS, defaultModel: DEFAULT_MODEL, limits: AGENT_LIMITS },
        { title: `Agent ${agent.name}`, section: 'agents', scripts: ['workspace-common.js', 'workspace-agent.js'], pageData: { agentId: agent.agent_id } },
      );
    }),
  );

  router.get(
    '/start-states',
    page((ctx, signedIn) => {
      renderPage(ctx, signedIn, 'workspace-start-states', {}, { title: 'Start states', section: 'start-states', scripts: ['workspace-common.js', 'workspace-start-states.js'] });
    }),
  );

  router.get(
    '/runners',
    page((ctx, signedIn) => {
      renderPage(ctx, signedIn, 'workspace-runners', { baseUrl: container.config.baseUrl }, { title: 'Runners', section: 'runners', scripts: ['workspace-common.js', 'workspace-runners.js'] });
    }),
  );
}
