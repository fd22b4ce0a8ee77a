import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_EXAMPLE } from './examples';

/** Schemas every part of the API shares. */

export const DateTime = Type.String({ format: 'date-time' });
export const NullableDateTime = Type.Union([DateTime, Type.Null()]);

export const ErrorSchema = Type.Object(
  {
    error: Type.Object(
      {
        type: Type.Union(
          ['invalid_request', 'authentication', 'payment_required', 'permission', 'not_found', 'conflict', 'rate_limit', 'server_error'].map(
            (value) => Type.Literal(value),
          ),
        ),
        message: Type.String(),
        code: Type.Optional(Type.String()),
        answered_by: Type.Optional(Type.Union([Type.Literal('customer'), Type.Literal('operator'), Type.Literal('timeout')])),
        test_case_ids: Type.Optional(Type.Array(Type.String())),
      },
      { additionalProperties: true },
    ),
  },
  { $id: 'Error', title: 'Error', examples: [ERROR_EXAMPLE] },
);

/** The caller's own string values: ≤50 keys, keys ≤40 characters, values ≤500 characters. */
export const Metadata = Type.Record(Type.String({ maxLength: 40 }), Type.String({ maxLength: 500 }), {
  maxProperties: 50,
  propertyNames: { minLength: 1, maxLength: 40 },
  description: 'Your own string values: up to 50 keys, keys up to 40 characters, values up to 500 characters.',
});

export const Actor = Type.Union(
  [
    Type.Object({ type: Type.Literal('user'), email: Type.Union([Type.String(), Type.Null()]) }),
    Type.Object({
      type: Type.Literal('api_key'),
      key_id: Type.String(),
      name: Type.Union([Type.String(), Type.Null()]),
      prefix: Type.Union([Type.String(), Type.Null()]),
    }),
    Type.Null(),
  ],
  { description: 'Who did something; null when nobody is recorded.' },
);

/** Query parameters of every paginated list. */
export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1 to 100.' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'next_cursor of the previous page.' })),
};

/**
 * The list envelope `{ data, has_more, next_cursor }`. A list of a named resource is named too
 * (`TaskList`), so that it is one component in /openapi.json.
 */
export function ListOf<T extends TSchema>(item: T) {
  const title = typeof item.title === 'string' ? `${item.title}List` : undefined;
  const example = Array.isArray(item.examples) && item.examples.length > 0 ? { data: [item.examples[0]], has_more: false, next_cursor: null } : undefined;
  return Type.Object(
    {
      data: Type.Array(item),
      has_more: Type.Boolean({ description: 'True when another page follows: ask again with cursor=next_cursor.' }),
      next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'The cursor of the next page; null on the last.' }),
    },
    { ...(title ? { title } : {}), ...(example ? { examples: [example] } : {}) },
  );
}
