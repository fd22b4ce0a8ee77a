import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf, PageQuery } from '../schemas/common.schemas';
import {
  AgentDraftSchema,
  AgentFileSchema,
  AgentFileWithContentSchema,
  AgentIdParams,
  AgentSchema,
  AgentVersionSchema,
  CreateAgentBody,
  DraftBody,
  FileListQuery,
  FilePathParams,
  PatchAgentBody,
  PublishedAgentSchema,
  VersionParams,
  WriteFileBody,
  WrittenAgentFileSchema,
} from '../schemas/agents.schemas';

const TAG = 'Agents';
const FILES_TAG = 'Agent files';

/** Agents: create, read, publish, drafts, versions and restore; the agent's file store. */
export function agentRoutes(container: Container): RouteSpec[] {
  const { agents, agentFiles } = container;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/agents',
      operationId: 'createAgent',
      summary: 'Create an agent (version 1, published, no draft)',
      description:
        'Fields left out take their defaults. is_default: true makes it the org\'s default agent. 409 conflict when the agent_id exists.',
      tag: TAG,
      auth: 'api_key',
      body: CreateAgentBody,
      response: AgentSchema,
      errors: [409],
      idempotent: true,
      handler: async ({ auth, body, requestId }) => agents.create(auth.orgId, body, { actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/agents',
      operationId: 'listAgents',
      summary: 'Every agent of the org (published versions), newest first, in one page',
      description:
        'Every agent of the org as published (not their drafts), newest first, in one page: an org has few agents. Any API key of the org may call it.',
      tag: TAG,
      auth: 'api_key',
      response: ListOf(AgentSchema),
      errors: [],
      handler: async ({ auth }) => agents.list(auth.orgId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/agents/{agent_id}',
      operationId: 'getAgent',
      summary: 'The published agent',
      description:
        'The agent as its tasks run it now: the published version, with has_draft saying whether unpublished changes wait. Any API key of the org may call it. 404 not_found when the org has no such agent.',
      tag: TAG,
      auth: 'api_key',
      params: AgentIdParams,
      response: AgentSchema,
      errors: [404],
      handler: async ({ auth, params }) => agents.get(auth.orgId, params.agent_id),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/agents/{agent_id}',
      operationId: 'updateAgent',
      summary: 'Publish a change directly (version + 1)',
      description:
        'Sent fields change over the published version, which is published as the next version; a draft, if any, is kept as it is (its based_on_version is now lower than version). A body with only is_default changes the default agent without a new version. 409 default_agent_required for is_default: false on the default agent.',
      tag: TAG,
      auth: 'api_key',
      params: AgentIdParams,
      body: PatchAgentBody,
      response: AgentSchema,
      errors: [404, 409],
      handler: async ({ auth, params, body, requestId }) => agents.patch(auth.orgId, params.agent_id, body, { actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/agents/{agent_id}/draft',
      operationId: 'getAgentDraft',
      summary: 'The agent as its draft would make it (the published version, has_draft false, when there is no draft)',
      description:
        'The agent as its draft would make it: what PATCH /v1/agents/{agent_id}/draft saved, over the version it is based on. Without a draft this is the published version with has_draft false. Any API key of the org may call it. 404 not_found when the org has no such agent.',
      tag: TAG,
      auth: 'api_key',
      params: AgentIdParams,
      response: AgentDraftSchema,
      errors: [404],
      handler: async ({ auth, params }) => agents.getDraft(auth.orgId, params.agent_id),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/agents/{agent_id}/draft',
      operationId: 'saveAgentDraft',
      summary: 'Save the draft (only sent fields change)',
      description:
        'Without a draft, the draft starts from the published version (based_on_version = version). Sets saved_at and saved_by. Nothing runs differently until the draft is published.',
      tag: TAG,
      auth: 'api_key',
      params: AgentIdParams,
      body: DraftBody,
      response: AgentDraftSchema,
      errors: [404],
      handler: async ({ auth, params, body, requestId }) =>
        agents.saveDraft(auth.orgId, params.agent_id, body, { actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/agents/{agent_id}/draft/publish',
      operationId: 'publishAgentDraft',
      summary: 'Publish the draft as the next version',
      description:
        'The draft, whole, becomes version + 1 and has_draft is false. When its based_on_version was below version, the versions published since are undone: undone_versions names them. 409 no_draft without a draft.',
      tag: TAG,
      auth: 'api_key',
      params: AgentIdParams,
      response: PublishedAgentSchema,
      errors: [404, 409],
      idempotent: true,
      handler: async ({ auth, params, requestId }) => agents.publishDraft(auth.orgId, params.agent_id, { actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/agents/{agent_id}/draft',
      operationId: 'discardAgentDraft',
      summary: 'Discard the draft',
      description: 'Returns the draft as it now is: the published version with has_draft false. Without a draft nothing changes.',
      tag: TAG,
      auth: 'api_key',
      params: AgentIdParams,
      response: AgentDraftSchema,
      errors: [404],
      handler: async ({ auth, params, requestId }) => agents.discardDraft(auth.orgId, params.agent_id, { actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/agents/{agent_id}/versions',
      operationId: 'listAgentVersions',
      summary: 'The agent\'s published versions, newest first',
      description:
        'Every published version of the agent, newest first, each with where it came from (created, patched or a published draft) and what it undid. Any API key of the org may call it. 404 not_found when the org has no such agent.',
      tag: TAG,
      auth: 'api_key',
      params: AgentIdParams,
      query: Type.Object({ ...PageQuery }, { additionalProperties: false }),
      response: ListOf(AgentVersionSchema),
      errors: [404],
      handler: async ({ auth, params, query }) =>
        agents.listVersions(auth.orgId, params.agent_id, { limit: query.limit ?? 20, cursor: query.cursor ?? null }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/agents/{agent_id}/versions/{version}',
      operationId: 'getAgentVersion',
      summary: 'One published version',
      description:
        'One published version of the agent, whole, as it was published (restore it with POST …/versions/{version}/restore). Any API key of the org may call it. 404 not_found when the org has no such agent or version.',
      tag: TAG,
      auth: 'api_key',
      params: VersionParams,
      response: AgentVersionSchema,
      errors: [404],
      handler: async ({ auth, params }) => agents.getVersion(auth.orgId, params.agent_id, params.version),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/agents/{agent_id}/versions/{version}/restore',
      operationId: 'restoreAgentVersion',
      summary: 'Put an earlier version in the draft',
      description:
        'That version replaces any draft. The draft counts as started from the current published version (based_on_version = version) and shows restored_from_version. Nothing changes for sessions and tasks until it is published. 404 for a version that does not exist.',
      tag: TAG,
      auth: 'api_key',
      params: VersionParams,
      response: AgentDraftSchema,
      errors: [404],
      handler: async ({ auth, params, requestId }) =>
        agents.restoreVersion(auth.orgId, params.agent_id, params.version, { actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/agents/{agent_id}/files',
      operationId: 'listAgentFiles',
      summary: 'The agent\'s files (without content), by path, in one page',
      description:
        'The agent\'s own files (its file store, which its tasks read and write) without their content, ordered by path, optionally only those under `folder`. Any API key of the org may call it. 404 not_found when the org has no such agent.',
      tag: FILES_TAG,
      auth: 'api_key',
      params: AgentIdParams,
      query: FileListQuery,
      response: ListOf(AgentFileSchema),
      errors: [404],
      handler: async ({ auth, params, query }) => ({
        data: await agentFiles.list(auth.orgId, params.agent_id, { folder: query.folder ?? null }),
        has_more: false,
        next_cursor: null,
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/agents/{agent_id}/files/{path}',
      operationId: 'getAgentFile',
      summary: 'One file with its content',
      description:
        'One file of the agent\'s file store with its whole content. Percent-encode each `/` of the path as %2F. Any API key of the org may call it. 404 not_found when the org has no such agent or file.',
      tag: FILES_TAG,
      auth: 'api_key',
      params: FilePathParams,
      response: AgentFileWithContentSchema,
      errors: [404],
      handler: async ({ auth, params }) => agentFiles.read(auth.orgId, params.agent_id, params.path),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/agents/{agent_id}/files/{path}',
      operationId: 'putAgentFile',
      summary: 'Create or replace a file',
      description:
        'Up to 256 KB of UTF-8 text per file; an agent holds at most 1,000 files and 10 MB (409 file_store_full past either). The org\'s team may always write, whatever tools.files says.',
      tag: FILES_TAG,
      auth: 'api_key',
      params: FilePathParams,
      body: WriteFileBody,
      response: WrittenAgentFileSchema,
      errors: [404, 409],
      handler: async ({ auth, params, body, requestId }) =>
        agentFiles.write(auth.orgId, params.agent_id, params.path, body.content, { kind: 'team', actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/agents/{agent_id}/files/{path}',
      operationId: 'deleteAgentFile',
      summary: 'Delete a file',
      description: 'Returns the file as it was, without content. 404 when it does not exist.',
      tag: FILES_TAG,
      auth: 'api_key',
      params: FilePathParams,
      response: AgentFileSchema,
      errors: [404],
      handler: async ({ auth, params, requestId }) =>
        agentFiles.delete(auth.orgId, params.agent_id, params.path, { kind: 'team', actor: auth.actor, requestId }),
    }),
  ];
}
