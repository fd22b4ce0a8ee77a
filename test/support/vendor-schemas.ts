/**
 * What the vendor stand-ins accept: each vendor's request, written as a JSON Schema from the
 * vendor SDK's own type definitions (node_modules/@anthropic-ai/sdk/resources/beta/messages,
 * openai/resources/responses/responses.d.ts, @google/genai/dist/genai.d.ts), closed where the
 * API refuses unknown fields, plus the rules a schema cannot say that the vendors enforce (an
 * `is_error` tool result holds only text; tool results come first and answer every tool use;
 * a safety check is acknowledged only when the vendor raised it; a beta header matches its
 * tool). A stand-in that accepted anything would prove nothing: the stub answers a request that
 * breaks these with the vendor's 400 and records why (`Stub.violations`).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import type { IncomingHttpHeaders } from 'node:http';

const ajv = new Ajv({ allErrors: true, strict: false });

const text = { type: 'object', required: ['type', 'text'], properties: { type: { const: 'text' }, text: { type: 'string', minLength: 1 } } };
const image = {
  type: 'object',
  required: ['type', 'source'],
  properties: {
    type: { const: 'image' },
    source: {
      type: 'object',
      required: ['type', 'media_type', 'data'],
      properties: { type: { const: 'base64' }, media_type: { enum: ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] }, data: { type: 'string', minLength: 1 } },
    },
  },
};

/** Anthropic `MessageCreateParams` (beta), the fields this service may send. */
const anthropicSchema = {
  type: 'object',
  required: ['model', 'max_tokens', 'messages'],
  additionalProperties: false,
  properties: {
    model: { type: 'string', minLength: 1 },
    max_tokens: { type: 'integer', minimum: 1 },
    system: { type: 'string' },
    thinking: {
      oneOf: [
        { type: 'object', required: ['type', 'budget_tokens'], additionalProperties: false, properties: { type: { const: 'enabled' }, budget_tokens: { type: 'integer', minimum: 1024 } } },
        { type: 'object', required: ['type'], additionalProperties: false, properties: { type: { const: 'adaptive' } } },
      ],
    },
    output_config: { type: 'object', additionalProperties: false, properties: { effort: { enum: ['low', 'medium', 'high', 'xhigh', 'max'] } } },
    tools: {
      type: 'array',
      items: {
        oneOf: [
          {
            type: 'object',
            required: ['type', 'name', 'display_width_px', 'display_height_px'],
            additionalProperties: false,
            properties: {
              type: { enum: ['computer_20250124', 'computer_20251124'] },
              name: { const: 'computer' },
              display_width_px: { type: 'integer', minimum: 1 },
              display_height_px: { type: 'integer', minimum: 1 },
            },
          },
          {
            type: 'object',
            required: ['name', 'input_schema'],
            additionalProperties: false,
            properties: { name: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,128}$' }, description: { type: 'string' }, input_schema: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } } },
          },
        ],
      },
    },
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role', 'content'],
        additionalProperties: false,
        properties: {
          role: { enum: ['user', 'assistant'] },
          content: {
            anyOf: [
              { type: 'string' },
              {
                type: 'array',
                minItems: 1,
                items: {
                  type: 'object',
                  required: ['type'],
                  properties: { type: { enum: ['text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'] } },
                  allOf: [
                    { if: { properties: { type: { const: 'text' } } }, then: text },
                    { if: { properties: { type: { const: 'image' } } }, then: image },
                    {
                      if: { properties: { type: { const: 'tool_result' } } },
                      then: {
                        required: ['tool_use_id'],
                        properties: { tool_use_id: { type: 'string' }, is_error: { type: 'boolean' }, content: { anyOf: [{ type: 'string' }, { type: 'array', items: { anyOf: [text, image] } }] } },
                      },
                    },
                  ],
                },
              },
            ],
          },
        },
      },
    },
  },
};

