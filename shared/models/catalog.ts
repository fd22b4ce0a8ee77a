/**
 * The six model ids the service accepts (spec: Model), their vendors, and the registry that
 * picks a backend for each: the vendor's when its key is configured, the scripted model when
 * `DESKHAND_SCRIPTED_MODELS=1` (it then serves every id), none otherwise (503 model_unavailable).
 *
 * Vendors retire models every few months, so the ids are configuration, not code: the built-in
 * catalog below holds the current computer-use models, `DESKHAND_MODELS` replaces any slot's id,
 * and `DESKHAND_RETIRED_MODELS` lists ids that must no longer be called (optionally each with the
 * id that takes its place). docs/models.md ("Retiring a model") is the procedure.
 */
import { AnthropicBackend } from './anthropic';
import { GeminiBackend } from './gemini';
import type { ModelBackend } from './model.types';
import { OpenAIBackend } from './openai';
import { ScriptedBackend } from './scripted';
import type { FetchLike, RetryOptions } from './vendor-http';

export type ModelVendor = 'anthropic' | 'openai' | 'gemini';

export const MODEL_SLOTS = ['A1', 'A2', 'A3', 'B1', 'B2', 'C1'] as const;
export type ModelSlot = (typeof MODEL_SLOTS)[number];

const SLOT_VENDORS: Readonly<Record<ModelSlot, ModelVendor>> = Object.freeze({
  A1: 'anthropic',
  A2: 'anthropic',
  A3: 'anthropic',
  B1: 'openai',
  B2: 'openai',
  C1: 'gemini',
});

export interface ModelCatalogEntry {
  id: string;
  vendor: ModelVendor;
  /** The spec's placeholder for this id. */
  slot: ModelSlot;
  name: string;
}

/** The built-in catalog: the vendors' current computer-use models (checked 2026-11). */
export const BUILT_IN_CATALOG: readonly ModelCatalogEntry[] = Object.freeze([
  { id: 'claude-sonnet-4-6', vendor: 'anthropic', slot: 'A1', name: 'Claude Sonnet 4.6' },
  { id: 'claude-opus-4-6', vendor: 'anthropic', slot: 'A2', name: 'Claude Opus 4.6' },
  { id: 'claude-haiku-4-5-20251001', vendor: 'anthropic', slot: 'A3', name: 'Claude Haiku 4.5' },
  { id: 'gpt-5.4-mini', vendor: 'openai', slot: 'B1', name: 'GPT-5.4 mini (computer tool)' },
  { id: 'gpt-5.4', vendor: 'openai', slot: 'B2', name: 'GPT-5.4 (computer tool)' },
  { id: 'gemini-3.6-flash', vendor: 'gemini', slot: 'C1', name: 'Gemini 3.6 Flash (computer use)' },
] as const satisfies readonly ModelCatalogEntry[]);

/**
 * Ids the vendors have retired (or announced) that agents may still hold: no task calls them. An
 * operator adds to this with `DESKHAND_RETIRED_MODELS` and may name a successor for each.
 */
export const BUILT_IN_RETIRED: readonly string[] = Object.freeze([
  'computer-use-preview',
  'computer-use-preview-2025-03-11',
  'claude-opus-4-1-20250805',
  'claude-sonnet-4-5-20250929',
  'gemini-2.5-computer-use-preview-10-2025',
]);

export interface ModelCatalog {
  /** The six entries, in the spec's order (A1…A3, B1, B2, C1). */
  entries: readonly ModelCatalogEntry[];
  /** Retired id → the catalog id that takes its place, or null (tasks on it answer 503). */
  retired: ReadonlyMap<string, string | null>;
}

/** A configuration mistake in `DESKHAND_MODELS` / `DESKHAND_RETIRED_MODELS`; the service does not start. */
export class ModelCatalogError extends Error {
  override readonly name = 'ModelCatalogError';
}

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$/;

function pairs(value: string | undefined, variable: string): Array<[string, string | null]> {
  if (!value || value.trim() === '') return [];
  return value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part): [string, string | null] => {
      const [left, right, extra] = part.split('=').map((p) => p.trim());
      if (extra !== undefined || !ID_PATTERN.test(left) || (right !== undefined && !ID_PATTERN.test(right))) {
        throw new ModelCatalogError(`${variable}: "${part}" is not of the form id or id=id`);
      }
      return [left, right ?? null];
    });
}

/**
 * The catalog from the environment: `DESKHAND_MODELS=B2=gpt-5.5,A2=claude-opus-4-8` replaces the
 * ids of those slots; `DESKHAND_RETIRED_MODELS=gpt-5.4,claude-opus-4-6=claude-opus-4-8` marks ids
 * retired, each optionally followed by its successor (which must be in the catalog). A retired
 * id cannot also be in the catalog. Throws `ModelCatalogError` naming the variable.
 */
