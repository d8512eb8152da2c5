import type { AccessGrant } from '../../core/access/grants.js';
import { type ProviderModels, isFilterPipeline } from '../../core/upstream/catalog.js';
import type { ModelRecord } from './store.js';

/**
 * The one model list (`GET /api/models`): every connection's models, the arena
 * models, and the workspace models laid over them (utils/models.get_all_models
 * and main.get_models), built once per change and kept with each model already
 * serialised, so that answering a request is filtering and joining strings.
 */
type Json = Record<string, unknown>;

export interface ListedModel {
  id: string;
  /** The model exactly as `/api/models` returns it. */
  model: Json;
  json: string;
  /** Backed by an active workspace model: visible through its owner and grants. */
  registered: boolean;
  /** The workspace model's id, under which its grants are stored (may differ from `id` for an Ollama model's bare name). */
  resourceId: string | null;
  ownerId: string | null;
  /** Arena models carry their grants in `meta.access_grants` (null for other models). */
  arenaGrants: unknown[] | null;
}

export interface CatalogInputs {
  providers: ProviderModels;
  /** Pipe functions' models (listed first, as the reference's get_all_base_models). */
  pipes?: Json[];
  /** A model's action buttons and filter toggles (functions); none without it. */
  functionItems?: FunctionItems;
  rows: ModelRecord[];
  grants: Map<string, AccessGrant[]>;
  arena: { enabled: boolean; models: unknown[] };
  defaultMetadata: Json | null;
  orderList: string[] | null;
}

/** The `actions` and `filters` entries of a listed model. */
export type FunctionItems = (model: Json) => { actions: Json[]; filters: Json[] };

export const DEFAULT_ARENA_MODEL = {
  id: 'arena-model',
  name: 'Arena Model',
  meta: {
    profile_image_url: '/favicon.png',
    description: 'Submit your questions to anonymous AI chatbots and vote on the best response.',
    model_ids: null,
  },
};

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const clone = <T>(value: T): T => structuredClone(value);

/** The provider models in the reference's order: OpenAI-style connections, then Ollama. */
export function baseModels(providers: ProviderModels): Json[] {
  const models: Json[] = [...providers.openai.values()].map((m) => ({ ...m }));
  for (const m of providers.ollama.values()) {
    models.push({
      id: m.model,
      name: m.name,
      object: 'model',
      created: 0,
      owned_by: 'ollama',
      ollama: m,
      loaded: 'expires_at' in m,
      connection_type: m.connection_type ?? 'local',
      tags: Array.isArray(m.tags) ? m.tags : [],
    });
  }
  return models;
}

function arenaModels(arena: CatalogInputs['arena']): Json[] {
  if (!arena.enabled) return [];
  const configured = arena.models.filter(isObject);
  const list = configured.length > 0 ? configured : [DEFAULT_ARENA_MODEL];
  return list.map((m) => ({ id: m.id, name: m.name, info: { meta: clone(m.meta ?? {}) }, object: 'model', created: 0, owned_by: 'arena', arena: true }));
}

/** The workspace model as `info` (ModelModel without `params`, which may hold private prompts). */
function infoOf(row: ModelRecord, grants: AccessGrant[]): Json {
  const { params: _params, ...rest } = row;
  return clone({ ...rest, access_grants: grants });
}

function tagName(tag: unknown): string | null {
  if (typeof tag === 'string') return tag;
  if (isObject(tag) && typeof tag.name === 'string') return tag.name;
  return null;
}

/** `tags` as the selector reads them: objects, the workspace model's first, no repeats. */
function normalizeTags(model: Json): void {
  const meta = isObject(model.info) && isObject(model.info.meta) ? model.info.meta : {};
  const names = [...(Array.isArray(meta.tags) ? meta.tags : []), ...(Array.isArray(model.tags) ? model.tags : [])].map(tagName).filter((n): n is string => n !== null);
  model.tags = [...new Set(names)].map((name) => ({ name }));
}

