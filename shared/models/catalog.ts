/**
 * The six model ids the service accepts (spec: Model), their vendors, and the registry that
 * picks a backend for each: the vendor's when its key is configured, the scripted model when
 * `DESKHAND_SCRIPTED_MODELS=1` (it then serves every id), none otherwise (503 model_unavailable).
 */
import { AnthropicBackend } from './anthropic';
import { GeminiBackend } from './gemini';
import type { ModelBackend } from './model.types';
import { OpenAIBackend } from './openai';
import { ScriptedBackend } from './scripted';
import type { FetchLike, RetryOptions } from './vendor-http';

export type ModelVendor = 'anthropic' | 'openai' | 'gemini';

export interface ModelCatalogEntry {
  id: string;
  vendor: ModelVendor;
  /** The spec's placeholder for this id. */
  slot: 'A1' | 'A2' | 'A3' | 'B1' | 'B2' | 'C1';
  name: string;
}

export const MODEL_CATALOG: readonly ModelCatalogEntry[] = Object.freeze([
  { id: 'claude-sonnet-4-5-20250929', vendor: 'anthropic', slot: 'A1', name: 'Claude Sonnet 4.5' },
  { id: 'claude-opus-4-1-20250805', vendor: 'anthropic', slot: 'A2', name: 'Claude Opus 4.1' },
  { id: 'claude-haiku-4-5-20251001', vendor: 'anthropic', slot: 'A3', name: 'Claude Haiku 4.5' },
  { id: 'computer-use-preview-2025-03-11', vendor: 'openai', slot: 'B1', name: 'OpenAI computer-use-preview (2025-03-11 snapshot)' },
  { id: 'computer-use-preview', vendor: 'openai', slot: 'B2', name: 'OpenAI computer-use-preview' },
  { id: 'gemini-2.5-computer-use-preview-10-2025', vendor: 'gemini', slot: 'C1', name: 'Gemini 2.5 Computer Use (preview)' },
] as const satisfies readonly ModelCatalogEntry[]);

/** The six accepted model ids, in the spec's order (A1…A3, B1, B2, C1). */
export const MODEL_IDS: readonly string[] = Object.freeze(MODEL_CATALOG.map((m) => m.id));

/** The model a null `model` selects: `<MODEL_B2>`, the second model of the second vendor. */
export const DEFAULT_MODEL = 'computer-use-preview';

export function isModelId(value: unknown): value is string {
  return typeof value === 'string' && MODEL_IDS.includes(value);
}

/** The vendor of a model id; null for an id not in the catalog. */
export function vendorOf(modelId: string): ModelVendor | null {
  return MODEL_CATALOG.find((m) => m.id === modelId)?.vendor ?? null;
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
  /** Retry policy inside one model call (default: 2 retries, 0.5 s then 1 s, at most 10 s). */
  retry?: RetryOptions;
  /** Limit for one HTTP attempt (default 120 s). */
  timeoutMs?: number;
}

export interface ModelRegistry {
  /**
   * The backend that runs this model id (null `modelId`: the default model); null when the
   * service cannot run it (unknown id, or no key for its vendor and not scripted).
   */
  backendFor(modelId: string | null): ModelBackend | null;
  /** Whether `backendFor` would return a backend. */
  isAvailable(modelId: string | null): boolean;
}

/**
 * Builds the registry from the service's config. Backends hold no per-task state, so one
 * instance of each serves every task.
 */
export function createModelRegistry(config: ModelRegistryConfig, fetchImpl?: FetchLike): ModelRegistry {
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
  const backendFor = (modelId: string | null): ModelBackend | null => {
    const vendor = vendorOf(modelId ?? DEFAULT_MODEL);
    if (vendor === null) return null;
    return scripted ?? vendors[vendor];
  };
  return Object.freeze({ backendFor, isAvailable: (modelId: string | null) => backendFor(modelId) !== null });
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
