/**
 * An agent's guardrails (spec: "Guardrails"): the rules enforced on each action the agent asks
 * for, plus the per-task limits that travel with them. The API always returns them whole;
 * `normalizeGuardrails` fills in what a caller left out and puts every value in its canonical
 * form, so that the engine, the API and the database all see the same thing.
 */
import { GUARDRAIL_CATEGORIES, type GuardrailCategory } from '../desktop/protocol';

export type { GuardrailCategory } from '../desktop/protocol';

/** supervised: someone can approve. unattended: anything needing an approval is refused. */
export type GuardrailMode = 'supervised' | 'unattended';
/** What a safety check raised by the model does: ask for a high-risk approval, or stop. */
export type SafetyChecksMode = 'ask' | 'stop';

export interface RuleLists {
  allow: string[];
  block: string[];
}

/** The spec's eleven guardrail fields, all required once normalised. */
export interface Guardrails {
  mode: GuardrailMode;
  /** Categories that wait for an approval (refused in unattended mode). Unique, in given order. */
  confirm: GuardrailCategory[];
  /** Categories never done. A category in both lists is blocked. Unique, in given order. */
  block: GuardrailCategory[];
  /** App names or ids, matched case-insensitively. */
  apps: RuleLists;
  /** Hosts, lowercase, without scheme, path or port; a rule covers its subdomains. */
  sites: RuleLists;
  safety_checks: SafetyChecksMode;
  /** What the agent is for; empty: no scope check. */
  scope: string;
  /** Check each new app, window or site for prompt injection. */
  screen_check: boolean;
  /** Model turns per task, 1..500. */
  max_steps: number;
  /** Running minutes per task, 1..240, or null for no limit. */
  max_minutes: number | null;
  /** Minutes before an undecided approval is denied, 1..1440, or null to wait. */
  approval_timeout_minutes: number | null;
}

/** What a caller may send: any field may be left out, and `apps`/`sites` may be partial. */
export type GuardrailsInput = Partial<Omit<Guardrails, 'apps' | 'sites'>> & {
  apps?: Partial<RuleLists>;
  sites?: Partial<RuleLists>;
};

/** The spec's limits on guardrail values. */
export const GUARDRAIL_LIMITS = Object.freeze({
  listItems: 50,
  itemChars: 100,
  scopeChars: 2000,
  maxSteps: Object.freeze({ min: 1, max: 500 }),
  maxMinutes: Object.freeze({ min: 1, max: 240 }),
  approvalTimeoutMinutes: Object.freeze({ min: 1, max: 1440 }),
});

type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value as DeepReadonly<T>;
}

/** The spec's defaults. Frozen; `normalizeGuardrails()` returns a fresh copy to change. */
export const DEFAULT_GUARDRAILS: DeepReadonly<Guardrails> = deepFreeze<Guardrails>({
  mode: 'supervised',
  confirm: ['purchase', 'send', 'delete', 'install', 'security', 'terms'],
  block: [],
  apps: { allow: [], block: [] },
  sites: { allow: [], block: [] },
  safety_checks: 'ask',
  scope: '',
  screen_check: false,
  max_steps: 150,
  max_minutes: null,
  approval_timeout_minutes: null,
});

/**
 * A guardrails value that cannot be made sense of. The API maps it to 400 `invalid_request`;
 * `field` is the path of the offending value, such as `guardrails.sites.block[2]`.
 */