/** OpenAI `ResponseCreateParamsNonStreaming`, the fields this service may send. */
const openaiSchema = {
  type: 'object',
  required: ['model', 'input'],
  additionalProperties: false,
  properties: {
    model: { type: 'string', minLength: 1 },
    instructions: { type: 'string' },
    previous_response_id: { type: 'string' },
    truncation: { enum: ['auto', 'disabled'] },
    reasoning: {
      type: 'object',
      additionalProperties: false,
      properties: { effort: { enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] }, summary: { enum: ['auto', 'concise', 'detailed'] } },
    },
    tools: {
      type: 'array',
      items: {
        oneOf: [
          // The GA computer tool (`ComputerTool`): nothing but its type.
          { type: 'object', required: ['type'], additionalProperties: false, properties: { type: { const: 'computer' } } },
          {
            type: 'object',
            required: ['type', 'name', 'parameters'],
            additionalProperties: false,
            properties: { type: { const: 'function' }, name: { type: 'string' }, description: { type: 'string' }, parameters: { type: 'object' }, strict: { type: 'boolean' } },
          },
        ],
      },
    },
    input: {
      type: 'array',
      minItems: 1,
      items: {
        oneOf: [
          {
            type: 'object',
            required: ['role', 'content'],
            additionalProperties: false,
            properties: {
              type: { const: 'message' },
              role: { enum: ['user', 'system', 'developer'] },
              content: {
                type: 'array',
                minItems: 1,
                items: {
                  oneOf: [
                    { type: 'object', required: ['type', 'text'], additionalProperties: false, properties: { type: { const: 'input_text' }, text: { type: 'string' } } },
                    {
                      type: 'object',
                      required: ['type', 'image_url', 'detail'],
                      additionalProperties: false,
                      properties: { type: { const: 'input_image' }, image_url: { type: 'string', pattern: '^data:image/png;base64,' }, detail: { enum: ['low', 'high', 'auto', 'original'] } },
                    },
                  ],
                },
              },
            },
          },
          {
            // `ResponseInputItem.ComputerCallOutput`: the output is a `computer_screenshot`.
            type: 'object',
            required: ['type', 'call_id', 'output'],
            additionalProperties: false,
            properties: {
              type: { const: 'computer_call_output' },
              call_id: { type: 'string' },
              output: {
                type: 'object',
                required: ['type', 'image_url'],
                additionalProperties: false,
                properties: { type: { const: 'computer_screenshot' }, image_url: { type: 'string', pattern: '^data:image/png;base64,' } },
              },
              acknowledged_safety_checks: {
                type: 'array',
                items: { type: 'object', required: ['id'], additionalProperties: false, properties: { id: { type: 'string' }, code: { type: ['string', 'null'] }, message: { type: ['string', 'null'] } } },
              },
            },
          },
          {
            type: 'object',
            required: ['type', 'call_id', 'output'],
            additionalProperties: false,
            properties: { type: { const: 'function_call_output' }, call_id: { type: 'string' }, output: { type: 'string' } },
          },
        ],
      },
    },
  },
};

const geminiPart = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    text: { type: 'string' },
    thought: { type: 'boolean' },
    thoughtSignature: { type: 'string' },
    inlineData: { type: 'object', required: ['mimeType', 'data'], additionalProperties: false, properties: { mimeType: { type: 'string' }, data: { type: 'string' } } },
    functionCall: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, args: { type: 'object' }, id: { type: 'string' } } },
    functionResponse: {
      type: 'object',
      required: ['name', 'response'],
      additionalProperties: false,
      properties: {
        name: { type: 'string' },
        id: { type: 'string' },
        response: { type: 'object' },
        parts: { type: 'array', items: { type: 'object', required: ['inlineData'], properties: { inlineData: { type: 'object', required: ['mimeType', 'data'] } } } },
      },
    },
  },
};

