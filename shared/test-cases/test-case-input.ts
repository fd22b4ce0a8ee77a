import { invalidRequest } from '../errors';
import { CASE_DEFAULTS, type Approvals, type Customer, type TestCaseFields, type TestCaseRow } from './test-case-rows';

/** One case as a batch or a PATCH sends it (api/schemas/test-cases.schemas.ts has already checked the shapes). */
export interface TestCaseInput {
  key?: string;
  name?: string;
  prompt?: string;
  start_state?: string;
  setup_script?: string | null;
  success?: { check_script?: string; rubric?: string };
  customer?: Customer | null;
  operator?: { approvals?: Approvals };
  limits?: { minutes?: number; steps?: number };
  runs_on?: 'vm';
  category?: string | null;
  tags?: string[];
  metadata?: Record<string, string>;
}

/** What creating a case needs: without a way to score it, a case is useless, so `success` is required too. */
const REQUIRED_ON_CREATE = ['name', 'prompt', 'start_state', 'success'] as const;

/**
 * The columns of a new case from its input, defaults filled in; 400 naming `{at}.field` for a
 * required field left out.
 */
export function newCaseFields(input: TestCaseInput, at: string): TestCaseFields {
  for (const field of REQUIRED_ON_CREATE) {
    if (input[field] === undefined) throw invalidRequest(`${at}${field} is required to create a case${input.key !== undefined ? ` (no live case has the key ${JSON.stringify(input.key)})` : ''}`);
  }
  return {
    key: input.key ?? null,
    name: input.name!.trim(),
    prompt: input.prompt!,
    start_state: input.start_state!,
    setup_script: input.setup_script ?? null,
    success: input.success!,
    customer: input.customer ?? null,
    operator: { approvals: input.operator?.approvals ?? CASE_DEFAULTS.approvals },
    limits: { minutes: input.limits?.minutes ?? CASE_DEFAULTS.minutes, steps: input.limits?.steps ?? CASE_DEFAULTS.steps },
    runs_on: input.runs_on ?? CASE_DEFAULTS.runs_on,
    category: input.category ?? null,
    tags: input.tags ?? [],
    metadata: input.metadata ?? {},
  };
}

/**
 * The columns an update changes: only the fields sent. `limits` and `operator` merge into the
 * case's (sending `{ limits: { minutes: 60 } }` keeps its steps); `success` and `customer` are
 * replaced whole.
 */
export function changedCaseFields(input: TestCaseInput, current: TestCaseRow): Partial<TestCaseFields> {
  const fields: Partial<TestCaseFields> = {};
  if (input.key !== undefined) fields.key = input.key;
  if (input.name !== undefined) fields.name = input.name.trim();
  if (input.prompt !== undefined) fields.prompt = input.prompt;
  if (input.start_state !== undefined) fields.start_state = input.start_state;
  if (input.setup_script !== undefined) fields.setup_script = input.setup_script;
  if (input.success !== undefined) fields.success = input.success;
  if (input.customer !== undefined) fields.customer = input.customer;
  if (input.operator !== undefined) fields.operator = { ...current.operator, ...input.operator };
  if (input.limits !== undefined) fields.limits = { ...current.limits, ...input.limits };
  if (input.runs_on !== undefined) fields.runs_on = input.runs_on;
  if (input.category !== undefined) fields.category = input.category;
  if (input.tags !== undefined) fields.tags = input.tags;
  if (input.metadata !== undefined) fields.metadata = input.metadata;
  return fields;
}
