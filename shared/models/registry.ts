/**
 * The registry that picks a backend for each model id of the catalog (`catalog.ts`): the vendor's
 * when its key is configured, the scripted model when `DESKHAND_SCRIPTED_MODELS=1` (it then serves
 * every id), none otherwise (503 model_unavailable).
 */
import { AnthropicBackend } from './anthropic';
import { ACTIVE_CATALOG, vendorOf, type ModelCatalog, type ModelVendor } from './catalog';
import { GeminiBackend } from './gemini';
import type { ModelBackend } from './model.types';
import { OpenAIBackend } from './openai';
import { ScriptedBackend } from './scripted';
import type { FetchLike, RetryOptions } from './vendor-http';

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