/** Gemini `GenerateContentRequest` (REST, as `@google/genai` writes it), the fields this service may send. */
const geminiSchema = {
  type: 'object',
  required: ['contents'],
  additionalProperties: false,
  properties: {
    contents: {
      type: 'array',
      minItems: 1,
      items: { type: 'object', required: ['role', 'parts'], additionalProperties: false, properties: { role: { enum: ['user', 'model'] }, parts: { type: 'array', minItems: 1, items: geminiPart } } },
    },
    systemInstruction: { type: 'object', required: ['parts'], properties: { parts: { type: 'array', items: geminiPart } } },
    tools: {
      type: 'array',
      items: {
        type: 'object',
        minProperties: 1,
        maxProperties: 1,
        additionalProperties: false,
        properties: {
          computerUse: {
            type: 'object',
            required: ['environment'],
            additionalProperties: false,
            properties: { environment: { const: 'ENVIRONMENT_BROWSER' }, excludedPredefinedFunctions: { type: 'array', items: { type: 'string' } } },
          },
          functionDeclarations: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, description: { type: 'string' }, parameters: { type: 'object' } } } },
        },
      },
    },
    toolConfig: { type: 'object', properties: { functionCallingConfig: { type: 'object', properties: { mode: { enum: ['AUTO', 'ANY', 'NONE', 'VALIDATED'] } } } } },
    // Thinking: a level (Gemini 3), never a token budget (checked per model below).
    generationConfig: {
      type: 'object',
      additionalProperties: false,
      properties: { thinkingConfig: { type: 'object', additionalProperties: false, required: ['thinkingLevel'], properties: { thinkingLevel: { enum: ['MINIMAL', 'LOW', 'MEDIUM', 'HIGH'] } } } },
    },
  },
};

const validators: Record<Vendor, ValidateFunction> = {
  anthropic: ajv.compile(anthropicSchema),
  openai: ajv.compile(openaiSchema),
  gemini: ajv.compile(geminiSchema),
};

export type Vendor = 'anthropic' | 'openai' | 'gemini';

/** What a stand-in remembers of the replies it gave, for the rules that span two requests. */
export interface VendorMemory {
  /** OpenAI: pending safety check ids of each computer call served. */
  openaiChecks: Map<string, Set<string>>;
  /** Gemini: names of function calls served with `safety_decision: require_confirmation`. */
  geminiConfirm: Set<string>;
}

export function newMemory(): VendorMemory {
  return { openaiChecks: new Map(), geminiConfirm: new Set() };
}

/** Notes what a reply the stand-in is about to send raises (safety checks), for later requests. */
export function rememberReply(vendor: Vendor, body: any, memory: VendorMemory): void {
  if (vendor === 'openai' && Array.isArray(body?.output)) {
    for (const item of body.output) {
      if (item?.type === 'computer_call') memory.openaiChecks.set(item.call_id, new Set((item.pending_safety_checks ?? []).map((c: any) => c.id)));
    }
  }
  if (vendor === 'gemini') {
    for (const part of body?.candidates?.[0]?.content?.parts ?? []) {
      if (part?.functionCall?.args?.safety_decision?.decision === 'require_confirmation') memory.geminiConfirm.add(part.functionCall.name);
    }
  }
}

const ANTHROPIC_BETAS: Record<string, string> = { computer_20250124: 'computer-use-2025-01-24', computer_20251124: 'computer-use-2025-11-24' };

