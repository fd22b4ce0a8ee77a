import { Type } from '@sinclair/typebox';
import { DateTime } from './common.schemas';

/** Schemas of the org's people (docs/console.md, "Roles"). */

export const RoleSchema = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')], {
  description: 'owner: everything an admin does, plus the plan and the owner role. admin: every call (as an API key). member: everything except the calls that need the admin role.',
});

export const MemberSchema = Type.Object({
  object: Type.Literal('member'),
  user_id: Type.String({ description: '`usr_<id>`' }),
  email: Type.String(),
  role: RoleSchema,
  has_password: Type.Boolean({ description: 'False until the person has set a password (they signed in with a link only).' }),
  created_at: DateTime,
}, { title: 'Member', examples: [{ object: 'member', user_id: 'usr_4k8w2m9x1c7q5n3v6b0e', email: 'ada@example.com', role: 'admin', has_password: true, created_at: '2026-03-02T09:14:05.000Z' }] });

const ActorOrOperator = Type.Union([
  Type.Object({ type: Type.Literal('user'), email: Type.Union([Type.String(), Type.Null()]) }),
  Type.Object({ type: Type.Literal('api_key'), key_id: Type.String(), name: Type.Union([Type.String(), Type.Null()]), prefix: Type.Union([Type.String(), Type.Null()]) }),
  Type.Null(),
], { description: 'Who invited: a person or an API key of the org; null for the operator\'s CLI.' });

const invitationFields = {
  object: Type.Literal('invitation'),
  invitation_id: Type.String({ description: '`inv_<id>`' }),
  email: Type.String({ description: 'The address invited, as given.' }),
  role: RoleSchema,
  invited_by: ActorOrOperator,
  created_at: DateTime,
  expires_at: DateTime,
};

export const InvitationSchema = Type.Object(invitationFields, {
  title: 'Invitation',
  description: 'An open invitation to join the org. It says nothing about the address\'s account: the answer is the same whether the address has one or not.',
  examples: [{ object: 'invitation', invitation_id: 'inv_7d2q9k4m1x8c5v3b6n0w', email: 'grace@example.com', role: 'member', invited_by: { type: 'user', email: 'ada@example.com' }, created_at: '2026-03-02T09:14:05.000Z', expires_at: '2026-03-09T09:14:05.000Z' }],
});

export const NewInvitationSchema = Type.Object({
  ...invitationFields,
  invite_url: Type.String({
    description:
      'The invitation\'s one-time link, valid 7 days, shown only here: send it to the person. Opening it signs nobody in: the person accepts it ' +
      'by proving the address is theirs (their password, or being signed in as that account), or sets up an account when the address has none.',
  }),
}, { title: 'NewInvitation' });

export const InviteMemberBody = Type.Object({
  email: Type.String({ minLength: 3, maxLength: 254, format: 'email', description: 'The person\'s email address.' }),
  role: RoleSchema,
}, { additionalProperties: false, examples: [{ email: 'grace@example.com', role: 'member' }] });

export const InvitationParams = Type.Object({ invitation_id: Type.String({ pattern: '^inv_[a-z0-9]{20}$', description: '`inv_<id>`' }) });

export const ChangeRoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false });

export const MemberParams = Type.Object({ user_id: Type.String({ pattern: '^usr_[a-z0-9]{20}$', description: '`usr_<id>`' }) });

export const SetPasswordBody = Type.Object({
  password: Type.String({ minLength: 10, maxLength: 200, description: 'The new password: 10 to 200 characters.' }),
  current_password: Type.Optional(Type.String({ maxLength: 200, description: 'Needed once a password is set.' })),
}, { additionalProperties: false, examples: [{ password: 'correct horse battery staple', current_password: 'my old passphrase' }] });