function applyDefaultMetadata(model: Json, defaults: Json): void {
  if (!isObject(model.info)) {
    model.info = { meta: clone(defaults) };
    return;
  }
  const info = model.info;
  const meta: Json = isObject(info.meta) ? info.meta : (info.meta = {});
  for (const [key, value] of Object.entries(defaults)) {
    if (key === 'capabilities') meta.capabilities = { ...(isObject(value) ? value : {}), ...(isObject(meta.capabilities) ? meta.capabilities : {}) };
    else if (meta[key] === undefined || meta[key] === null) meta[key] = clone(value);
  }
}

export function buildCatalog(inputs: CatalogInputs): ListedModel[] {
  const models = [...(inputs.pipes ?? []).map((m) => ({ ...m })), ...baseModels(inputs.providers).filter((m) => !isFilterPipeline(m))];
  if (models.length === 0) return [];
  models.push(...arenaModels(inputs.arena));

  // Ollama models are also found by their name without the tag (`llama3` for `llama3:latest`); exact ids win.
  const lookup = new Map<string, Json>();
  for (const model of models) {
    if (model.owned_by === 'ollama') {
      const bare = String(model.id).split(':')[0];
      if (!lookup.has(bare)) lookup.set(bare, model);
    }
  }
  for (const model of models) lookup.set(String(model.id), model);
  const existing = new Set(models.map((m) => String(m.id)));
  const registered = new Map<string, ModelRecord>();
  const removed = new Set<Json>();

  for (const row of inputs.rows) {
    const grants = inputs.grants.get(row.id) ?? [];
    if (row.base_model_id === null) {
      const model = lookup.get(row.id);
      if (!model) continue;
      if (!row.is_active) {
        removed.add(model);
        continue;
      }
      model.name = row.name;
      model.info = infoOf(row, grants);
      registered.set(String(model.id), row);
    } else if (row.is_active && !existing.has(row.id)) {
      const base = lookup.get(row.base_model_id) ?? lookup.get(row.base_model_id.split(':')[0]);
      const model: Json = {
        id: row.id,
        name: row.name,
        object: 'model',
        created: row.created_at,
        owned_by: base?.owned_by ?? 'openai',
        connection_type: base?.connection_type ?? null,
        preset: true,
      };
      if (base?.pipe !== undefined) model.pipe = base.pipe;
      if (base?.provider) model.provider = base.provider;
      if (base?.loaded !== undefined && base.loaded !== null) model.loaded = base.loaded;
      model.info = infoOf(row, grants);
      models.push(model);
      registered.set(row.id, row);
    }
  }

  // Later models with the same id win, as chat requests resolve them.
  const byId = new Map<string, Json>();
  for (const model of models) if (!removed.has(model)) byId.set(String(model.id), model);
  let list = [...byId.values()];

  for (const model of list) {
    if (inputs.defaultMetadata && Object.keys(inputs.defaultMetadata).length > 0) applyDefaultMetadata(model, inputs.defaultMetadata);
    // Action buttons and filter toggles: global functions and the workspace model's actionIds/filterIds.
    const items = inputs.functionItems?.(model) ?? { actions: [], filters: [] };
    model.actions = items.actions;
    model.filters = items.filters;
    if (isObject(model.info) && isObject(model.info.meta) && model.info.meta.profile_image_url) delete model.info.meta.profile_image_url;
    normalizeTags(model);
  }

  if (inputs.orderList && inputs.orderList.length > 0) {
    const rank = new Map(inputs.orderList.map((id, index) => [id, index]));
    list = list
      .map((model) => ({ model, rank: rank.get(String(model.id)) ?? Number.POSITIVE_INFINITY, name: String(model.name ?? '') }))
      .sort((a, b) => a.rank - b.rank || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((x) => x.model);
  }

  return list.map((model) => {
    const row = registered.get(String(model.id));
    const meta = isObject(model.info) && isObject(model.info.meta) ? model.info.meta : {};
    return {
      id: String(model.id),
      model,
      json: JSON.stringify(model),
      registered: row !== undefined,
      resourceId: row?.id ?? null,
      ownerId: row?.user_id ?? null,
      arenaGrants: model.arena === true ? (Array.isArray(meta.access_grants) ? meta.access_grants : []) : null,
    };
  });
}
