import { Type } from '@sinclair/typebox';
import { GUARDRAIL_CATEGORIES } from '../../shared/desktop/protocol';
import { GUARDRAIL_LIMITS } from '../../shared/guardrails/guardrails.types';
import { DEFAULT_MODEL, MODEL_IDS } from '../../shared/models/catalog';
import {
  AGENT_ID_PATTERN,
  AGENT_LIMITS,
  EFFORTS,
  FILE_ACCESS,
  HTTP_TOOL_APPROVALS,
  HTTP_TOOL_NAME_PATTERN,
  type Effort,
  type FileAccess,
  type HttpToolApproval,
} from '../../shared/agents/agent-config';
import { AGENT_FILE_LIMITS } from '../../shared/agents/agent-files.service';
import type { GuardrailCategory } from '../../shared/guardrails/guardrails.types';
import { Actor, DateTime, NullableDateTime } from './common.schemas';

/**
 * Schemas of the agent endpoints. Request schemas carry every limit of the spec's tables (so a
 * value past one is a 400 naming the field, and the limits are in /openapi.json); the service
 * checks the rules a schema cannot say (URLs, site hosts, `{code}`, unique tool names).
 */

/** One of `values`, as a plain `enum` (so that a wrong value reads "must be one of: …"). */
function Enum<T extends string>(values: readonly T[], options: { description?: string } = {}) {
  return Type.Unsafe<T>({ enum: [...values], ...(options.description ? { description: options.description } : {}) });
}
function NullableEnum<T extends string>(values: readonly T[], description: string) {
  return Type.Unsafe<T | null>({ enum: [...values, null], description });
}
const NullableInteger = (minimum: number, maximum: number, description: string) =>
  Type.Union([Type.Integer({ minimum, maximum }), Type.Null()], { description });

const Category = Enum<GuardrailCategory>(GUARDRAIL_CATEGORIES);
const CategoryList = (description: string) =>
  Type.Array(Category, { uniqueItems: true, maxItems: GUARDRAIL_CATEGORIES.length, description });
const RuleList = (description: string) =>
  Type.Array(Type.String({ maxLength: GUARDRAIL_LIMITS.itemChars }), { maxItems: GUARDRAIL_LIMITS.listItems, description });

const MODE = ['supervised', 'unattended'] as const;
const SAFETY_CHECKS = ['ask', 'stop'] as const;

const guardrailFields = {
  mode: Enum(MODE, { description: 'supervised: someone can approve. unattended: anything needing an approval is refused.' }),
  confirm: CategoryList('Always ask for approval before these (unique). Default: every category.'),
  block: CategoryList('Never do these (unique). A category in both lists is blocked; both come back as set.'),
  apps: Type.Object(
    {
      allow: RuleList('Only these apps when not empty (names or ids, case-insensitive; up to 50, each up to 100 characters).'),
      block: RuleList('Never these apps.'),
    },
    { additionalProperties: false },
  ),
  sites: Type.Object(
    {
      allow: RuleList('Only these sites when not empty. Stored as lowercase hosts: a scheme, path or port is dropped.'),
      block: RuleList('Never these sites (a domain covers its subdomains).'),
    },
    { additionalProperties: false },
  ),
  safety_checks: Enum(SAFETY_CHECKS, { description: 'ask: approval request with risk high. stop: stop the task.' }),
  scope: Type.String({ maxLength: GUARDRAIL_LIMITS.scopeChars, description: 'What the agent is for; empty: no scope check.' }),
  screen_check: Type.Boolean({ description: 'Check each new app, window or site for prompt injection.' }),
  max_steps: Type.Integer({ minimum: GUARDRAIL_LIMITS.maxSteps.min, maximum: GUARDRAIL_LIMITS.maxSteps.max, description: 'Model turns per task (default 150).' }),
  max_minutes: NullableInteger(GUARDRAIL_LIMITS.maxMinutes.min, GUARDRAIL_LIMITS.maxMinutes.max, 'Running minutes per task; null: no limit.'),
  approval_timeout_minutes: NullableInteger(
    GUARDRAIL_LIMITS.approvalTimeoutMinutes.min,
    GUARDRAIL_LIMITS.approvalTimeoutMinutes.max,
    'Minutes before an undecided approval is denied; null: wait.',
  ),
};

