import { componentOf, type JsonSchema } from './openapi-components';

/**
 * The `example` of a request or response body, composed from the examples written beside the
 * schemas (api/schemas/*: each resource carries `examples`): a route's body is mostly a resource,
 * a list of one, or a resource with a field or two more, so writing each resource's example once
 * gives every operation a realistic one. test/integration/openapi-examples.test.ts checks every
 * example against its schema, so they cannot drift.
 */

const EXAMPLE_TIME = '2026-03-02T09:14:05.000Z';

/** An example value of `schema` (refs resolved through `components`), or undefined when none can be said. */
export function exampleOf(schema: unknown, components: Record<string, JsonSchema>, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 12) return undefined;
  const s = schema as JsonSchema;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if ('const' in s) return s.const;
  if (s.default !== undefined) return s.default;
  if (typeof s.$ref === 'string') return exampleOf(componentOf(components, s.$ref), components, depth + 1);
  if (Array.isArray(s.enum)) return s.enum[0];
  if (Array.isArray(s.allOf)) {
    const parts = s.allOf.map((part) => exampleOf(part, components, depth + 1));
    return Object.assign({}, ...parts.filter((part) => typeof part === 'object' && part !== null));
  }
  const choices = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(choices)) {
    // The first variant that is not null: an example shows the field filled in.
    const filled = choices.find((choice) => (choice as JsonSchema).type !== 'null') ?? choices[0];
    return exampleOf(filled, components, depth + 1);
  }
  switch (s.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) {
        const value = exampleOf(property, components, depth + 1);
        if (value !== undefined) out[name] = value;
      }
      return out;
    }
    case 'array': {
      const item = exampleOf(s.items, components, depth + 1);
      return item === undefined ? [] : [item];
    }
    case 'string':
      return s.format === 'date-time' ? EXAMPLE_TIME : s.format === 'uri' ? 'https://example.com/' : 'text';
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' && s.minimum > 1 ? s.minimum : 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return undefined;
  }
}
