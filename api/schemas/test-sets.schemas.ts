import { Type } from '@sinclair/typebox';
import { DateTime, Metadata } from './common.schemas';
import { CustomerSchema } from './test-cases.schemas';

/** Schemas of test sets (spec: Test set; docs/evals.md "Test cases and test sets"). */

const Repeat = Type.Integer({ minimum: 1, maximum: 20 });

const SetCaseInput = Type.Object(
  {
    test_case_id: Type.String({ minLength: 1, maxLength: 100 }),
    repeat: Type.Optional(Type.Union([Repeat, Type.Null()], { description: 'Tries of this case; null or left out: the set\'s `repeat`.' })),
  },
  { additionalProperties: false },
);

const SetFields = {
  name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
  description: Type.String({ maxLength: 5000 }),
  repeat: Type.Integer({ minimum: 1, maximum: 20, description: 'Tries per case unless the case or the run says otherwise (default 1).' }),
  customer: Type.Union([CustomerSchema, Type.Null()], { description: 'For its cases that have none of their own.' }),
  cases: Type.Array(SetCaseInput, { maxItems: 5000, description: 'Live cases of the org, in order, each at most once.' }),
  metadata: Metadata,
};

export const CreateTestSetBody = Type.Object(
  {
    name: SetFields.name,
    description: Type.Optional(SetFields.description),
    repeat: Type.Optional(SetFields.repeat),
    customer: Type.Optional(SetFields.customer),
    cases: Type.Optional(SetFields.cases),
    metadata: Type.Optional(SetFields.metadata),
  },
  {
    additionalProperties: false,
    examples: [
      {
        name: 'Printers',
        description: 'Everything about office printers.',
        repeat: 3,
        cases: [{ test_case_id: 'tc_2j8f5n1q7w3k9m4x6c8v' }, { test_case_id: 'tc_9w3k7m1x5q2c8n4v6b0e', repeat: 5 }],
      },
    ],
  },
);

export const UpdateTestSetBody = Type.Object(
  {
    name: Type.Optional(SetFields.name),
    description: Type.Optional(SetFields.description),
    repeat: Type.Optional(SetFields.repeat),
    customer: Type.Optional(SetFields.customer),
    cases: Type.Optional(Type.Array(SetCaseInput, { maxItems: 5000, description: 'Replaces the list: live cases of the org, in order, each at most once.' })),
    metadata: Type.Optional(SetFields.metadata),
  },
  { additionalProperties: false },
);

export const TestSetSchema = Type.Object({
  object: Type.Literal('test_set'),
  test_set_id: Type.String({ description: '`ts_<id>`' }),
  name: Type.String(),
  description: Type.String(),
  repeat: Type.Integer(),
  customer: Type.Union([CustomerSchema, Type.Null()]),
  cases: Type.Array(
    Type.Object({
      test_case_id: Type.String(),
      repeat: Type.Union([Type.Integer(), Type.Null()], { description: 'null: the set\'s `repeat`.' }),
      key: Type.Union([Type.String(), Type.Null()], { description: 'The case\'s key.' }),
    }),
  ),
  case_count: Type.Integer(),
  metadata: Metadata,
  created_at: DateTime,
  updated_at: DateTime,
}, { title: 'TestSet' });

export const TestSetParams = Type.Object({ test_set_id: Type.String({ minLength: 1, maxLength: 100 }) });