/** Guardrails as sent: every field optional; `apps` and `sites` may be partial. */
export const GuardrailsInput = Type.Object(
  {
    mode: Type.Optional(guardrailFields.mode),
    confirm: Type.Optional(guardrailFields.confirm),
    block: Type.Optional(guardrailFields.block),
    apps: Type.Optional(Type.Partial(guardrailFields.apps, { additionalProperties: false })),
    sites: Type.Optional(Type.Partial(guardrailFields.sites, { additionalProperties: false })),
    safety_checks: Type.Optional(guardrailFields.safety_checks),
    scope: Type.Optional(guardrailFields.scope),
    screen_check: Type.Optional(guardrailFields.screen_check),
    max_steps: Type.Optional(guardrailFields.max_steps),
    max_minutes: Type.Optional(guardrailFields.max_minutes),
    approval_timeout_minutes: Type.Optional(guardrailFields.approval_timeout_minutes),
  },
  { additionalProperties: false, description: 'Fields sent replace the current ones; apps and sites merge by allow/block; the rest keep their values.' },
);

/** Guardrails as returned: all eleven fields. */
export const GuardrailsSchema = Type.Object(
  {
    mode: Type.Unsafe<(typeof MODE)[number]>({ enum: [...MODE] }),
    confirm: Type.Array(Category),
    block: Type.Array(Category),
    apps: Type.Object({ allow: Type.Array(Type.String()), block: Type.Array(Type.String()) }),
    sites: Type.Object({ allow: Type.Array(Type.String()), block: Type.Array(Type.String()) }),
    safety_checks: Type.Unsafe<(typeof SAFETY_CHECKS)[number]>({ enum: [...SAFETY_CHECKS] }),
    scope: Type.String(),
    screen_check: Type.Boolean(),
    max_steps: Type.Integer(),
    max_minutes: Type.Union([Type.Integer(), Type.Null()]),
    approval_timeout_minutes: Type.Union([Type.Integer(), Type.Null()]),
  },
  { description: 'Rules enforced on each action the agent asks for; always whole, defaults filled in.' },
);

const httpToolFields = {
  name: Type.String({
    minLength: 1,
    maxLength: AGENT_LIMITS.httpToolNameChars,
    pattern: HTTP_TOOL_NAME_PATTERN,
    description: 'What the model calls it: 1 to 64 letters, digits, _ or -, starting with a letter; unique within the agent.',
  }),
  description: Type.String({ minLength: 1, maxLength: AGENT_LIMITS.httpToolDescriptionChars, description: 'What it does and takes, for the model.' }),
  url: Type.String({
    minLength: 1,
    maxLength: AGENT_LIMITS.httpToolUrlChars,
    description: 'https address of a public host, where the service POSTs the signed call.',
  }),
  approval: Enum<HttpToolApproval>(HTTP_TOOL_APPROVALS, {
    description: 'never (default): called without asking. always: each call waits for an approval (refused in unattended mode).',
  }),
};

export const HttpToolInput = Type.Object(
  { name: httpToolFields.name, description: httpToolFields.description, url: httpToolFields.url, approval: Type.Optional(httpToolFields.approval) },
  { additionalProperties: false },
);

export const AgentToolsInput = Type.Object(
  {
    files: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean({ description: 'The agent has its own file store (default true).' })),
          access: Type.Optional(Enum<FileAccess>(FILE_ACCESS, { description: 'read_write (default) or read_only.' })),
        },
        { additionalProperties: false },
      ),
    ),
    http: Type.Optional(Type.Array(HttpToolInput, { maxItems: AGENT_LIMITS.httpTools, description: 'Replaces the whole list; at most 20.' })),
  },
  { additionalProperties: false, description: 'files merges field by field; http replaces the list.' },
);

export const AgentToolsSchema = Type.Object({
  files: Type.Object({ enabled: Type.Boolean(), access: Type.Unsafe<FileAccess>({ enum: [...FILE_ACCESS] }) }),
  http: Type.Array(
    Type.Object({
      name: Type.String(),
      description: Type.String(),
      url: Type.String(),
      approval: Type.Unsafe<HttpToolApproval>({ enum: [...HTTP_TOOL_APPROVALS] }),
    }),
  ),
});

const modelDescription = `One of the six model ids (see docs/models.md), or null for the service default (${DEFAULT_MODEL}).`;

