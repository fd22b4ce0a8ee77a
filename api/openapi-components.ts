/**
 * Named schemas for the OpenAPI document. A schema that carries a `title` (TypeBox option, set
 * where the resource is declared in api/schemas/) is a resource: it is hoisted into
 * `components.schemas` under that title and replaced by a `$ref` wherever it is used, so that a
 * generated client has one `Task` type instead of twelve inlined copies. `title` rather than
 * `$id` marks them because ajv compiles each route's schema on its own and refuses one `$id`
 * twice in a schema (a comparison holds two test runs).
 */

export type JsonSchema = Record<string, unknown>;

const COMPONENT_PREFIX = '#/components/schemas/';

/** Collects named schemas while rewriting route schemas to reference them. */
export class ComponentRegistry {
  readonly schemas: Record<string, JsonSchema> = {};
  private readonly serialized = new Map<string, string>();

  /** A route's schema for the document: `$id`s dropped, every titled schema inside it as a `$ref`. */
  reference(schema: unknown): JsonSchema {
    return this.rewrite(plain(schema), false) as JsonSchema;
  }

  /** Adds a titled schema as a component (also when no route uses it inline, like Error). */
  register(schema: unknown): string {
    const clean = plain(schema);
    const name = clean.title as string;
    const body = this.rewrite(clean, true) as JsonSchema;
    const text = JSON.stringify(body);
    const known = this.serialized.get(name);
    // Two different schemas under one name would make one of them lie: fail while building.
    if (known !== undefined && known !== text) throw new Error(`Two different schemas are titled ${name}; give one another title`);
    this.serialized.set(name, text);
    this.schemas[name] = body;
    return COMPONENT_PREFIX + name;
  }

  private rewrite(node: unknown, isComponentRoot: boolean): unknown {
    if (Array.isArray(node)) return node.map((item) => this.rewrite(item, false));
    if (typeof node !== 'object' || node === null) return node;
    const record = node as JsonSchema;
    if (!isComponentRoot && typeof record.title === 'string' && looksLikeSchema(record)) return { $ref: this.register(record) };
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(record)) {
      // Examples are data, not schemas: a title inside one is a value.
      out[key] = key === 'examples' || key === 'example' || key === 'default' || key === 'const' ? value : this.rewrite(value, false);
    }
    return out;
  }
}

/** Plain JSON (TypeBox's symbols gone) without `$id`, which would clash where a schema is reused inline. */
function plain(schema: unknown): JsonSchema {
  return JSON.parse(JSON.stringify(schema), (key, value) => (key === '$id' ? undefined : value)) as JsonSchema;
}

function looksLikeSchema(record: JsonSchema): boolean {
  return 'type' in record || 'properties' in record || 'allOf' in record || 'anyOf' in record || 'oneOf' in record || 'enum' in record;
}

/** The component a `$ref` names. */
export function componentOf(schemas: Record<string, JsonSchema>, ref: string): JsonSchema | undefined {
  return ref.startsWith(COMPONENT_PREFIX) ? schemas[ref.slice(COMPONENT_PREFIX.length)] : undefined;
}
