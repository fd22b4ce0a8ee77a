/**
 * The six model ids the service accepts (spec: Model) and their vendors; the registry that picks
 * a backend for each is `registry.ts`. This module loads no vendor backend, so that reading the
 * configuration does not load their clients.
 *
 * Vendors retire models every few months, so the ids are configuration, not code: the built-in
 * catalog below holds the current computer-use models, `DESKHAND_MODELS` replaces any slot's id,
 * and `DESKHAND_RETIRED_MODELS` lists ids that must no longer be called (optionally each with the
 * id that takes its place). docs/models.md ("Retiring a model") is the procedure.
 */

export type ModelVendor = 'anthropic' | 'openai' | 'gemini';

export const MODEL_SLOTS = ['A1', 'A2', 'A3', 'B1', 'B2', 'C1'] as const;
export type ModelSlot = (typeof MODEL_SLOTS)[number];

const SLOT_VENDORS: Readonly<Record<ModelSlot, ModelVendor>> = Object.freeze({
  A1: 'anthropic',
  A2: 'anthropic',
  A3: 'anthropic',
  B1: 'openai',
  B2: 'openai',
  C1: 'gemini',
});

export interface ModelCatalogEntry {
  id: string;
  vendor: ModelVendor;
  /** The spec's placeholder for this id. */
  slot: ModelSlot;
  name: string;
}

/** The built-in catalog: the vendors' current computer-use models (checked 2026-11). */
export const BUILT_IN_CATALOG: readonly ModelCatalogEntry[] = Object.freeze([
  { id: 'claude-sonnet-4-6', vendor: 'anthropic', slot: 'A1', name: 'Claude Sonnet 4.6' },
  { id: 'claude-opus-4-6', vendor: 'anthropic', slot: 'A2', name: 'Claude Opus 4.6' },
  { id: 'claude-haiku-4-5-20251001', vendor: 'anthropic', slot: 'A3', name: 'Claude Haiku 4.5' },
  { id: 'gpt-5.4-mini', vendor: 'openai', slot: 'B1', name: 'GPT-5.4 mini (computer tool)' },
  { id: 'gpt-5.4', vendor: 'openai', slot: 'B2', name: 'GPT-5.4 (computer tool)' },
  { id: 'gemini-3.6-flash', vendor: 'gemini', slot: 'C1', name: 'Gemini 3.6 Flash (computer use)' },
] as const satisfies readonly ModelCatalogEntry[]);

/**
 * Ids the vendors have retired (or announced) that agents may still hold: no task calls them. An
 * operator adds to this with `DESKHAND_RETIRED_MODELS` and may name a successor for each.
 */
export const BUILT_IN_RETIRED: readonly string[] = Object.freeze([
  'computer-use-preview',
  'computer-use-preview-2025-03-11',
  'claude-opus-4-1-20250805',
  'claude-sonnet-4-5-20250929',
  'gemini-2.5-computer-use-preview-10-2025',
]);

export interface ModelCatalog {
  /** The six entries, in the spec's order (A1…A3, B1, B2, C1). */
  entries: readonly ModelCatalogEntry[];
  /** Retired id → the catalog id that takes its place, or null (tasks on it answer 503). */
  retired: ReadonlyMap<string, string | null>;
}

/** A configuration mistake in `DESKHAND_MODELS` / `DESKHAND_RETIRED_MODELS`; the service does not start. */
export class ModelCatalogError extends Error {
  override readonly name = 'ModelCatalogError';
}

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$/;

function pairs(value: string | undefined, variable: string): Array<[string, string | null]> {
  if (!value || value.trim() === '') return [];
  return value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part): [string, string | null] => {
      const [left, right, extra] = part.split('=').map((p) => p.trim());
      if (extra !== undefined || !ID_PATTERN.test(left) || (right !== undefined && !ID_PATTERN.test(right))) {
        throw new ModelCatalogError(`${variable}: "${part}" is not of the form id or id=id`);
      }
      return [left, right ?? null];
    });
}

