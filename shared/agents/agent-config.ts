/**
 * An agent's config: everything a published version or a draft holds (spec: "Agent draft",
 * "Model", "Guardrails", "AgentTools"). One version of it is stored whole as JSONB per
 * published version and for the draft; `readConfig` fills in defaults on the way out, so that
 * a config written before a field existed still comes back whole.
 */
import { DEFAULT_MODEL, MODEL_IDS } from '../models/catalog';
import {
  InvalidGuardrailsError,
  normalizeGuardrails,
  type Guardrails,
  type GuardrailsInput,
} from '../guardrails/guardrails.types';
import { checkUrlShape } from '../http/address-policy';
import { invalidRequest } from '../errors';

export const EFFORTS = ['low', 'medium', 'high'] as const;
export type Effort = (typeof EFFORTS)[number];
/** What a null `effort` means (spec: "default is low"). */
export const DEFAULT_EFFORT: Effort = 'low';

export const FILE_ACCESS = ['read_write', 'read_only'] as const;
export type FileAccess = (typeof FILE_ACCESS)[number];

/**
 * When an HTTP tool call waits for someone's approval:
 * - `never`: the agent calls it without asking (the default);
 * - `always`: every call waits for an approval (refused in unattended mode, like a `confirm`
 *   category).
 */
export const HTTP_TOOL_APPROVALS = ['never', 'always'] as const;
export type HttpToolApproval = (typeof HTTP_TOOL_APPROVALS)[number];

export interface HttpTool {
  /** What the model calls it: 1 to 64 letters, digits, `_` or `-`, starting with a letter; unique per agent. */
  name: string;
  /** What it does and what arguments it takes, for the model. */
  description: string;
  /** Where the service POSTs the signed call. */
  url: string;
  approval: HttpToolApproval;
}

export interface AgentTools {
  files: { enabled: boolean; access: FileAccess };
  http: HttpTool[];
}

/** The versioned part of an agent. `is_default` is not versioned and lives on the agent row. */
export interface AgentConfig {
  name: string;
  instructions: string;
  model: string | null;
  effort: Effort | null;
  greeting: string;
  display_name: string;
  narration: boolean;
  customer_answers: boolean;
  customer_approvals: boolean;
  guardrails: Guardrails;
  tools: AgentTools;
  /** Null: the service's own invite page, `{BASE_URL}/invite/{code}`. */
  invite_url_template: string | null;
}

/** What a caller may send: any field; `guardrails` and `tools` merge into the current values. */
export interface AgentConfigChanges {
  name?: string;
  instructions?: string;
  model?: string | null;
  effort?: Effort | null;
  greeting?: string;
  display_name?: string;
  narration?: boolean;
  customer_answers?: boolean;
  customer_approvals?: boolean;
  guardrails?: GuardrailsInput;
  tools?: {
    files?: { enabled?: boolean; access?: FileAccess };
    http?: Array<{ name: string; description: string; url: string; approval?: HttpToolApproval }>;
  };
  invite_url_template?: string | null;
}

/** Limits on the agent's own fields (the guardrail limits are in `GUARDRAIL_LIMITS`). */
export const AGENT_LIMITS = Object.freeze({
  nameChars: 100,
  instructionsChars: 50_000,
  greetingChars: 2_000,
  displayNameChars: 80,
  inviteUrlTemplateChars: 2_000,
  httpTools: 20,
  httpToolNameChars: 64,
  httpToolDescriptionChars: 1_000,
  httpToolUrlChars: 2_000,
});

export const AGENT_ID_PATTERN = '^[a-z0-9-]{2,40}$';
const AGENT_ID = new RegExp(AGENT_ID_PATTERN);
export const HTTP_TOOL_NAME_PATTERN = '^[A-Za-z][A-Za-z0-9_-]{0,63}$';
const HTTP_TOOL_NAME = new RegExp(HTTP_TOOL_NAME_PATTERN);

/** The placeholder an invite URL template must contain. */
export const CODE_PLACEHOLDER = '{code}';

export function isAgentId(value: string): boolean {
  return AGENT_ID.test(value);
}

