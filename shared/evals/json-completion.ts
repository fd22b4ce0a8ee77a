/**
 * One plain question to a vendor model whose answer must be a JSON object of a given schema:
 * what the vendor customer and judge share. The schema is a TypeBox schema, so one declaration
 * gives the vendor's structured-output format, the ajv check of the reply and the TypeScript
 * type. A reply that is not valid JSON of the schema (or that the caller's own check refuses)
 * is asked for once more, told what was wrong; a second bad reply is a `ModelError`
 * `invalid_response`. The vendors' wire formats are in openai-text-model.ts and
 * anthropic-text-model.ts.
 */
import type { Static, TObject } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { ModelError, type ModelBackendId } from '../models/model.types';

export interface JsonQuestion<S extends TObject = TObject> {
  /** Instructions: who the model is and what to answer. */
  system: string;
  /** The material, as text. */
  user: string;
  /** The reply's JSON Schema, sent as the vendor's structured-output format and checked again here. */
  schema: S;
  /** The format's name where the vendor wants one (`^[a-zA-Z0-9_-]+$`). */
  name: string;
  maxTokens: number;
}

/** A vendor model that answers one question with text (no tools, no history). */
export interface TextModel {
  readonly vendor: ModelBackendId;
  /** The vendor's model id; recorded as who answered or judged. */
  readonly model: string;
  /** The answer's text; null when the answer held none. */
  complete(question: JsonQuestion, signal?: AbortSignal): Promise<string | null>;
}

/** The schema as plain JSON Schema (TypeBox marks its objects with symbol keys, which JSON drops). */
export function plainSchema(schema: TObject): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

const ajv = new Ajv({ allErrors: true, strict: false });

type Reading<T> = { value: T } | { problem: string };

/** The reply's first JSON object checked against the schema and `extra`, or what was wrong with it. */
function read<S extends TObject>(text: string | null, schema: S, extra: (value: Static<S>) => string | null): Reading<Static<S>> {
  if (text === null || text.trim() === '') return { problem: 'The answer held no text.' };
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  let parsed: unknown;
  try {
    parsed = JSON.parse(start >= 0 && end > start ? text.slice(start, end + 1) : text);
  } catch {
    return { problem: 'The answer was not a JSON object.' };
  }
  const validate = ajv.compile(schema);
  if (!validate(parsed)) return { problem: `The JSON did not follow the schema (${ajv.errorsText(validate.errors)}).` };
  const more = extra(parsed as Static<S>);
  return more === null ? { value: parsed as Static<S> } : { problem: more };
}

/**
 * Asks the question; a reply that cannot be used is asked for once more with the problem named;
 * a second one throws `invalid_response` (not retryable: the same question got two bad answers).
 */
export async function askForJson<S extends TObject>(
  model: TextModel,
  question: JsonQuestion<S>,
  extra: (value: Static<S>) => string | null = () => null,
  signal?: AbortSignal,
): Promise<Static<S>> {
  const first = read(await model.complete(question, signal), question.schema, extra);
  if ('value' in first) return first.value;
  const again: JsonQuestion<S> = {
    ...question,
    user: `${question.user}\n\nYour previous answer could not be used: ${first.problem} Answer with the JSON object only, following the schema.`,
  };
  const second = read(await model.complete(again, signal), question.schema, extra);
  if ('value' in second) return second.value;
  throw new ModelError(`${model.model} answered twice with JSON that could not be used: ${second.problem}`, {
    code: 'invalid_response',
    retryable: false,
    backend: model.vendor,
  });
}