export function loadModelCatalog(env: Record<string, string | undefined>): ModelCatalog {
  const ids = new Map<ModelSlot, string>(BUILT_IN_CATALOG.map((m) => [m.slot, m.id]));
  const renamed = new Set<ModelSlot>();
  for (const [slot, id] of pairs(env.DESKHAND_MODELS, 'DESKHAND_MODELS')) {
    if (!(MODEL_SLOTS as readonly string[]).includes(slot) || id === null) {
      throw new ModelCatalogError(`DESKHAND_MODELS: "${slot}${id ? `=${id}` : ''}" must be SLOT=id with SLOT one of ${MODEL_SLOTS.join(', ')}`);
    }
    ids.set(slot as ModelSlot, id);
    renamed.add(slot as ModelSlot);
  }
  const entries = MODEL_SLOTS.map((slot): ModelCatalogEntry => {
    const builtIn = BUILT_IN_CATALOG.find((m) => m.slot === slot)!;
    const id = ids.get(slot)!;
    return { id, vendor: SLOT_VENDORS[slot], slot, name: renamed.has(slot) && id !== builtIn.id ? id : builtIn.name };
  });
  const catalogIds = new Set(entries.map((e) => e.id));
  if (catalogIds.size !== entries.length) throw new ModelCatalogError('DESKHAND_MODELS: the six slots must hold six different ids');

  const retired = new Map<string, string | null>();
  for (const id of BUILT_IN_RETIRED) if (!catalogIds.has(id)) retired.set(id, null);
  for (const [id, successor] of pairs(env.DESKHAND_RETIRED_MODELS, 'DESKHAND_RETIRED_MODELS')) {
    if (catalogIds.has(id)) {
      throw new ModelCatalogError(`DESKHAND_RETIRED_MODELS: ${id} is still in the catalog; give its slot a new id in DESKHAND_MODELS first`);
    }
    if (successor !== null && !catalogIds.has(successor)) {
      throw new ModelCatalogError(`DESKHAND_RETIRED_MODELS: the successor of ${id}, ${successor}, is not one of the catalog's ids (${[...catalogIds].join(', ')})`);
    }
    retired.set(id, successor);
  }
  return Object.freeze({ entries: Object.freeze(entries), retired });
}

/**
 * The catalog this process runs with, read once from its environment (the request schemas'
 * model enum is built from it when they load). A mistake in the variables leaves the built-in
 * catalog here: `loadConfig`, which every process runs before it serves, refuses the same
 * variables with a message naming them.
 */
export const ACTIVE_CATALOG: ModelCatalog = catalogOrBuiltIn(process.env);

function catalogOrBuiltIn(env: Record<string, string | undefined>): ModelCatalog {
  try {
    return loadModelCatalog(env);
  } catch (error) {
    if (error instanceof ModelCatalogError) return loadModelCatalog({});
    throw error;
  }
}

/** The catalog's entries (kept under its historical name). */
export const MODEL_CATALOG: readonly ModelCatalogEntry[] = ACTIVE_CATALOG.entries;

/** The six accepted model ids, in the spec's order (A1…A3, B1, B2, C1). */
export const MODEL_IDS: readonly string[] = Object.freeze(MODEL_CATALOG.map((m) => m.id));

/** The model a null `model` selects: slot B2 of the catalog, the second model of the second vendor (`gpt-5.4` in the shipped catalog). */
export const DEFAULT_MODEL: string = MODEL_CATALOG.find((m) => m.slot === 'B2')!.id;

export function isModelId(value: unknown): value is string {
  return typeof value === 'string' && MODEL_IDS.includes(value);
}

/** The vendor of a model id; null for an id not in the catalog. */
export function vendorOf(modelId: string, catalog: ModelCatalog = ACTIVE_CATALOG): ModelVendor | null {
  return catalog.entries.find((m) => m.id === modelId)?.vendor ?? null;
}

export interface VendorConfig {
  apiKey: string;
  /** Null or empty: the vendor's public API. */
  baseUrl?: string | null;
}

export interface ModelRegistryConfig {
  /** The scripted model serves every id (`DESKHAND_SCRIPTED_MODELS=1`). */
  scripted: boolean;
  anthropic?: VendorConfig | null;
  openai?: VendorConfig | null;
  gemini?: VendorConfig | null;
  /** Retry policy inside one model call (default: 2 retries, vendor delays up to 10 s). */
  retry?: RetryOptions;
  /** Limit for one HTTP attempt (default 120 s). */
  timeoutMs?: number;
  /** Default: the process's catalog (`ACTIVE_CATALOG`). */
  catalog?: ModelCatalog;
}

