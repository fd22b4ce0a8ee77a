import { Type } from '@sinclair/typebox';
import { DateTime, Metadata, NullableDateTime } from './common.schemas';
import { SESSION_EXAMPLE } from './examples';

export const SessionCode = Type.String({ pattern: '^[A-Za-z0-9]{4}-[A-Za-z0-9]{4}$', description: 'The pairing code, e.g. K7QX-M2PD (the session id).', examples: ['K7QX-M2PD'] });

export const Device = Type.Object({
  os: Type.String({ description: 'mac, windows or linux.' }),
  name: Type.String(),
  width: Type.Integer(),
  height: Type.Integer(),
  app_version: Type.String(),
});

export const SessionSchema = Type.Object({
  object: Type.Literal('session'),
  session_id: Type.String({ description: 'Equals code.' }),
  code: Type.String({ description: 'The pairing code the person enters in the app.' }),
  agent_id: Type.String({ description: 'The agent its tasks run by default.' }),
  invite_url: Type.String({ description: 'The link to send the person: the agent\'s invite_url_template (by default the service\'s invite page) with {code} replaced, as it was when the session was created.' }),
  status: Type.Union([Type.Literal('waiting'), Type.Literal('connected'), Type.Literal('disconnected'), Type.Literal('expired')], {
    description: 'waiting: no computer yet. connected: a computer is connected. disconnected: it was, and may reconnect. expired: the code no longer works.',
  }),
  device: Type.Union([Device, Type.Null()], { description: 'Null until a computer has connected.' }),
  metadata: Metadata,
  created_at: DateTime,
  paired_at: NullableDateTime,
  last_active_at: NullableDateTime,
  expires_at: Type.Union([DateTime, Type.Null()], {
    description: 'When the code expires if unused (72 hours after creation, or after the computer was last seen); null while connected; the time it expired once expired.',
  }),
  task_count: Type.Integer({ description: 'Tasks started in the session.' }),
  latest_task_id: Type.Union([Type.String(), Type.Null()], { description: 'Its most recent task; null before the first.' }),
}, { title: 'Session', examples: [SESSION_EXAMPLE] });

export const CreatedSessionSchema = Type.Intersect([
  SessionSchema,
  Type.Object({ token: Type.String({ description: 'Session token for the older session-token API; shown only here.' }) }),
], { title: 'CreatedSession' });

export const CreateSessionBody = Type.Object(
  {
    agent_id: Type.Optional(Type.String({ pattern: '^[a-z0-9-]{2,40}$', description: 'Defaults to the org\'s default agent.' })),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false, examples: [{ agent_id: 'support', metadata: { customer_id: 'cus_1042' } }] },
);