/**
 * The catalog from the environment: `DESKHAND_MODELS=B2=gpt-5.5,A2=claude-opus-4-8` replaces the
 * ids of those slots; `DESKHAND_RETIRED_MODELS=gpt-5.4,claude-opus-4-6=claude-opus-4-8` marks ids
 * retired, each optionally followed by its successor (which must be in the catalog). A retired
 * id cannot also be in the catalog. Throws `ModelCatalogError` naming the variable.
 */
export function loadModelCatalog(env: Record<string, string | undefined>): ModelCatalog {
  const ids = new Map<ModelSlot, string>(BUILT_IN_CATALOG.map((m) => [m.slot, m.id]));
  const renamed = new Set<ModelSlot>();
  for (const [slot, id] of pairs(env.DESKHAND_MODELS, 'DESKHAND_MODELS')) {
    if (!(MODEL_SLOTS as readonly string[]).includes(slot) || id === null) {
      throw new ModelCatalogError(`DESKHAND_MODELS: "${slot}${id ? `=${id}` : ''}" must be SLOT=id with SLOT one of ${MODEL_SLOTS.join(', ')}`);
    }
    ids.set(slot as ModelSlot, id);
    renamed.add(slot as ModelSlot);
  }
  const entries = MODEL_SLOTS.map((slot): ModelCatalogEntry => {
    const builtIn = BUILT_IN_CATALOG.find((m) => m.slot === slot)!;
    const id = ids.get(slot)!;
    return { id, vendor: SLOT_VENDORS[slot], slot, name: renamed.has(slot) && id !== builtIn.id ? id : builtIn.name };
  });
  const catalogIds = new Set(entries.map((e) => e.id));
  if (catalogIds.size !== entries.length) throw new ModelCatalogError('DESKHAND_MODELS: the six slots must hold six different ids');

  const retired = new Map<string, string | null>();
  for (const id of BUILT_IN_RETIRED) if (!catalogIds.has(id)) retired.set(id, null);
  for (const [id, successor] of pairs(env.DESKHAND_RETIRED_MODELS, 'DESKHAND_RETIRED_MODELS')) {
    if (catalogIds.has(id)) {
      throw new ModelCatalogError(`DESKHAND_RETIRED_MODELS: ${id} is still in the catalog; give its slot a new id in DESKHAND_MODELS first`);
    }
    if (successor !== null && !catalogIds.has(successor)) {
      throw new ModelCatalogError(`DESKHAND_RETIRED_MODELS: the successor of ${id}, ${successor}, is not one of the catalog's ids (${[...catalogIds].join(', ')})`);
    }
    retired.set(id, successor);
  }
  return Object.freeze({ entries: Object.freeze(entries), retired });
}

/**
 * The catalog this process runs with, read once from its environment (the request schemas'
 * model enum is built from it when they load). A mistake in the variables leaves the built-in
 * catalog here: `loadConfig`, which every process runs before it serves, refuses the same
 * variables with a message naming them.
 */
export const ACTIVE_CATALOG: ModelCatalog = catalogOrBuiltIn(process.env);

function catalogOrBuiltIn(env: Record<string, string | undefined>): ModelCatalog {
  try {
    return loadModelCatalog(env);
  } catch (error) {
    if (error instanceof ModelCatalogError) return loadModelCatalog({});
    throw error;
  }
}

/** The catalog's entries (kept under its historical name). */
export const MODEL_CATALOG: readonly ModelCatalogEntry[] = ACTIVE_CATALOG.entries;

/** The six accepted model ids, in the spec's order (A1…A3, B1, B2, C1). */
export const MODEL_IDS: readonly string[] = Object.freeze(MODEL_CATALOG.map((m) => m.id));

/** The model a null `model` selects: slot B2 of the catalog, the second model of the second vendor (`gpt-5.4` in the shipped catalog). */
export const DEFAULT_MODEL: string = MODEL_CATALOG.find((m) => m.slot === 'B2')!.id;

export function isModelId(value: unknown): value is string {
  return typeof value === 'string' && MODEL_IDS.includes(value);
}

/** The vendor of a model id; null for an id not in the catalog. */
export function vendorOf(modelId: string, catalog: ModelCatalog = ACTIVE_CATALOG): ModelVendor | null {
  return catalog.entries.find((m) => m.id === modelId)?.vendor ?? null;
}
