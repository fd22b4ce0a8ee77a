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

export const InvitedMemberSchema = Type.Intersect([
  MemberSchema,
  Type.Object({ sign_in_url: Type.String({ description: 'A one-time link (valid 7 days) that signs the person in to the console; send it to them. Shown only here.' }) }),
], { title: 'InvitedMember' });

export const InviteMemberBody = Type.Object({
  email: Type.String({ minLength: 3, maxLength: 254, format: 'email', description: 'The person\'s email address: their account, made if new.' }),
  role: RoleSchema,
}, { additionalProperties: false, examples: [{ email: 'grace@example.com', role: 'member' }] });

export const ChangeRoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false });

export const MemberParams = Type.Object({ user_id: Type.String({ pattern: '^usr_[a-z0-9]{20}$', description: '`usr_<id>`' }) });

export const SetPasswordBody = Type.Object({
  password: Type.String({ minLength: 10, maxLength: 200, description: 'The new password: 10 to 200 characters.' }),
  current_password: Type.Optional(Type.String({ maxLength: 200, description: 'Needed once a password is set.' })),
}, { additionalProperties: false, examples: [{ password: 'correct horse battery staple', current_password: 'my old passphrase' }] });