/** Why the vendor would refuse this request; empty when it would take it. */
export function vendorViolations(vendor: Vendor, path: string, headers: IncomingHttpHeaders, body: any, memory: VendorMemory): string[] {
  const problems: string[] = [];
  const validate = validators[vendor];
  if (!validate(body)) for (const e of validate.errors ?? []) problems.push(`${e.instancePath || '(body)'} ${e.message}`);

  if (vendor === 'anthropic') {
    if (path !== '/v1/messages') problems.push(`unknown path ${path}`);
    // The SDK (1.x) authenticates with a bearer key and sends API version 2026-10-21.
    if (!headers['x-api-key'] && !String(headers.authorization ?? '').startsWith('Bearer ')) problems.push('no API key (x-api-key or Authorization: Bearer)');
    if (!['2023-06-01', '2026-10-21'].includes(String(headers['anthropic-version']))) problems.push(`unknown anthropic-version ${String(headers['anthropic-version'])}`);
    const computer = (body?.tools ?? []).find((t: any) => t?.name === 'computer');
    const betas = String(headers['anthropic-beta'] ?? '').split(',').map((b) => b.trim());
    if (computer && !betas.includes(ANTHROPIC_BETAS[computer.type])) problems.push(`tool ${computer.type} needs the beta ${ANTHROPIC_BETAS[computer.type]}`);
    if (body?.thinking?.type === 'enabled' && body.thinking.budget_tokens >= body.max_tokens) problems.push('thinking.budget_tokens must be less than max_tokens');
    const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
    messages.forEach((m, i) => {
      const blocks: any[] = Array.isArray(m?.content) ? m.content : [];
      for (const block of blocks) {
        if (block?.type === 'tool_result' && block.is_error === true && Array.isArray(block.content) && block.content.some((c: any) => c?.type !== 'text')) {
          problems.push(`messages.${i}: a tool_result with is_error true may contain only text blocks`);
        }
      }
      const previous = messages[i - 1];
      const uses = Array.isArray(previous?.content) ? previous.content.filter((b: any) => b?.type === 'tool_use').map((b: any) => b.id) : [];
      if (m?.role === 'user' && uses.length > 0) {
        const results = blocks.filter((b) => b?.type === 'tool_result').map((b) => b.tool_use_id);
        const firstOther = blocks.findIndex((b) => b?.type !== 'tool_result');
        if (uses.some((id: string) => !results.includes(id))) problems.push(`messages.${i}: every tool_use of messages.${i - 1} needs a tool_result`);
        if (firstOther !== -1 && blocks.slice(firstOther).some((b) => b?.type === 'tool_result')) problems.push(`messages.${i}: tool_result blocks must come first`);
      }
    });
  }

  if (vendor === 'openai') {
    if (path !== '/v1/responses') problems.push(`unknown path ${path}`);
    if (!String(headers.authorization ?? '').startsWith('Bearer ')) problems.push('Authorization: Bearer is missing');
    for (const item of Array.isArray(body?.input) ? body.input : []) {
      if (item?.type !== 'computer_call_output' || !item.acknowledged_safety_checks) continue;
      const pending = memory.openaiChecks.get(item.call_id) ?? new Set<string>();
      for (const check of item.acknowledged_safety_checks) {
        if (!pending.has(check.id)) problems.push(`acknowledged safety check ${check.id} was not raised on ${item.call_id}`);
      }
    }
  }

  if (vendor === 'gemini') {
    if (!/^\/v1beta\/models\/[^/:]+:generateContent$/.test(path)) problems.push(`unknown path ${path}`);
    if (!headers['x-goog-api-key']) problems.push('x-goog-api-key is missing');
    if (path.includes('computer-use') && !(body?.tools ?? []).some((t: any) => t?.computerUse)) problems.push('This model requires the use of the Computer Use tool.');
    // The 2.5 computer-use preview documents no thinking settings; Gemini 3 takes a level.
    if (body?.generationConfig?.thinkingConfig && !/\/models\/gemini-3(\.\d+)?-/.test(path)) problems.push('thinkingConfig is not supported by this model');
    for (const content of Array.isArray(body?.contents) ? body.contents : []) {
      for (const part of content?.parts ?? []) {
        const response = part?.functionResponse;
        if (response?.response?.safety_acknowledgement !== undefined && !memory.geminiConfirm.has(response.name)) {
          problems.push(`safety_acknowledgement on ${response.name}, which asked for no confirmation`);
        }
      }
    }
  }
  return problems;
}

/** The 400 each vendor answers a request it refuses with. */
export function refusal(vendor: Vendor, problems: string[]): unknown {
  const message = problems.join('; ');
  if (vendor === 'anthropic') return { type: 'error', error: { type: 'invalid_request_error', message } };
  if (vendor === 'openai') return { error: { message, type: 'invalid_request_error', param: null, code: null } };
  return { error: { code: 400, message, status: 'INVALID_ARGUMENT' } };
}
