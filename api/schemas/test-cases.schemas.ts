import { Type } from '@sinclair/typebox';
import { DateTime, Metadata } from './common.schemas';

/** Schemas of test cases (spec: Test case, Simulated customer; docs/evals.md "Test cases and test sets"). */

/** The most cases one batch carries (spec: Limits). */
export const BATCH_MAX_CASES = 500;
/** The largest batch body (spec: Limits); larger is 413. */
export const BATCH_MAX_BYTES = 8 * 1024 * 1024;

const Text = (maxLength: number, description?: string) => Type.String({ minLength: 1, maxLength, ...(description ? { description } : {}) });

const Fact = Type.Union([Type.String({ maxLength: 2000 }), Type.Object({ secret: Type.String({ maxLength: 2000 }) }, { additionalProperties: false })]);

/** The simulated customer of a case or a set (spec: Simulated customer). */
export const CustomerSchema = Type.Object(
  {
    persona: Type.Optional(Type.String({ maxLength: 5000, description: 'Who the customer is and how they talk.' })),
    facts: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 100 }), Fact, {
        maxProperties: 50,
        propertyNames: { minLength: 1, maxLength: 100 },
        description: 'What the customer knows, by label: a string, or `{ secret }` for a value the customer gives when asked but that is kept out of what the judge sees.',
      }),
    ),
    clicks_admin_prompts: Type.Optional(Type.Boolean({ description: 'Whether the customer clicks through admin (password) prompts when the agent asks.' })),
    does_steps: Type.Optional(Type.Boolean({ description: 'Whether the customer does steps on the computer when the agent asks.' })),
  },
  { additionalProperties: false },
);

const SuccessSchema = Type.Object(
  {
    check_script: Type.Optional(Text(100_000, 'Bash run on the machine after the task; exit status 0 passes.')),
    rubric: Type.Optional(Text(20_000, 'What the judge model reads the transcript against.')),
  },
  { additionalProperties: false, minProperties: 1, description: 'How a try is scored: a check script, a rubric, or both (at least one).' },
);

const Approvals = Type.Union([Type.Literal('approve'), Type.Literal('deny'), Type.Literal('none')], {
  description: 'approve: the team approves every approval at once. deny: denies at once. none (default): the team never answers (the customer may, else it times out).',
});

const CaseFields = {
  key: Type.String({ minLength: 1, maxLength: 200, description: 'Your own key: a batch updates the live case with this key, or creates one.' }),
  name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
  prompt: Type.String({ minLength: 1, maxLength: 20_000, pattern: '\\S' }),
  start_state: Type.String({ minLength: 1, maxLength: 200, description: 'An image of your runners (`macos-15`) or an `ss_` start state of yours.' }),
  setup_script: Type.String({ maxLength: 100_000, description: 'Bash run on the machine before the task.' }),
  success: SuccessSchema,
  customer: Type.Union([CustomerSchema, Type.Null()], { description: 'The simulated customer; null: the test set\'s.' }),
  operator: Type.Object({ approvals: Type.Optional(Approvals) }, { additionalProperties: false }),
  limits: Type.Object(
    {
      minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 240, description: 'The task\'s time limit (default 30).' })),
      steps: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: 'The task\'s step limit (default 150).' })),
    },
    { additionalProperties: false },
  ),
  runs_on: Type.Literal('vm', { description: 'Where tries run: `vm` (the default and only kind now).' }),
  category: Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()]),
  tags: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 }),
  metadata: Metadata,
};

/**
 * One case of a batch, or a PATCH: every field optional here; creating a case needs `name`,
 * `prompt`, `start_state` and `success` (checked by the service, which knows whether the key exists).
 */
export const TestCaseInput = Type.Object(
  {
    key: Type.Optional(CaseFields.key),
    name: Type.Optional(CaseFields.name),
    prompt: Type.Optional(CaseFields.prompt),
    start_state: Type.Optional(CaseFields.start_state),
    setup_script: Type.Optional(Type.Union([CaseFields.setup_script, Type.Null()])),
    success: Type.Optional(CaseFields.success),
    customer: Type.Optional(CaseFields.customer),
    operator: Type.Optional(CaseFields.operator),
    limits: Type.Optional(CaseFields.limits),
    runs_on: Type.Optional(CaseFields.runs_on),
    category: Type.Optional(CaseFields.category),
    tags: Type.Optional(CaseFields.tags),
    metadata: Type.Optional(CaseFields.metadata),
  },
  { additionalProperties: false },
);

export const BatchTestCasesBody = Type.Object(
  {
    cases: Type.Array(TestCaseInput, { minItems: 1, maxItems: BATCH_MAX_CASES }),
    test_set_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Also appends the batch\'s cases not already in it to this test set, in order.' })),
  },
  {
    additionalProperties: false,
    examples: [
      {
        cases: [
          {
            key: 'printer-setup',
            name: 'Set up the office printer',
            prompt: 'Set up the office printer (HP LaserJet, 10.0.4.21) and print a test page.',
            start_state: 'macos-15',
            success: { check_script: 'lpstat -d | grep -q LaserJet', rubric: 'The LaserJet is the default printer and a test page was printed.' },
            customer: { persona: 'An office manager in a hurry.', facts: { admin_password: { secret: 'correct-horse' } }, clicks_admin_prompts: true },
            limits: { minutes: 15, steps: 60 },
            category: 'devices',
            tags: ['printer', 'smoke'],
          },
        ],
        test_set_id: 'ts_6v3k9w2r8m1x5q7c4n2b',
      },
    ],
  },
);

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

export const TestCaseSchema = Type.Object({
  object: Type.Literal('test_case'),
  test_case_id: Type.String({ description: '`tc_<id>`' }),
  key: Nullable(Type.String()),
  name: Type.String(),
  prompt: Type.String(),
  start_state: Type.String(),
  setup_script: Nullable(Type.String()),
  success: Type.Object({ check_script: Type.Optional(Type.String()), rubric: Type.Optional(Type.String()) }),
  customer: Type.Union([CustomerSchema, Type.Null()]),
  operator: Type.Object({ approvals: Approvals }),
  limits: Type.Object({ minutes: Type.Integer(), steps: Type.Integer() }),
  runs_on: Type.Literal('vm'),
  category: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  metadata: Metadata,
  created_at: DateTime,
  updated_at: DateTime,
}, { title: 'TestCase' });

export const BatchTestCasesAnswer = Type.Object({
  data: Type.Array(TestCaseSchema, { description: 'The cases, in the order sent.' }),
  created: Type.Integer(),
  updated: Type.Integer(),
});

export const TestCaseParams = Type.Object({ test_case_id: Type.String({ minLength: 1, maxLength: 100 }) });

export const TestCaseListQuery = {
  category: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Cases carrying this tag.' })),
  test_set_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Cases in this test set.' })),
};
