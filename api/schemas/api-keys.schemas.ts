import { Type } from '@sinclair/typebox';
import { DateTime } from './common.schemas';

/** Schemas of the org's API keys (spec: "API keys act with the admin role"; docs/console.md, Settings). */

const API_KEY_EXAMPLE = {
  object: 'api_key',
  key_id: 'key_9m3c2x7a4w8e1q5r6t0y',
  org_id: 'org_5tq2w8e1rzk3m7n9p4vb',
  name: 'CI pipeline',
  prefix: 'dh_live_4f9a',
  created_at: '2026-03-02T09:14:05.000Z',
  last_used_at: null,
  revoked_at: null,
};

export const ApiKeySchema = Type.Object({
  object: Type.Literal('api_key'),
  key_id: Type.String({ description: '`key_<id>`' }),
  org_id: Type.String(),
  name: Type.String({ description: 'A name to tell keys apart; shown as the actor in the audit log.' }),
  prefix: Type.String({ description: 'The key\'s first characters (`dh_live_4f9a`), to recognise it; the rest is never shown again.' }),
  created_at: DateTime,
  last_used_at: Type.Union([DateTime, Type.Null()], { description: 'When a request last used it (updated at most once a minute); null if never.' }),
  revoked_at: Type.Union([DateTime, Type.Null()], { description: 'When it was revoked; null while it works.' }),
}, { title: 'ApiKey', examples: [API_KEY_EXAMPLE] });

export const CreatedApiKeySchema = Type.Intersect([
  ApiKeySchema,
  Type.Object({ key: Type.String({ description: 'The key itself (`dh_live_…`): shown only in this response. Send it as `Authorization: Bearer <key>`.' }) }),
], { title: 'CreatedApiKey', examples: [{ ...API_KEY_EXAMPLE, key: 'dh_live_4f9aQ2mX7wP4nC9vB1zR5tK8sL3dF6gH0jYqW2e' }] });

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 80, pattern: '\\S', description: '1 to 80 characters, not only spaces; leading and trailing spaces are trimmed.' }),
  },
  { additionalProperties: false, examples: [{ name: 'CI pipeline' }] },
);

export const ApiKeyParams = Type.Object({ key_id: Type.String({ minLength: 1, maxLength: 100, description: 'A key id (`key_…`).' }) });