export class InvalidGuardrailsError extends Error {
  override readonly name = 'InvalidGuardrailsError';
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field} ${problem}`);
  }
}

const TOP_FIELDS = new Set<string>(Object.keys(DEFAULT_GUARDRAILS));
const LIST_FIELDS = new Set(['allow', 'block']);

/**
 * Fills in defaults and canonicalises a (partial) guardrails object.
 *
 * - A missing field (undefined) takes its default; `null` is a value only for `max_minutes` and
 *   `approval_timeout_minutes`.
 * - `confirm` and `block` keep the order given, without repeats ("both lists come back as set").
 * - App rules are trimmed and de-duplicated case-insensitively (the first spelling is kept).
 * - Site rules are reduced to their lowercase host by {@link normalizeSiteRule} and
 *   de-duplicated.
 * - The spec's limits are enforced (50 items of at most 100 characters per list, 2000
 *   characters of scope, the integer ranges).
 *
 * It is strict on purpose: a value of the wrong type, an unknown category, an unknown field or
 * a value out of range throws {@link InvalidGuardrailsError} rather than being dropped, because
 * a silently dropped rule would loosen the agent's guardrails.
 *
 * @returns a new, unfrozen object that shares nothing with the input or the defaults.
 */
export function normalizeGuardrails(partial?: GuardrailsInput | null): Guardrails {
  const input: unknown = partial ?? {};
  if (!isPlainObject(input)) throw new InvalidGuardrailsError('guardrails', 'must be an object');
  for (const key of Object.keys(input)) {
    if (!TOP_FIELDS.has(key)) throw new InvalidGuardrailsError(`guardrails.${key}`, 'is not a guardrails field');
  }
  const d = DEFAULT_GUARDRAILS;
  return {
    mode: oneOf(input.mode, ['supervised', 'unattended'] as const, d.mode, 'guardrails.mode'),
    confirm: categories(input.confirm, d.confirm, 'guardrails.confirm'),
    block: categories(input.block, d.block, 'guardrails.block'),
    apps: ruleLists(input.apps, 'guardrails.apps', normalizeAppRule, (v) => v.toLowerCase()),
    sites: ruleLists(input.sites, 'guardrails.sites', normalizeSiteRuleAt, (v) => v),
    safety_checks: oneOf(input.safety_checks, ['ask', 'stop'] as const, d.safety_checks, 'guardrails.safety_checks'),
    scope: scope(input.scope),
    screen_check: bool(input.screen_check, d.screen_check, 'guardrails.screen_check'),
    max_steps: integer(input.max_steps, d.max_steps, GUARDRAIL_LIMITS.maxSteps, false, 'guardrails.max_steps') as number,
    max_minutes: integer(input.max_minutes, d.max_minutes, GUARDRAIL_LIMITS.maxMinutes, true, 'guardrails.max_minutes'),
    approval_timeout_minutes: integer(
      input.approval_timeout_minutes,
      d.approval_timeout_minutes,
      GUARDRAIL_LIMITS.approvalTimeoutMinutes,
      true,
      'guardrails.approval_timeout_minutes',
    ),
  };
}

// A plain host: what a stored rule already is, so the common case needs no URL parsing. The
// last label starts with a letter, because URL parsing reads a numeric last label as an IPv4
// address (`0x7f.1` is 127.0.0.1) and such values take the full path.
const PLAIN_HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z](?:[a-z0-9-]*[a-z0-9])?$/;

/**
 * Whether a value is already a normalised site rule of the common kind (a lowercase ASCII
 * host name), so that `normalizeSiteRule(value) === value` without parsing. False says
 * nothing: the value may still normalise to itself (an IPv4 address, for instance).
 */
export function isPlainHost(value: string): boolean {
  return PLAIN_HOST.test(value);
}
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
const NON_WEB_SCHEME = /^[a-z][a-z0-9+.-]*:(?!\d)/i;

/**
 * Reduces a site rule to the lowercase host it names: a scheme, user info, port, path, query
 * or fragment is dropped (`https://Shop.Example.com:8443/cart?x=1` → `shop.example.com`), as
 * are a leading `*.` or `.` (a rule covers its subdomains anyway) and a trailing dot.
 * International names become their ASCII (punycode) form, as browsers report them. IPv6
 * addresses keep their brackets (`[::1]`).
 *
 * @throws InvalidGuardrailsError when no host can be read from the value (empty, spaces, a
 *   `file:` or `mailto:` value, a lone wildcard).
 */
export function normalizeSiteRule(value: string): string {
  return normalizeSiteRuleAt(value, 'site rule');
}

function normalizeSiteRuleAt(value: string, field: string): string {
  if (typeof value !== 'string') throw new InvalidGuardrailsError(field, 'must be a string');
  let v = value.trim().toLowerCase();
  if (PLAIN_HOST.test(v)) return v;
  if (!HAS_SCHEME.test(v) && NON_WEB_SCHEME.test(v)) {
    // `mailto:me@example.com`, `javascript:…`: a scheme without `//` that is not a port.
    throw new InvalidGuardrailsError(field, 'must be a host name or a web address');
  }
  if (!HAS_SCHEME.test(v)) {
    // A leading wildcard or dot says "and its subdomains", which every rule already means.
    v = v.replace(/^(?:\*\.|\.)/, '');
    v = `http://${v}`;
  }
  let host: string;
  try {
    const url = new URL(v);
    if (url.protocol !== 'http:' && url.protocol !== 'https:' && url.protocol !== 'ws:' && url.protocol !== 'wss:') {
      throw new InvalidGuardrailsError(field, 'must be a host name or a web address');
    }
    host = url.hostname;
  } catch (err) {
    if (err instanceof InvalidGuardrailsError) throw err;
    throw new InvalidGuardrailsError(field, 'must be a host name or a web address');
  }
  host = host.replace(/\.$/, '');
  if (host === '' || host.includes('*') || host.startsWith('.') || host.includes('..')) {
    throw new InvalidGuardrailsError(field, 'must be a host name or a web address');
  }
  return host;
}