export interface ModelRegistry {
  /**
   * The id a task on this model calls: the configured successor of a retired id, else the id
   * itself (null: the default model).
   */
  resolve(modelId: string | null): string;
  /**
   * The backend that runs this model id (null `modelId`: the default model); null when the
   * service cannot run it (unknown or retired id, or no key for its vendor and not scripted).
   */
  backendFor(modelId: string | null): ModelBackend | null;
  /** Whether `backendFor` would return a backend. */
  isAvailable(modelId: string | null): boolean;
  /** Why `backendFor` returns null for this id, in words for a 503's message; null when it does not. */
  unavailableReason(modelId: string | null): string | null;
}

/** The variable that gives each vendor's key, named in the hint of a model that cannot run. */
const VENDOR_KEY_VARIABLES: Readonly<Record<ModelVendor, string>> = Object.freeze({ anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_API_KEY', gemini: 'GEMINI_API_KEY' });

/**
 * Builds the registry from the service's config. Backends hold no per-task state, so one
 * instance of each serves every task.
 */
export function createModelRegistry(config: ModelRegistryConfig, fetchImpl?: FetchLike): ModelRegistry {
  const catalog = config.catalog ?? ACTIVE_CATALOG;
  const defaultModel = catalog.entries.find((m) => m.slot === 'B2')!.id;
  const common = { fetchImpl, retry: config.retry, timeoutMs: config.timeoutMs };
  const usable = (c: VendorConfig | null | undefined): c is VendorConfig => !!c && typeof c.apiKey === 'string' && c.apiKey !== '';
  const scripted = config.scripted ? new ScriptedBackend() : null;
  const vendors: Record<ModelVendor, ModelBackend | null> = {
    anthropic: usable(config.anthropic)
      ? new AnthropicBackend({ apiKey: config.anthropic.apiKey, baseUrl: config.anthropic.baseUrl ?? undefined, ...common })
      : null,
    openai: usable(config.openai)
      ? new OpenAIBackend({ apiKey: config.openai.apiKey, baseUrl: config.openai.baseUrl ?? undefined, ...common })
      : null,
    gemini: usable(config.gemini)
      ? new GeminiBackend({ apiKey: config.gemini.apiKey, baseUrl: config.gemini.baseUrl ?? undefined, ...common })
      : null,
  };
  const resolve = (modelId: string | null): string => {
    const id = modelId ?? defaultModel;
    return catalog.retired.get(id) ?? id;
  };
  const backendFor = (modelId: string | null): ModelBackend | null => {
    const vendor = vendorOf(resolve(modelId), catalog);
    if (vendor === null) return null;
    return scripted ?? vendors[vendor];
  };
  const unavailableReason = (modelId: string | null): string | null => {
    const id = modelId ?? defaultModel;
    const resolved = resolve(modelId);
    if (catalog.retired.has(id) && resolved === id) {
      return `The model ${id} has been retired by its vendor and can no longer run; set the agent's model to one of ${catalog.entries.map((m) => m.id).join(', ')} (or null for ${defaultModel})`;
    }
    const vendor = vendorOf(resolved, catalog);
    if (vendor === null) return `The model ${id} is not one of this server's models (${catalog.entries.map((m) => m.id).join(', ')})`;
    if (!scripted && !vendors[vendor]) {
      return `The model ${resolved} cannot run on this server: no API key is configured for ${vendor}; set ${VENDOR_KEY_VARIABLES[vendor]} (or run with DESKHAND_SCRIPTED_MODELS=1 for the scripted model)`;
    }
    return null;
  };
  return Object.freeze({ resolve, backendFor, isAvailable: (modelId: string | null) => backendFor(modelId) !== null, unavailableReason });
}

/**
 * The registry config from environment variables: `DESKHAND_SCRIPTED_MODELS=1`,
 * `ANTHROPIC_API_KEY`/`ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`/`OPENAI_BASE_URL`,
 * `GEMINI_API_KEY`/`GEMINI_BASE_URL`. An empty key counts as none.
 */
export function modelRegistryConfigFromEnv(env: Record<string, string | undefined>): ModelRegistryConfig {
  const vendor = (key: string, base: string): VendorConfig | null => {
    const apiKey = env[key]?.trim();
    return apiKey ? { apiKey, baseUrl: env[base]?.trim() || null } : null;
  };
  return {
    scripted: env.DESKHAND_SCRIPTED_MODELS === '1' || env.DESKHAND_SCRIPTED_MODELS?.toLowerCase() === 'true',
    anthropic: vendor('ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL'),
    openai: vendor('OPENAI_API_KEY', 'OPENAI_BASE_URL'),
    gemini: vendor('GEMINI_API_KEY', 'GEMINI_BASE_URL'),
  };
}
