/**
 * The eval models on Anthropic (when it is the only vendor with a key): the Messages API through
 * its SDK, the schema enforced by the API (`output_config.format`). Anthropic's current API
 * version (2026-10-21, the SDK's) refuses every sampling parameter, `temperature` included, on
 * every model, so none is sent: the structured format and the instructions are what keep these
 * answers steady (docs/evals.md).
 */
import Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages/messages';
import { ANTHROPIC_DEFAULT_BASE_URL } from '../models/anthropic';
import { anthropicText } from '../models/scope-judge';
import { sdkClientOptions, toModelError, type VendorBackendOptions } from '../models/vendor-http';
import { plainSchema, type JsonQuestion, type TextModel } from './json-completion';

export class AnthropicTextModel implements TextModel {
  readonly vendor = 'anthropic' as const;
  private readonly client: Anthropic;

  constructor(
    readonly model: string,
    options: VendorBackendOptions,
  ) {
    this.client = new Anthropic(sdkClientOptions(options, ANTHROPIC_DEFAULT_BASE_URL));
  }

  async complete(question: JsonQuestion, signal?: AbortSignal): Promise<string | null> {
    const body = {
      model: this.model,
      max_tokens: question.maxTokens,
      system: question.system,
      messages: [{ role: 'user', content: question.user }],
      output_config: { format: { type: 'json_schema', schema: plainSchema(question.schema) } },
    } satisfies MessageCreateParamsNonStreaming;
    try {
      return anthropicText(await this.client.messages.create(body, { signal }));
    } catch (error) {
      throw toModelError('anthropic', error, signal, this.model);
    }
  }
}