function normalizeAppRule(value: string, field: string): string {
  if (typeof value !== 'string') throw new InvalidGuardrailsError(field, 'must be a string');
  const v = value.trim();
  if (v === '') throw new InvalidGuardrailsError(field, 'must not be empty');
  return v;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function oneOf<T extends string>(v: unknown, allowed: readonly T[], fallback: T, field: string): T {
  if (v === undefined) return fallback;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw new InvalidGuardrailsError(field, `must be one of ${allowed.join(', ')}`);
  }
  return v as T;
}

function categories(v: unknown, fallback: readonly GuardrailCategory[], field: string): GuardrailCategory[] {
  if (v === undefined) return [...fallback];
  if (!Array.isArray(v)) throw new InvalidGuardrailsError(field, 'must be an array of categories');
  const out: GuardrailCategory[] = [];
  v.forEach((c: unknown, i) => {
    if (typeof c !== 'string' || !(GUARDRAIL_CATEGORIES as readonly string[]).includes(c)) {
      throw new InvalidGuardrailsError(`${field}[${i}]`, `must be one of ${GUARDRAIL_CATEGORIES.join(', ')}`);
    }
    if (!out.includes(c as GuardrailCategory)) out.push(c as GuardrailCategory);
  });
  return out;
}

function ruleLists(
  v: unknown,
  field: string,
  normalizeItem: (value: string, field: string) => string,
  key: (normalized: string) => string,
): RuleLists {
  if (v === undefined) return { allow: [], block: [] };
  if (!isPlainObject(v)) throw new InvalidGuardrailsError(field, 'must be an object with allow and block');
  for (const k of Object.keys(v)) {
    if (!LIST_FIELDS.has(k)) throw new InvalidGuardrailsError(`${field}.${k}`, 'is not a field (allow, block)');
  }
  const list = (name: 'allow' | 'block'): string[] => {
    const items = v[name];
    const path = `${field}.${name}`;
    if (items === undefined) return [];
    if (!Array.isArray(items)) throw new InvalidGuardrailsError(path, 'must be an array of strings');
    if (items.length > GUARDRAIL_LIMITS.listItems) {
      throw new InvalidGuardrailsError(path, `must have at most ${GUARDRAIL_LIMITS.listItems} items`);
    }
    const seen = new Set<string>();
    const out: string[] = [];
    items.forEach((item: unknown, i) => {
      const at = `${path}[${i}]`;
      if (typeof item !== 'string') throw new InvalidGuardrailsError(at, 'must be a string');
      if (item.length > GUARDRAIL_LIMITS.itemChars) {
        throw new InvalidGuardrailsError(at, `must be at most ${GUARDRAIL_LIMITS.itemChars} characters`);
      }
      const normalized = normalizeItem(item, at);
      // What is stored must fit too: an international host grows in its ASCII form (95 `é` are
      // `xn--…` of 101 characters), and a stored rule past the limit could not be read back.
      if (normalized.length > GUARDRAIL_LIMITS.itemChars) {
        throw new InvalidGuardrailsError(at, `must be at most ${GUARDRAIL_LIMITS.itemChars} characters as stored: its host in ASCII form (${normalized.slice(0, 12)}…) has ${normalized.length}`);
      }
      const k = key(normalized);
      if (!seen.has(k)) {
        seen.add(k);
        out.push(normalized);
      }
    });
    return out;
  };
  return { allow: list('allow'), block: list('block') };
}

function scope(v: unknown): string {
  if (v === undefined) return '';
  if (typeof v !== 'string') throw new InvalidGuardrailsError('guardrails.scope', 'must be a string');
  if (v.length > GUARDRAIL_LIMITS.scopeChars) {
    throw new InvalidGuardrailsError('guardrails.scope', `must be at most ${GUARDRAIL_LIMITS.scopeChars} characters`);
  }
  return v;
}

function bool(v: unknown, fallback: boolean, field: string): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new InvalidGuardrailsError(field, 'must be true or false');
  return v;
}

function integer(
  v: unknown,
  fallback: number | null,
  range: { min: number; max: number },
  nullable: boolean,
  field: string,
): number | null {
  if (v === undefined) return fallback;
  if (v === null && nullable) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < range.min || v > range.max) {
    throw new InvalidGuardrailsError(field, `must be an integer from ${range.min} to ${range.max}${nullable ? ' or null' : ''}`);
  }
  return v;
}