/** A fresh config with every default. */
export function defaultAgentConfig(name: string): AgentConfig {
  return {
    name,
    instructions: '',
    model: null,
    effort: null,
    greeting: '',
    display_name: '',
    narration: true,
    customer_answers: true,
    customer_approvals: true,
    guardrails: normalizeGuardrails({}),
    tools: { files: { enabled: true, access: 'read_write' }, http: [] },
    invite_url_template: null,
  };
}

/** The template invite links are made from: the agent's own, or the service's invite page. */
export function effectiveInviteUrlTemplate(config: AgentConfig, baseUrl: string): string {
  return config.invite_url_template ?? `${baseUrl}/invite/${CODE_PLACEHOLDER}`;
}

/** The model a task with this config runs: `model`, or the service default when null. */
export function effectiveModel(config: AgentConfig): string {
  return config.model ?? DEFAULT_MODEL;
}

export interface ApplyOptions {
  /** `DESKHAND_ALLOW_PRIVATE_URLS=1` (development): tool URLs may be http and private. */
  allowPrivateUrls: boolean;
  /** Added to a refused tool URL's message (shared/http/private-url-hint.ts). */
  urlRefusalHint?: (url: string) => string;
}

/**
 * `base` with `changes` applied and checked. Fields not sent keep their values; `guardrails`,
 * `guardrails.apps`, `guardrails.sites` and `tools.files` merge field by field; arrays and every
 * other value replace. Throws 400 `invalid_request` naming the field.
 */
export function applyChanges(base: AgentConfig, changes: AgentConfigChanges, options: ApplyOptions): AgentConfig {
  const next: AgentConfig = structuredClone(base);
  if (changes.name !== undefined) next.name = text(changes.name, 'name', 1, AGENT_LIMITS.nameChars);
  if (changes.instructions !== undefined) next.instructions = text(changes.instructions, 'instructions', 0, AGENT_LIMITS.instructionsChars);
  if (changes.greeting !== undefined) next.greeting = text(changes.greeting, 'greeting', 0, AGENT_LIMITS.greetingChars);
  if (changes.display_name !== undefined) next.display_name = text(changes.display_name, 'display_name', 0, AGENT_LIMITS.displayNameChars);
  if (changes.model !== undefined) {
    if (changes.model !== null && !MODEL_IDS.includes(changes.model)) {
      throw invalidRequest(`model must be one of: ${MODEL_IDS.join(', ')}, or null (the default, ${DEFAULT_MODEL})`);
    }
    next.model = changes.model;
  }
  if (changes.effort !== undefined) {
    if (changes.effort !== null && !(EFFORTS as readonly string[]).includes(changes.effort)) {
      throw invalidRequest('effort must be one of: low, medium, high, or null');
    }
    next.effort = changes.effort;
  }
  for (const flag of ['narration', 'customer_answers', 'customer_approvals'] as const) {
    const value = changes[flag];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') throw invalidRequest(`${flag} must be true or false`);
    next[flag] = value;
  }
  if (changes.invite_url_template !== undefined) next.invite_url_template = inviteUrlTemplate(changes.invite_url_template);
  if (changes.guardrails !== undefined) next.guardrails = mergeGuardrails(base.guardrails, changes.guardrails);
  if (changes.tools !== undefined) next.tools = mergeTools(base.tools, changes.tools, options);
  return next;
}

/**
 * A stored config made whole: fields it lacks take their defaults. Stored configs were checked
 * when written, so this never refuses one.
 */
export function readConfig(stored: unknown): AgentConfig {
  const raw = (stored ?? {}) as Partial<AgentConfig>;
  const defaults = defaultAgentConfig(typeof raw.name === 'string' ? raw.name : 'Agent');
  const tools = (raw.tools ?? {}) as Partial<AgentTools>;
  return {
    ...defaults,
    ...raw,
    guardrails: normalizeGuardrails((raw.guardrails ?? {}) as GuardrailsInput),
    tools: {
      files: { ...defaults.tools.files, ...(tools.files ?? {}) },
      http: (tools.http ?? []).map((tool) => ({ ...tool, approval: tool.approval ?? 'never' })),
    },
  };
}

function text(value: unknown, field: string, min: number, max: number): string {
  if (typeof value !== 'string') throw invalidRequest(`${field} must be a string`);
  if (value.length < min) throw invalidRequest(min === 1 ? `${field} must not be empty` : `${field} must be at least ${min} characters`);
  if (value.length > max) throw invalidRequest(`${field} must be at most ${max} characters`);
  return value;
}

