import type { AgentService } from '../agents/agents.service';

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
  };
}
