import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { forbidden } from '../../shared/errors';
import { defineRoute, type RouteSpec } from '../routing';
import { conflict, invalidInput, notFound, permission } from '../route-errors';
import { ListOf } from '../schemas/common.schemas';
import { ChangeRoleBody, InvitationParams, InvitationSchema, InviteMemberBody, MemberParams, MemberSchema, NewInvitationSchema, SetPasswordBody } from '../schemas/members.schemas';

const TAG = 'Members';
const LAST_OWNER = 'The org must keep at least one owner: make someone else an owner first';

/** The org's people and their roles (docs/console.md), and a signed-in person's own password. */
export function memberRoutes(container: Container): RouteSpec[] {
  const { users } = container;
  return [
    defineRoute({
      method: 'get',
      path: '/v1/members',
      operationId: 'listMembers',
      summary: 'The people of the org and their roles, in one page',
      description: 'Everyone who can sign in to the org\'s console, oldest first, with their role. Any member may call it.',
      tag: TAG,
      auth: 'api_key',
      response: ListOf(MemberSchema),
      errors: [],
      handler: async ({ auth }) => ({ data: await users.members(auth.orgId), has_more: false, next_cursor: null }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/members',
      operationId: 'inviteMember',
      summary: 'Invite a person with a role; answers the invitation and its one-time link',
      description:
        'Makes an invitation to join the org with the role and answers it with its one-time link (`invite_url`, valid 7 days, shown only here), ' +
        'to send to the person. The answer is the same whether or not the address has a Deskhand account: it reveals nothing about accounts ' +
        'outside the org. Opening the link signs nobody in; the person accepts by proving the address is theirs (their password, or being ' +
        'signed in as that account) or sets up an account if the address has none (docs/console.md, "Joining an org"). Inviting the same ' +
        'address again replaces its open invitation. Only an owner can invite an owner. 409 `already_member` when the address already belongs to the org.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      idempotent: true,
      body: InviteMemberBody,
      response: NewInvitationSchema,
      errors: [permission(undefined, 'Only an owner can make someone an owner'), conflict('already_member', 'grace@example.com is already a member of this org')],
      handler: async ({ auth, body, requestId }) => users.invite({ orgId: auth.orgId, actor: auth.actor, role: auth.role }, body, requestId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/invitations',
      operationId: 'listInvitations',
      summary: 'The org\'s open invitations, in one page',
      description: 'Invitations neither accepted, revoked nor expired, newest first. Their links are shown only when made.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      response: ListOf(InvitationSchema),
      errors: [],
      handler: async ({ auth }) => ({ data: await users.invitations(auth.orgId), has_more: false, next_cursor: null }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/invitations/{invitation_id}',
      operationId: 'revokeInvitation',
      summary: 'Revoke an open invitation',
      description: 'Its link stops working at once. 404 when the invitation is not open (accepted, revoked, expired or unknown).',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: InvitationParams,
      response: Type.Object({ object: Type.Literal('invitation'), invitation_id: Type.String(), revoked: Type.Literal(true) }, { title: 'RevokedInvitation' }),
      errors: [notFound('No open invitation inv_7d2q9k4m1x8c5v3b6n0w')],
      handler: async ({ auth, params, requestId }) => {
        await users.revokeInvitation(auth, params.invitation_id, requestId);
        return { object: 'invitation' as const, invitation_id: params.invitation_id, revoked: true as const };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/members/{user_id}',
      operationId: 'changeMemberRole',
      summary: 'Change a member\'s role',
      description:
        'Takes effect at once, on the person\'s next request in this org (their sign-ins to other orgs are not touched). Only an owner gives or takes the owner role; the org always keeps one owner ' +
        '(409 `last_owner`).',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: MemberParams,
      body: ChangeRoleBody,
      response: MemberSchema,
      errors: [permission(undefined, 'Only an owner can give or take the owner role'), notFound('No member usr_4k8w2m9x1c7q5n3v6b0e'), conflict('last_owner', LAST_OWNER)],
      handler: async ({ auth, params, body, requestId }) => users.changeRole(auth, params.user_id, body.role, requestId),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/members/{user_id}',
      operationId: 'removeMember',
      summary: 'Remove a person from the org',
      description: 'Their console sign-ins to the org end at once. Only an owner removes an owner; the org always keeps one owner (409 `last_owner`).',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: MemberParams,
      response: Type.Object({ object: Type.Literal('member'), user_id: Type.String(), deleted: Type.Literal(true) }, { title: 'RemovedMember' }),
      errors: [permission(undefined, 'Only an owner can remove an owner'), notFound('No member usr_4k8w2m9x1c7q5n3v6b0e'), conflict('last_owner', LAST_OWNER)],
      handler: async ({ auth, params, requestId }) => {
        await users.removeMember(auth, params.user_id, requestId);
        return { object: 'member' as const, user_id: params.user_id, deleted: true as const };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/me/password',
      operationId: 'setPassword',
      summary: 'Set or change the signed-in person\'s password',
      description:
        'For a person signed in to the console (with its CSRF token); an API key has no password (403). Once a password is set, ' +
        '`current_password` is needed to change it; before that, only the person signed in with the one-time link sent to them can be ' +
        'here, since an invitation never signs anyone in. The password is kept as an argon2id hash.',
      tag: TAG,
      auth: 'api_key',
      body: SetPasswordBody,
      response: Type.Object({ object: Type.Literal('password'), updated: Type.Literal(true) }, { title: 'PasswordUpdated' }),
      errors: [permission(undefined, 'API keys have no password; sign in to the console to set yours'), invalidInput('current_password is wrong')],
      handler: async ({ auth, body }) => {
        if (!auth.userId) throw forbidden('API keys have no password; sign in to the console to set yours');
        await users.setPassword(auth, { password: body.password, currentPassword: body.current_password });
        return { object: 'password' as const, updated: true as const };
      },
    }),
  ];
}