/** The versioned fields a create, a PATCH or a draft save may send. */
const configInputFields = {
  name: Type.Optional(Type.String({ minLength: 1, maxLength: AGENT_LIMITS.nameChars, description: '1 to 100 characters. Default on create: the agent_id.' })),
  instructions: Type.Optional(
    Type.String({ maxLength: AGENT_LIMITS.instructionsChars, description: 'Up to 50,000 characters; added under the service\'s own rules, which always win.' }),
  ),
  model: Type.Optional(NullableEnum(MODEL_IDS, modelDescription)),
  effort: Type.Optional(NullableEnum<Effort>(EFFORTS, 'low, medium, high, or null (low).')),
  greeting: Type.Optional(Type.String({ maxLength: AGENT_LIMITS.greetingChars, description: 'Shown on the invite page; up to 2,000 characters.' })),
  display_name: Type.Optional(
    Type.String({ maxLength: AGENT_LIMITS.displayNameChars, description: 'What the app calls the agent; empty: the service\'s own name. Up to 80 characters.' }),
  ),
  narration: Type.Optional(Type.Boolean({ description: 'Show the agent\'s thoughts, steps and summary in the app (default true).' })),
  customer_answers: Type.Optional(Type.Boolean({ description: 'The person can answer questions in the app (default true).' })),
  customer_approvals: Type.Optional(Type.Boolean({ description: 'The person can decide approval requests in the app (default true).' })),
  guardrails: Type.Optional(GuardrailsInput),
  tools: Type.Optional(AgentToolsInput),
  invite_url_template: Type.Optional(
    Type.Union(
      [
        Type.String({
          minLength: 1,
          maxLength: AGENT_LIMITS.inviteUrlTemplateChars,
          description: 'An http(s) address containing {code}; up to 2,000 characters.',
        }),
        Type.Null(),
      ],
      { description: 'An http(s) address containing {code}, or null for the service\'s own invite page ({BASE_URL}/invite/{code}).' },
    ),
  ),
};

const isDefaultInput = Type.Optional(
  Type.Boolean({
    description:
      'true makes this the org\'s default agent (the previous default stops being it). false on the current default is refused (409): make another agent the default instead.',
  }),
);

export const CreateAgentBody = Type.Object(
  {
    agent_id: Type.String({ minLength: 2, maxLength: 40, pattern: AGENT_ID_PATTERN, description: '2 to 40 lowercase letters, digits and dashes.' }),
    is_default: isDefaultInput,
    ...configInputFields,
  },
  {
    additionalProperties: false,
    examples: [
      {
        agent_id: 'support',
        name: 'IT support',
        instructions: 'Help people set up their office devices. Ask before changing system settings.',
        display_name: 'Acme Helper',
        greeting: 'Hi! I will set up your printer; it takes a few minutes.',
        guardrails: { mode: 'supervised', sites: { allow: ['acme.example.com', 'support.hp.com'] }, max_minutes: 30 },
      },
    ],
  },
);

export const PatchAgentBody = Type.Object(
  { is_default: isDefaultInput, ...configInputFields },
  {
    additionalProperties: false,
    description: 'Only sent fields change; the result is published as the next version.',
    examples: [{ instructions: 'Help people set up their office devices. Never install software that is not on the approved list.', effort: 'medium' }],
  },
);

export const DraftBody = Type.Object(configInputFields, {
  additionalProperties: false,
  description: 'Only sent fields change. is_default is not versioned: set it with PATCH /v1/agents/{agent_id}.',
  examples: [{ greeting: 'Hello! Let us get your printer working.', guardrails: { approval_timeout_minutes: 10 } }],
});

const configOutputFields = {
  name: Type.String({ description: 'Its name, for the org\'s people.' }),
  instructions: Type.String({ description: 'What the agent is told, under the service\'s own rules (which always win).' }),
  model: Type.Union([Type.String(), Type.Null()], { description: modelDescription, examples: [DEFAULT_MODEL] }),
  effort: Type.Union([Type.Unsafe<Effort>({ enum: [...EFFORTS] }), Type.Null()]),
  greeting: Type.String({ description: 'Shown on the invite page.' }),
  display_name: Type.String({ description: 'What the app calls the agent; empty: the service\'s own name.' }),
  narration: Type.Boolean({ description: 'The app shows the agent\'s thoughts, steps and summary.' }),
  customer_answers: Type.Boolean({ description: 'The person can answer questions in the app.' }),
  customer_approvals: Type.Boolean({ description: 'The person can decide approval requests in the app.' }),
  guardrails: GuardrailsSchema,
  tools: AgentToolsSchema,
  invite_url_template: Type.String({ description: 'Contains {code}.' }),
};

