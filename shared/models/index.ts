/**
 * Model backends: the contract (`model.types`), the catalog and registry, the scripted model and
 * its scope check. Vendor backends are reached through `createModelRegistry`.
 */
export * from './model.types';
export { DEFAULT_MODEL, isModelId, MODEL_CATALOG, MODEL_IDS, vendorOf, type ModelCatalogEntry, type ModelVendor } from './catalog';
export { createModelRegistry, modelRegistryConfigFromEnv, type ModelRegistry, type ModelRegistryConfig, type VendorConfig } from './registry';
export { judgeScopeScripted, parseScript, ScriptedBackend, ScriptParseError, scriptedTurn, type ScopeJudgement, type ScriptStep } from './scripted';
export { AnthropicBackend } from './anthropic';
export { OpenAIBackend } from './openai';
export { GeminiBackend } from './gemini';
export type { FetchLike, RetryOptions, VendorBackendOptions } from './vendor-http';
