/**
 * What the vendors accept of the eval models' plain JSON questions (shared/evals/*-text-model.ts),
 * on top of what test/support/vendor-schemas.ts already checks for the agent's turns. Those
 * schemas are closed to the fields a turn sends; an eval question also sends OpenAI's
 * `temperature`, `max_output_tokens` and `text.format`, and Anthropic's `output_config.format`.
 * Here those fields are checked by the vendors' own rules, and the rest of the request by the
 * shared schemas:
 * - OpenAI takes a temperature on a GPT-5 reasoning model only with `reasoning.effort: none`;
 *   a `strict` JSON schema needs `additionalProperties: false` and every property required on
 *   every object.
 * - Anthropic's API version 2026-10-21 refuses `temperature`, `top_p` and `top_k` on every model;
 *   its structured outputs need `additionalProperties: false` on every object.
 */
import { newMemory, vendorViolations, type Vendor } from './vendor-schemas';
import type { Recorded } from './vendor-stub';

/** Problems of a JSON schema under the vendors' structured-output rules (`strict`: OpenAI's too). */
function schemaProblems(schema: any, path: string, strict: boolean): string[] {
  if (!schema || typeof schema !== 'object') return [`${path} is not a schema`];
  const problems: string[] = [];
  if (schema.type === 'object') {
    if (schema.additionalProperties !== false) problems.push(`${path}: additionalProperties must be false`);
    const keys = Object.keys(schema.properties ?? {});
    const required: string[] = Array.isArray(schema.required) ? schema.required : [];
    if (strict && keys.some((k) => !required.includes(k))) problems.push(`${path}: every property must be required`);
    for (const key of keys) problems.push(...schemaProblems(schema.properties[key], `${path}.${key}`, strict));
  }
  if (schema.type === 'array') problems.push(...schemaProblems(schema.items, `${path}[]`, strict));
  return problems;
}

/** Why the vendor would refuse this eval question; empty when it would take it. */
export function evalRequestViolations(vendor: Exclude<Vendor, 'gemini'>, request: Recorded): string[] {
  const body = request.body ?? {};
  if (vendor === 'openai') {
    const { temperature, max_output_tokens: maxOutput, text, ...rest } = body;
    const problems = vendorViolations('openai', request.path, request.headers, rest, newMemory());
    if (temperature !== undefined) {
      if (typeof temperature !== 'number' || temperature < 0 || temperature > 2) problems.push('temperature must be a number from 0 to 2');
      if (/^gpt-5/.test(String(body.model)) && body.reasoning?.effort !== 'none') problems.push('temperature is only supported with reasoning.effort none on this model');
    }
    if (maxOutput !== undefined && !(Number.isInteger(maxOutput) && maxOutput >= 16)) problems.push('max_output_tokens must be an integer of at least 16');
    if (text !== undefined) {
      const format = text?.format;
      if (format?.type !== 'json_schema') problems.push('text.format.type must be json_schema');
      if (!/^[a-zA-Z0-9_-]{1,64}$/.test(String(format?.name))) problems.push('text.format.name must match ^[a-zA-Z0-9_-]{1,64}$');
      problems.push(...schemaProblems(format?.schema, 'text.format.schema', format?.strict === true));
    }
    return problems;
  }
  const { output_config: outputConfig, ...rest } = body;
  const { format, ...otherConfig } = outputConfig ?? {};
  const problems = vendorViolations('anthropic', request.path, request.headers, outputConfig ? { ...rest, output_config: otherConfig } : rest, newMemory());
  for (const field of ['temperature', 'top_p', 'top_k']) if (field in body) problems.push(`${field}: Extra inputs are not permitted`);
  if (format !== undefined) {
    if (format?.type !== 'json_schema') problems.push('output_config.format.type must be json_schema');
    problems.push(...schemaProblems(format?.schema, 'output_config.format.schema', false));
  }
  return problems;
}
