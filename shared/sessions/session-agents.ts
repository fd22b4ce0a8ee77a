import type { AgentService } from '../agents/agents.service';
import type { Knex } from '../db/knex';

/** What sessions need to know of an agent: which one, and what the person is shown. */
export interface SessionAgent {
  agentId: string;
  displayName: string;
  greeting: string;
  inviteUrlTemplate: string;
}

export interface SessionAgentDirectory {
  /** The agent (the org's default when `agentId` is null), or throws 404. */
  forSession(orgId: string, agentId: string | null): Promise<SessionAgent>;
  /** The org's default agent's id (a machine session's agent, which nobody is shown), read through `db` (a transaction's, when in one). */
  defaultAgentId(orgId: string, db?: Knex | Knex.Transaction): Promise<string>;
}

/** The name the person sees when an agent has no `display_name` of its own. */
export const SERVICE_DISPLAY_NAME = 'Deskhand';

/** Sessions see agents through this: which agent, and what the person is shown. */
export function sessionAgentDirectory(agents: Pick<AgentService, 'get' | 'getDefaultAgentId'>): SessionAgentDirectory {
  return {
    async forSession(orgId, agentId) {
      const agent = await agents.get(orgId, agentId ?? (await agents.getDefaultAgentId(orgId)));
      return {
        agentId: agent.agent_id,
        displayName: agent.display_name || SERVICE_DISPLAY_NAME,
        greeting: agent.greeting,
        inviteUrlTemplate: agent.invite_url_template,
      };
    },
    defaultAgentId: (orgId, db) => agents.getDefaultAgentId(orgId, db),
  };
}