function inviteUrlTemplate(value: string | null): string | null {
  if (value === null) return null;
  text(value, 'invite_url_template', 1, AGENT_LIMITS.inviteUrlTemplateChars);
  if (!value.includes(CODE_PLACEHOLDER)) throw invalidRequest(`invite_url_template must contain the placeholder ${CODE_PLACEHOLDER}`);
  let url: URL;
  try {
    url = new URL(value.split(CODE_PLACEHOLDER).join('ABCD-EFGH'));
  } catch {
    throw invalidRequest('invite_url_template must be an absolute http or https address once {code} is filled in');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw invalidRequest('invite_url_template must be an absolute http or https address once {code} is filled in');
  }
  return value;
}

function mergeGuardrails(current: Guardrails, changes: GuardrailsInput): Guardrails {
  if (changes === null || typeof changes !== 'object' || Array.isArray(changes)) throw invalidRequest('guardrails must be an object');
  const merged: Record<string, unknown> = { ...current, ...changes };
  for (const lists of ['apps', 'sites'] as const) {
    const sent = changes[lists];
    if (sent !== undefined && sent !== null && typeof sent === 'object' && !Array.isArray(sent)) {
      merged[lists] = { ...current[lists], ...sent };
    }
  }
  try {
    return normalizeGuardrails(merged as GuardrailsInput);
  } catch (error) {
    if (error instanceof InvalidGuardrailsError) throw invalidRequest(error.message);
    throw error;
  }
}

function mergeTools(current: AgentTools, changes: NonNullable<AgentConfigChanges['tools']>, options: ApplyOptions): AgentTools {
  if (changes === null || typeof changes !== 'object' || Array.isArray(changes)) throw invalidRequest('tools must be an object');
  const files = { ...current.files };
  if (changes.files !== undefined) {
    if (changes.files.enabled !== undefined) {
      if (typeof changes.files.enabled !== 'boolean') throw invalidRequest('tools.files.enabled must be true or false');
      files.enabled = changes.files.enabled;
    }
    if (changes.files.access !== undefined) {
      if (!(FILE_ACCESS as readonly string[]).includes(changes.files.access)) {
        throw invalidRequest('tools.files.access must be one of: read_write, read_only');
      }
      files.access = changes.files.access;
    }
  }
  const http = changes.http === undefined ? current.http.map((tool) => ({ ...tool })) : httpTools(changes.http, options);
  return { files, http };
}

function httpTools(tools: NonNullable<NonNullable<AgentConfigChanges['tools']>['http']>, options: ApplyOptions): HttpTool[] {
  if (!Array.isArray(tools)) throw invalidRequest('tools.http must be an array');
  if (tools.length > AGENT_LIMITS.httpTools) throw invalidRequest(`tools.http must have at most ${AGENT_LIMITS.httpTools} items`);
  const seen = new Map<string, number>();
  return tools.map((tool, i) => {
    const at = `tools.http[${i}]`;
    const name = text(tool.name, `${at}.name`, 1, AGENT_LIMITS.httpToolNameChars);
    if (!HTTP_TOOL_NAME.test(name)) throw invalidRequest(`${at}.name must start with a letter and hold only letters, digits, _ and -`);
    const earlier = seen.get(name.toLowerCase());
    if (earlier !== undefined) throw invalidRequest(`${at}.name "${name}" is already the name of tools.http[${earlier}]`);
    seen.set(name.toLowerCase(), i);
    const description = text(tool.description, `${at}.description`, 1, AGENT_LIMITS.httpToolDescriptionChars);
    const url = text(tool.url, `${at}.url`, 1, AGENT_LIMITS.httpToolUrlChars);
    const check = checkUrlShape(url, { allowPrivate: options.allowPrivateUrls });
    if (!check.ok) throw invalidRequest(`${at}.url is refused: ${check.reason}${options.urlRefusalHint?.(url) ?? ''}`);
    const approval = tool.approval ?? 'never';
    if (!(HTTP_TOOL_APPROVALS as readonly string[]).includes(approval)) {
      throw invalidRequest(`${at}.approval must be one of: ${HTTP_TOOL_APPROVALS.join(', ')}`);
    }
    return { name, description, url, approval };
  });
}