const agentFields = {
  agent_id: Type.String({ description: 'Chosen at creation: 2 to 40 lowercase letters, digits and dashes.' }),
  ...configOutputFields,
  is_default: Type.Boolean({ description: 'True for the org\'s default agent (a session created without agent_id gets it).' }),
  version: Type.Integer({ minimum: 0, description: 'The published version (not the draft\'s).' }),
  has_draft: Type.Boolean({ description: 'True: unpublished changes exist.' }),
  created_by: Actor,
  updated_by: Actor,
  created_at: NullableDateTime,
  updated_at: NullableDateTime,
  based_on_version: Type.Integer({
    minimum: 0,
    description: 'The published version the draft started from (equals version without a draft). Lower than version: publishing the draft undoes the versions published since.',
  }),
  saved_at: NullableDateTime,
  saved_by: Actor,
};

const undoneVersions = Type.Array(Type.Integer(), {
  description: 'Versions published after the draft\'s based_on_version whose changes this publish replaced (empty when none).',
});

/** The published agent (`object: agent`). */
export const AgentSchema = Type.Object({ object: Type.Literal('agent'), ...agentFields }, { title: 'Agent' });

/** The answer to publishing a draft: the agent, with what the publish undid. */
export const PublishedAgentSchema = Type.Object({ object: Type.Literal('agent'), ...agentFields, undone_versions: undoneVersions }, { title: 'PublishedAgent' });

/** The draft (`object: agent_draft`). */
export const AgentDraftSchema = Type.Object({
  object: Type.Literal('agent_draft'),
  ...agentFields,
  restored_from_version: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
    description: 'The version this draft was restored from, until it is published or discarded; null otherwise.',
  }),
}, { title: 'AgentDraft' });

export const AgentVersionSchema = Type.Object({
  object: Type.Literal('agent_version'),
  agent_id: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  ...configOutputFields,
  is_published: Type.Boolean({ description: 'True for the version the agent runs now.' }),
  origin: Type.Unsafe<'created' | 'patched' | 'draft'>({
    enum: ['created', 'patched', 'draft'],
    description: 'created: the first version. patched: PATCH /v1/agents/{agent_id}. draft: a published draft.',
  }),
  based_on_version: Type.Union([Type.Integer(), Type.Null()], { description: 'The version its changes were made over (null for the first).' }),
  restored_from_version: Type.Union([Type.Integer(), Type.Null()], { description: 'The version it was restored from, if any.' }),
  undone_versions: undoneVersions,
  created_at: DateTime,
  created_by: Actor,
}, { title: 'AgentVersion' });

export const AgentIdParams = Type.Object({ agent_id: Type.String({ description: 'The agent id.' }) });
export const VersionParams = Type.Object({
  agent_id: Type.String({ description: 'The agent id.' }),
  version: Type.Integer({ minimum: 1, description: 'A published version, 1 or more.' }),
});

const fileFields = {
  agent_id: Type.String(),
  path: Type.String(),
  size_bytes: Type.Integer({ minimum: 0, description: 'UTF-8 bytes of the content.' }),
  created_at: DateTime,
  created_by: Actor,
  updated_at: DateTime,
  updated_by: Actor,
};

export const AgentFileSchema = Type.Object({ object: Type.Literal('agent_file'), ...fileFields }, { title: 'AgentFile' });
export const AgentFileWithContentSchema = Type.Object({ object: Type.Literal('agent_file'), ...fileFields, content: Type.String() }, { title: 'AgentFileWithContent' });
export const WrittenAgentFileSchema = Type.Object({
  object: Type.Literal('agent_file'),
  ...fileFields,
  created: Type.Boolean({ description: 'True when the file was new, false when it replaced one.' }),
}, { title: 'WrittenAgentFile' });

export const FilePathParams = Type.Object({
  agent_id: Type.String({ description: 'The agent id.' }),
  path: Type.String({
    description:
      `The file path, 1 to ${AGENT_FILE_LIMITS.pathChars} characters of letters, digits, '.', '_', '-' and '/', with each '/' percent-encoded as %2F in the URL (notes%2Ftodo.md).`,
  }),
});

export const FileListQuery = Type.Object(
  { folder: Type.Optional(Type.String({ minLength: 1, maxLength: AGENT_FILE_LIMITS.pathChars, description: 'Only files under this folder.' })) },
  { additionalProperties: false },
);

export const WriteFileBody = Type.Object(
  {
    content: Type.String({
      description: `The whole text of the file, at most ${AGENT_FILE_LIMITS.fileBytes} bytes (256 KB) of UTF-8, no NUL characters.`,
    }),
  },
  { additionalProperties: false },
);
