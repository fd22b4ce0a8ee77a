/**
 * The eval models' first choice: OpenAI's Responses API through its SDK. GPT-5.4 is a reasoning
 * model, and OpenAI takes a sampling temperature on it only with reasoning off
 * (`reasoning.effort: none`), which is what a customer's one-line answer and a rubric's
 * verdicts need: `temperature: 0`, and the schema enforced by the API (`text.format`
 * `json_schema`, `strict: true`).
 */
import OpenAI from 'openai';
import type { ResponseCreateParamsNonStreaming } from 'openai/resources/responses/responses';
import { OPENAI_DEFAULT_BASE_URL } from '../models/openai';
import { openaiText } from '../models/scope-judge';
import { sdkClientOptions, toModelError, type VendorBackendOptions } from '../models/vendor-http';
import { plainSchema, type JsonQuestion, type TextModel } from './json-completion';

export class OpenAITextModel implements TextModel {
  readonly vendor = 'openai' as const;
  private readonly client: OpenAI;

  constructor(
    readonly model: string,
    options: VendorBackendOptions,
  ) {
    this.client = new OpenAI(sdkClientOptions(options, OPENAI_DEFAULT_BASE_URL));
  }

  async complete(question: JsonQuestion, signal?: AbortSignal): Promise<string | null> {
    const body = {
      model: this.model,
      instructions: question.system,
      input: [{ role: 'user', content: [{ type: 'input_text', text: question.user }] }],
      reasoning: { effort: 'none' },
      temperature: 0,
      max_output_tokens: question.maxTokens,
      text: { format: { type: 'json_schema', name: question.name, schema: plainSchema(question.schema), strict: true } },
    } satisfies ResponseCreateParamsNonStreaming;
    try {
      return openaiText(await this.client.responses.create(body, { signal }));
    } catch (error) {
      throw toModelError('openai', error, signal, this.model);
    }
  }
}
