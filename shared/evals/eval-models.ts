/**
 * Which customer and judge a deployment uses, from the same config the model registry takes
 * (`ModelRegistryConfig`, built in the composition root from `Config`):
 * - `scripted: true` (`DESKHAND_SCRIPTED_MODELS=1`), or no OpenAI or Anthropic key: the
 *   scripted customer and judge;
 * - an OpenAI key: the catalog's default model (slot B2) at temperature 0;
 * - else an Anthropic key: the catalog's slot A1 (its API takes no temperature any more).
 * Gemini is not used here: a deployment with only a Gemini key gets the scripted pair.
 */
import { ACTIVE_CATALOG, type ModelSlot } from '../models/catalog';
import type { ModelRegistryConfig, VendorConfig } from '../models/registry';
import type { ModelBackendId } from '../models/model.types';
import type { FetchLike } from '../models/vendor-http';
import { AnthropicTextModel } from './anthropic-text-model';
import { scriptedCustomer, type CustomerModel } from './customer';
import type { TextModel } from './json-completion';
import { scriptedJudge, type RubricJudge } from './judge';
import { modelCustomer } from './model-customer';
import { modelJudge } from './model-judge';
import { OpenAITextModel } from './openai-text-model';

export interface EvalModels {
  /** `scripted`, or the vendor whose model answers and judges. */
  vendor: ModelBackendId;
  /** `scripted`, or the vendor model's id. */
  model: string;
  customer: CustomerModel;
  judge: RubricJudge;
}

export interface EvalModelOptions {
  /** The vendor model to use instead of the catalog's (B2 for OpenAI, A1 for Anthropic). */
  model?: string;
  /** Replaces the global fetch under the SDK (tests). */
  fetchImpl?: FetchLike;
}

const usable = (c: VendorConfig | null | undefined): c is VendorConfig => !!c && typeof c.apiKey === 'string' && c.apiKey !== '';

/** The vendor model that answers and judges, or null for the scripted pair. */
function textModel(config: ModelRegistryConfig, options: EvalModelOptions): TextModel | null {
  if (config.scripted) return null;
  const catalog = config.catalog ?? ACTIVE_CATALOG;
  const idOf = (slot: ModelSlot) => options.model ?? catalog.entries.find((m) => m.slot === slot)!.id;
  const common = { fetchImpl: options.fetchImpl, retry: config.retry, timeoutMs: config.timeoutMs };
  if (usable(config.openai)) return new OpenAITextModel(idOf('B2'), { apiKey: config.openai.apiKey, baseUrl: config.openai.baseUrl ?? undefined, ...common });
  if (usable(config.anthropic)) return new AnthropicTextModel(idOf('A1'), { apiKey: config.anthropic.apiKey, baseUrl: config.anthropic.baseUrl ?? undefined, ...common });
  return null;
}

/** The scripted or the vendor customer and judge; see the file comment for the order. */
export function createEvalModels(config: ModelRegistryConfig, options: EvalModelOptions = {}): EvalModels {
  const text = textModel(config, options);
  if (text === null) return Object.freeze({ vendor: 'scripted', model: 'scripted', customer: scriptedCustomer, judge: scriptedJudge });
  return Object.freeze({ vendor: text.vendor, model: text.model, customer: modelCustomer(text), judge: modelJudge(text) });
}
