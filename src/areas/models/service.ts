import type { AccessGrant, GrantSpec } from '../../core/access/grants.js';
import type { AccessService, SharingRule } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import type { Db } from '../../core/db/database.js';
import { ERROR, HttpError, badRequest, notFound, unauthorized } from '../../core/http/errors.js';
import { workspaceSearch } from '../../core/db/workspace-search.js';
import type { WorkspaceListQuery } from '../../core/http/schema.js';
import type { ProviderModels } from '../../core/upstream/catalog.js';
import type { CallContext } from '../../core/upstream/headers.js';
import type { UpstreamService } from '../../core/upstream/service.js';
import type { UsersService } from '../users/service.js';
import { profileImagePolicy, type ProfileImagePolicy } from '../users/settings.js';
import { baseModels, buildCatalog, type FunctionItems, type ListedModel } from './catalog.js';
import { applyParamsOllama, applyParamsOpenAI, applySystemPrompt } from './params.js';
import { type ModelImage, resolveModelImage } from './profile-image.js';
import type { ModelAccessGrantsForm, ModelForm, SyncModelsForm } from './schemas.js';
import { ARENA_ENABLE, ARENA_MODELS, DEFAULT_METADATA_KEY, MODEL_ORDER_LIST_KEY } from './settings.js';
import { type ModelRecord, ModelStore } from './store.js';

type Json = Record<string, unknown>;

/** A workspace model as routes return it (ModelModel). */
export interface ModelView extends ModelRecord {
  access_grants: AccessGrant[];
}

export interface ModelOwner {
  id: string;
  name: string;
  role: string;
  email: string;
}

export const MODEL_ERROR = {
  ID_TAKEN: 'Uh-oh! This model id is already registered. Please choose another model id string.',
  ID_TOO_LONG: 'The model id is too long. Please make sure your model id is less than 256 characters long.',
  /** What a user who may not use a model is told (utils/access_control.check_model_access). */
  DENIED: 'Model not found',
} as const;

const SHARING: SharingRule = { publicPermission: 'sharing.public_models' };
const RESOURCE = 'model';

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const validId = (id: unknown): id is string => typeof id === 'string' && id.length > 0 && id.length <= 256;

/** Knowledge items keep their reference, not the extracted text (strip_extracted_content_from_model_knowledge). */
function stripKnowledgeContent(knowledge: unknown): unknown {
  if (!Array.isArray(knowledge)) return knowledge;
  return knowledge.map((item) => {
    if (!isObject(item)) return item;
    const copy: Json = { ...item };
    if (isObject(copy.data) && 'content' in copy.data) {
      const { content: _content, ...data } = copy.data;
      copy.data = data;
    }
    if (isObject(copy.file) && isObject(copy.file.data) && 'content' in copy.file.data) {
      const { content: _content, ...data } = copy.file.data;
      copy.file = { ...copy.file, data };
    }
    return copy;
  });
}

/** What functions add to the model list (functions area): pipe models, and models' action buttons and filter toggles. */
export interface PipeModelSource {
  /** Changes whenever the list may have changed. */
  version(): number;
  models(): Promise<Json[]>;
  items(): Promise<FunctionItems>;
}

interface Snapshot {
  entries: ListedModel[];
  /** `{"data":[...]}` of every entry, for callers who see everything. */
  body: string;
  providerVersion: number;
  pipeVersion: number;
  localVersion: number;
  settings: unknown[];
}

/**
 * Workspace models (`/api/v1/models`), the merged model list (`/api/models`), and
 * the access rule every proxy applies before calling a provider (see docs/models.md).
 */
export class ModelsService {
  private readonly imagePolicy: ProfileImagePolicy;
  /** Bumped by every write, so the merged list is rebuilt. */
  private localVersion = 0;
  private snapshot: Snapshot | null = null;
  private building: { key: string; promise: Promise<Snapshot> } | null = null;
  private pipes: PipeModelSource | null = null;

  constructor(
    private readonly core: Core,
    private readonly upstream: UpstreamService,
    private readonly access: AccessService,
    private readonly users: UsersService,
  ) {
    this.imagePolicy = profileImagePolicy(core.env.raw);
    // Another instance changed workspace models or connections: its settings are read first, so
    // the provider lists fetched again use the new connections.
    core.changes.onRemote('models', () => {
      void core.settings
        .reload()
        .catch(() => undefined)
        .then(() => {
          upstream.catalog.invalidate();
          this.localVersion++;
        });
    });
    access.registerPreviewCatalog('models', { resourceType: RESOURCE, list: (db) => new ModelStore(db).activeNames() });
  }

  private store(db: Db = this.core.db): ModelStore {
    return new ModelStore(db);
  }

  /** Where pipe models come from (set once by the composition root). */
  setPipeSource(source: PipeModelSource): void {
    this.pipes = source;
  }

  /** Forget the merged list (after a committed write here, or a change of connections), here and on every instance. */
  changed(): void {
    this.localVersion++;
    this.core.changes.announce('models');
  }

  byId(id: string, db?: Db): Promise<ModelRecord | null> {
    return this.store(db).byId(id);
  }

  // ---- shaping -----------------------------------------------------------

  private async view(model: ModelRecord, db?: Db): Promise<ModelView> {
    return { ...model, access_grants: await this.access.grantsOf(RESOURCE, model.id, db) };
  }

  private async views(models: ModelRecord[], db?: Db): Promise<ModelView[]> {
    const grants = await this.access.grantsOfMany(
      RESOURCE,
      models.map((m) => m.id),
      db,
    );
    return models.map((m) => ({ ...m, access_grants: grants.get(m.id) ?? [] }));
  }

  private async owners(models: ModelRecord[]): Promise<Map<string, ModelOwner>> {
    const users = await this.users.byIds([...new Set(models.map((m) => m.user_id))]);
    return new Map(users.map((u) => [u.id, { id: u.id, name: u.name, role: u.role, email: u.email }]));
  }

  /** ModelMeta as stored: tags as `{name}` objects, an unusable image dropped, knowledge without extracted text. */
  private normalizeMeta(meta: Json): Json {
    const out: Json = { ...meta };
    if (Array.isArray(out.tags)) {
      out.tags = out.tags.flatMap((tag) => (typeof tag === 'string' ? [{ name: tag }] : isObject(tag) && 'name' in tag ? [tag] : []));
    }
    if (typeof out.profile_image_url === 'string' && this.users.profileImageUrlProblem(out.profile_image_url)) out.profile_image_url = null;
    if ('knowledge' in out) out.knowledge = stripKnowledgeContent(out.knowledge);
    return out;
  }

  /**
   * Workspace models that attach file `fileId` directly (`meta.knowledge`
   * entries `{type: 'file', id}`) and that the user may read or write: how a
   * shared model makes its files reachable (utils/access_control/files.py).
   */
  async attachingFile(user: UserRecord, fileId: string, permission: 'read' | 'write'): Promise<ModelRecord[]> {
    const attaching = (await this.store().metaMentioning(fileId)).filter((model) => {
      const knowledge = model.meta.knowledge;
      return Array.isArray(knowledge) && knowledge.some((item) => isObject(item) && item.type === 'file' && item.id === fileId);
    });
    const allowed = await Promise.all(attaching.map((model) => this.access.hasAccess(user, RESOURCE, model.id, permission, model.user_id)));
    return attaching.filter((_, index) => allowed[index]);
  }

  /** Takes a deleted knowledge base out of every workspace model's `meta.knowledge`, as the reference's knowledge delete does. */
  async forgetKnowledge(knowledgeId: string): Promise<void> {
    const now = this.core.clock.now();
    let changed = false;
    for (const model of await this.store().metaMentioning(knowledgeId)) {
      const knowledge = model.meta.knowledge;
      if (!Array.isArray(knowledge)) continue;
      const kept = knowledge.filter((item) => !(isObject(item) && item.id === knowledgeId));
      if (kept.length === knowledge.length) continue;
      await this.store().update(model.id, { meta: { ...model.meta, knowledge: kept } }, now);
      changed = true;
    }
    if (changed) this.changed();
  }

  private async canWrite(user: UserRecord, model: ModelRecord, db?: Db): Promise<boolean> {
    return isAdmin(user) || (await this.access.hasAccess(user, RESOURCE, model.id, 'write', model.user_id, { db }));
  }

  private async require(id: string, db?: Db): Promise<ModelRecord> {
    const model = await this.store(db).byId(id);
    if (!model) throw notFound();
    return model;
  }

  private async grantsFrom(user: UserRecord, grants: unknown, db?: Db): Promise<GrantSpec[]> {
    const list = Array.isArray(grants) ? grants.filter((g) => g !== null) : grants;
    return this.access.prepareGrants(user, list, SHARING, db);
  }

  // ---- workspace routes -------------------------------------------------------

  /** `GET /api/v1/models/list`: presets the user may read, 30 per page, params hidden from read-only callers. */
  async list(user: UserRecord, query: WorkspaceListQuery) {
    const subject = await this.access.subjectOf(user);
    const result = await this.store().search(workspaceSearch(query, this.access.accessFilter(subject, RESOURCE, 'read', { id: 'model.id', owner: 'model.user_id' }), user.id));
    const views = await this.views(result.items);
    const owners = await this.owners(result.items);
    const writable = await this.access.accessibleIds({ ...subject, bypass: false }, RESOURCE, 'write', views.map((v) => v.id));
    const items = views.map((model) => {
      const write = subject.bypass || model.user_id === user.id || writable.has(model.id);
      const { profile_image_url: _image, ...meta } = model.meta;
      return { ...model, meta, params: write ? model.params : {}, user: owners.get(model.user_id) ?? null, write_access: write };
    });
    return { items, total: result.total };
  }

  /** `GET /base`: the workspace overrides of provider models. */
  async baseModels(tag?: string): Promise<ModelView[]> {
    let models = await this.store().all(false);
    if (tag) models = models.filter((m) => Array.isArray(m.meta.tags) && m.meta.tags.some((t) => (isObject(t) ? t.name : String(t)) === tag));
    return this.views(models);
  }

  private static tagNames(metas: Json[]): string[] {
    const names = new Set<string>();
    for (const meta of metas) {
      for (const tag of Array.isArray(meta.tags) ? meta.tags : []) {
        const name = isObject(tag) ? tag.name : tag;
        if (typeof name === 'string' && name) names.add(name);
        else if (!isObject(tag) && name !== null && name !== undefined) names.add(String(name));
      }
    }
    return [...names].sort();
  }

  /** `GET /base/tags` (admin). */
  async baseTags(): Promise<string[]> {
    return ModelsService.tagNames(await this.store().metas(true, null));
  }

  /** `GET /tags`: tags of the presets the user may read. */
  async tags(user: UserRecord): Promise<string[]> {
    const subject = await this.access.subjectOf(user);
    const filter = subject.bypass ? null : this.access.accessFilter(subject, RESOURCE, 'read', { id: 'model.id', owner: 'model.user_id' });
    return ModelsService.tagNames(await this.store().metas(false, filter));
  }

  async create(user: UserRecord, form: ModelForm): Promise<ModelView> {
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'workspace.models'))) throw unauthorized(ERROR.UNAUTHORIZED);
    if (await this.store().byId(form.id)) throw unauthorized(MODEL_ERROR.ID_TAKEN);
    if (!validId(form.id)) throw badRequest(MODEL_ERROR.ID_TOO_LONG);
    const grants = await this.grantsFrom(user, form.access_grants ?? null);
    const now = this.core.clock.now();
    const model: ModelRecord = {
      id: form.id,
      user_id: user.id,
      base_model_id: form.base_model_id ?? null,
      name: form.name,
      params: form.params,
      meta: this.normalizeMeta(form.meta),
      is_active: form.is_active ?? true,
      created_at: now,
      updated_at: now,
    };
    const view = await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).insert(model);
      const access_grants = await this.access.replaceGrants(RESOURCE, model.id, grants, trx);
      await this.core.events.publish({ event: 'model.created', actor: user, subjectId: model.id, data: { name: model.name } }, trx);
      return { ...model, access_grants };
    });
    this.changed();
    return view;
  }

  /** `GET /export`: every preset for admins, otherwise the ones the user may change. */
  async export(user: UserRecord): Promise<ModelView[]> {
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'workspace.models_export'))) throw unauthorized(ERROR.UNAUTHORIZED);
    const subject = await this.access.subjectOf(user);
    const presets = subject.bypass
      ? await this.store().all(true)
      : await this.store().presetsWhere(this.access.accessFilter(subject, RESOURCE, 'write', { id: 'model.id', owner: 'model.user_id' }));
    return this.views(presets);
  }

  /**
   * `POST /import`: each model with an id is created, or, when it exists and the
   * user may change it, updated (meta merged, params replaced, grants only when
   * given). Everything is checked before anything is written.
   */
  async import(user: UserRecord, models: Json[]): Promise<boolean> {
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'workspace.models_import'))) throw unauthorized(ERROR.UNAUTHORIZED);
    const candidates = models.filter((m) => validId(m.id));
    const existing = new Map((await this.store().byIds(candidates.map((m) => m.id as string))).map((m) => [m.id, m]));
    const subject = await this.access.subjectOf(user);
    const writable = isAdmin(user) ? null : await this.access.accessibleIds({ ...subject, bypass: false }, RESOURCE, 'write', [...existing.keys()]);

    type Plan = { model: ModelRecord; grants: GrantSpec[] | null; isNew: boolean };
    const plans: Plan[] = [];
    const now = this.core.clock.now();
    for (const [index, data] of candidates.entries()) {
      const id = data.id as string;
      const current = existing.get(id);
      if (current && writable && current.user_id !== user.id && !writable.has(id)) {
        this.core.log.warn({ user: user.id, model: id }, 'Model import skipped a model the user may not change');
        continue;
      }
      const merged: Json = current ? { ...current, ...data, meta: { ...current.meta, ...(isObject(data.meta) ? data.meta : {}) } } : { ...data };
      const name = merged.name;
      if (typeof name !== 'string') throw badRequest(`models[${index}]: name must be a string`);
      const meta = merged.meta ?? {};
      const params = data.params ?? {};
      if (!isObject(meta) || !isObject(params)) throw badRequest(`models[${index}]: meta and params must be objects`);
      const baseModelId = merged.base_model_id ?? null;
      if (baseModelId !== null && typeof baseModelId !== 'string') throw badRequest(`models[${index}]: base_model_id must be a string or null`);
      const grants = !current || 'access_grants' in data ? await this.grantsFrom(user, data.access_grants ?? null) : null;
      plans.push({
        isNew: !current,
        grants,
        model: {
          id,
          user_id: current?.user_id ?? user.id,
          base_model_id: baseModelId,
          name,
          params,
          meta: this.normalizeMeta(meta),
          is_active: typeof merged.is_active === 'boolean' ? merged.is_active : true,
          created_at: current?.created_at ?? now,
          updated_at: now,
        },
      });
    }
    await this.core.db.transaction().execute(async (trx) => {
      for (const plan of plans) {
        const store = this.store(trx);
        if (plan.isNew) await store.insert(plan.model);
        else {
          const { id, user_id: _owner, created_at: _created, updated_at: _updated, ...fields } = plan.model;
          await store.update(id, fields, now);
        }
        if (plan.grants) await this.access.replaceGrants(RESOURCE, plan.model.id, plan.grants, trx);
      }
      const ids = candidates.map((m) => m.id as string);
      await this.core.events.publish({ event: 'model.imported', actor: user, subjectType: 'model', data: { count: ids.length, model_ids: ids } }, trx);
    });
    this.changed();
    return true;
  }

  /** `POST /sync` (admin): the model table becomes exactly the given models, owned by the admin. */
  async sync(user: UserRecord, form: SyncModelsForm): Promise<ModelView[]> {
    const models = form.models ?? [];
    const grants = new Map<string, GrantSpec[]>();
    for (const model of models) grants.set(model.id, await this.grantsFrom(user, model.access_grants ?? []));
    const now = this.core.clock.now();
    const result = await this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      const existing = new Set(await store.ids());
      const wanted = new Set(models.map((m) => m.id));
      for (const model of models) {
        const record: ModelRecord = {
          id: model.id,
          user_id: user.id,
          base_model_id: model.base_model_id ?? null,
          name: model.name,
          params: model.params,
          meta: this.normalizeMeta(model.meta),
          is_active: model.is_active,
          created_at: model.created_at ?? now,
          updated_at: now,
        };
        if (existing.has(model.id)) {
          const { id, updated_at: _updated, ...fields } = record;
          await store.update(id, fields, now);
        } else await store.insert(record);
        await this.access.replaceGrants(RESOURCE, model.id, grants.get(model.id) ?? [], trx);
      }
      for (const id of existing) {
        if (wanted.has(id)) continue;
        await this.access.deleteGrantsOf(RESOURCE, id, trx);
        await store.delete(id);
      }
      const all = await this.views(await store.all(), trx);
      await this.core.events.publish(
        { event: 'model.synced', actor: user, subjectType: 'model', data: { count: all.length, model_ids: all.map((m) => m.id) } },
        trx,
      );
      return all;
    });
    this.changed();
    return result;
  }

  /** `GET /model?id=`: readable models; params hidden unless the user may change the model. */
  async get(user: UserRecord, id: string) {
    const model = await this.require(id);
    const write = await this.access.hasAccess(user, RESOURCE, model.id, 'write', model.user_id);
    if (!write && !(await this.access.hasAccess(user, RESOURCE, model.id, 'read', model.user_id))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    const view = await this.view(model);
    const owner = (await this.owners([model])).get(model.user_id) ?? null;
    return { ...view, params: write ? view.params : {}, user: owner, write_access: write };
  }

  async toggle(user: UserRecord, id: string): Promise<ModelView> {
    const model = await this.require(id);
    if (!(await this.canWrite(user, model))) throw unauthorized(ERROR.UNAUTHORIZED);
    const now = this.core.clock.now();
    const view = await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).update(id, { is_active: !model.is_active }, now);
      const updated = await this.view({ ...model, is_active: !model.is_active, updated_at: now }, trx);
      await this.core.events.publish(
        { event: updated.is_active ? 'model.enabled' : 'model.disabled', actor: user, subjectId: id, subjectType: 'model', data: { name: updated.name } },
        trx,
      );
      return updated;
    });
    this.changed();
    return view;
  }

  /**
   * `POST /model/update`. `access_grants`: a list replaces the grants (an empty
   * one removes them all); null or absent leaves them. An absent
   * `base_model_id` or `meta.profile_image_url` keeps the stored one.
   */
  async update(user: UserRecord, form: ModelForm & Json): Promise<ModelView> {
    const model = await this.require(form.id);
    if (!(await this.canWrite(user, model))) throw badRequest(ERROR.ACCESS_PROHIBITED);
    const meta: Json = { ...form.meta };
    if (!('profile_image_url' in form.meta)) meta.profile_image_url = model.meta.profile_image_url ?? null;
    const grants = form.access_grants === null || form.access_grants === undefined ? null : await this.grantsFrom(user, form.access_grants);
    const now = this.core.clock.now();
    const fields = {
      base_model_id: 'base_model_id' in form ? (form.base_model_id ?? null) : model.base_model_id,
      name: form.name,
      params: form.params,
      meta: this.normalizeMeta(meta),
      is_active: form.is_active ?? true,
    };
    const view = await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).update(model.id, fields, now);
      if (grants) await this.access.replaceGrants(RESOURCE, model.id, grants, trx);
      const updated = await this.view({ ...model, ...fields, updated_at: now }, trx);
      await this.core.events.publish({ event: 'model.updated', actor: user, subjectId: model.id, data: { name: updated.name } }, trx);
      return updated;
    });
    this.changed();
    return view;
  }

  /**
   * `POST /model/access/update`. Provider models have no workspace row until an
   * admin shares one: then a bare row is created to hold the grants.
   */
  async updateAccess(user: UserRecord, form: ModelAccessGrantsForm): Promise<ModelView> {
    let model = await this.store().byId(form.id);
    if (!model && !isAdmin(user)) throw new HttpError(403, ERROR.ACCESS_PROHIBITED);
    if (model && !(await this.canWrite(user, model))) throw badRequest(ERROR.ACCESS_PROHIBITED);
    const grants = await this.grantsFrom(user, form.access_grants);
    const now = this.core.clock.now();
    const view = await this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      if (!model) {
        model = { id: form.id, user_id: user.id, base_model_id: null, name: form.name ?? form.id, params: {}, meta: {}, is_active: true, created_at: now, updated_at: now };
        await store.insert(model);
      } else await store.update(model.id, {}, now);
      const access_grants = await this.access.replaceGrants(RESOURCE, model.id, grants, trx);
      await this.core.events.publish({ event: 'model.access_updated', actor: user, subjectId: model.id, subjectType: 'model' }, trx);
      return { ...model, updated_at: now, access_grants };
    });
    this.changed();
    return view;
  }

  async delete(user: UserRecord, id: string): Promise<boolean> {
    const model = await this.require(id);
    if (!(await this.canWrite(user, model))) throw unauthorized(ERROR.UNAUTHORIZED);
    await this.core.db.transaction().execute(async (trx) => {
      await this.access.deleteGrantsOf(RESOURCE, id, trx);
      await this.store(trx).delete(id);
      await this.core.events.publish({ event: 'model.deleted', actor: user, subjectId: id, data: { name: model.name } }, trx);
    });
    this.changed();
    return true;
  }

  /** `DELETE /delete/all` (admin). */
  async deleteAll(user: UserRecord): Promise<boolean> {
    await this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      for (const id of await store.ids()) await this.access.deleteGrantsOf(RESOURCE, id, trx);
      await store.deleteAll();
      await this.core.events.publish({ event: 'model.deleted', actor: user, subjectType: 'model' }, trx);
    });
    this.changed();
    return true;
  }

  async profileImage(id: string): Promise<ModelImage> {
    const stored = await this.store().metaOf(id);
    let url = typeof stored?.meta.profile_image_url === 'string' ? stored.meta.profile_image_url : null;
    if (!url) {
      const arena = (this.core.settings.get(ARENA_MODELS) ?? []).find((m) => isObject(m) && m.id === id);
      const meta = isObject(arena) && isObject(arena.meta) ? arena.meta : null;
      url = typeof meta?.profile_image_url === 'string' ? meta.profile_image_url : null;
    }
    return resolveModelImage(url, stored?.updated_at ?? null, this.imagePolicy);
  }

  // ---- the merged list ------------------------------------------------------

  private settingsSnapshot(): unknown[] {
    const settings = this.core.settings;
    return [settings.get(MODEL_ORDER_LIST_KEY), settings.get(DEFAULT_METADATA_KEY), settings.get(ARENA_ENABLE), settings.get(ARENA_MODELS)];
  }

  private async build(providers: ProviderModels, localVersion: number, settings: unknown[], pipeVersion: number): Promise<Snapshot> {
    const rows = await this.store().all();
    const pipes = this.pipes ? await this.pipes.models() : [];
    const functionItems = this.pipes ? await this.pipes.items() : undefined;
    const grants = await this.access.grantsOfMany(
      RESOURCE,
      rows.map((r) => r.id),
    );
    const [orderList, defaultMetadata, arenaEnabled, arenaModels] = settings;
    const entries = buildCatalog({
      providers,
      pipes,
      functionItems,
      rows,
      grants,
      arena: { enabled: arenaEnabled === true, models: Array.isArray(arenaModels) ? arenaModels : [] },
      defaultMetadata: isObject(defaultMetadata) ? defaultMetadata : null,
      orderList: Array.isArray(orderList) ? orderList.map(String) : null,
    });
    return { entries, body: `{"data":[${entries.map((e) => e.json).join(',')}]}`, providerVersion: providers.version, pipeVersion, localVersion, settings };
  }

  /** The merged list, rebuilt when provider lists, workspace models or the list settings changed. */
  private async current(context: CallContext, refresh: boolean): Promise<Snapshot> {
    const providers = await this.upstream.models(context, refresh);
    const settings = this.settingsSnapshot();
    const localVersion = this.localVersion;
    const pipeVersion = this.pipes?.version() ?? 0;
    const snapshot = this.snapshot;
    if (
      snapshot &&
      snapshot.providerVersion === providers.version &&
      snapshot.pipeVersion === pipeVersion &&
      snapshot.localVersion === localVersion &&
      snapshot.settings.every((value, i) => value === settings[i])
    ) {
      return snapshot;
    }
    const key = `${providers.version}:${localVersion}:${pipeVersion}`;
    if (this.building?.key === key) return this.building.promise;
    const promise = this.build(providers, localVersion, settings, pipeVersion)
      .then((built) => {
        if (
          !this.snapshot ||
          built.providerVersion >= this.snapshot.providerVersion ||
          built.localVersion > this.snapshot.localVersion ||
          built.pipeVersion > this.snapshot.pipeVersion
        )
          this.snapshot = built;
        return built;
      })
      .finally(() => {
        if (this.building?.promise === promise) this.building = null;
      });
    this.building = { key, promise };
    return promise;
  }

  /** Whether a user's model list and model use are limited by grants (utils/models.get_filtered_models). */
  private filtered(user: UserRecord): boolean {
    if (this.upstream.options.bypassModelAccessControl) return false;
    return user.role === 'user' || (isAdmin(user) && !this.core.env.bypassAdminAccessControl);
  }

  /** The models a user may see, in list order. */
  async visible(user: UserRecord, context: CallContext, refresh = false): Promise<ListedModel[]> {
    const snapshot = await this.current(context, refresh);
    if (!this.filtered(user)) return snapshot.entries;
    return this.filterEntries(user, snapshot.entries);
  }

  private async filterEntries(user: UserRecord, entries: ListedModel[]): Promise<ListedModel[]> {
    const groupIds = new Set(await this.access.groups.groupIdsOf(user.id));
    const candidates = entries.filter((e) => e.registered && e.ownerId !== user.id).map((e) => e.resourceId as string);
    const granted = await this.access.accessibleIds({ userId: user.id, groupIds: [...groupIds], bypass: false }, RESOURCE, 'read', candidates);
    return entries.filter((entry) => {
      if (entry.arenaGrants) return arenaAllows(entry.arenaGrants, user.id, groupIds);
      if (entry.registered) return entry.ownerId === user.id || granted.has(entry.resourceId as string);
      return isAdmin(user);
    });
  }

  /** `GET /api/models`: the body, already serialised. */
  async listBody(user: UserRecord, context: CallContext, refresh: boolean): Promise<string> {
    const snapshot = await this.current(context, refresh);
    if (!this.filtered(user)) return snapshot.body;
    const entries = await this.filterEntries(user, snapshot.entries);
    return `{"data":[${entries.map((e) => e.json).join(',')}]}`;
  }

  /** `GET /api/models/base` (admin): the provider models alone. */
  async providerModels(context: CallContext): Promise<{ data: Json[] }> {
    return { data: baseModels(await this.upstream.models(context)) };
  }

  // ---- access before provider calls -------------------------------------------

  /**
   * Whether the user may use a model (utils/access_control.check_model_access):
   * admins always; others need the model to be registered and readable, through
   * the whole chain of base models. Internal callers pass `bypass`.
   */
  async requireUse(user: UserRecord, model: ModelRecord | null, bypass = false): Promise<void> {
    if (bypass || this.upstream.options.bypassModelAccessControl || isAdmin(user)) return;
    if (!model) throw new HttpError(403, MODEL_ERROR.DENIED);
    const groupIds = await this.access.groups.groupIdsOf(user.id);
    const readable = async (m: ModelRecord) => m.user_id === user.id || this.access.hasAccess(user, RESOURCE, m.id, 'read', m.user_id, { groupIds });
    if (!(await readable(model))) throw new HttpError(403, MODEL_ERROR.DENIED);
    const seen = new Set([model.id]);
    let baseId = model.base_model_id;
    while (baseId && !seen.has(baseId)) {
      seen.add(baseId);
      const base = await this.store().byId(baseId);
      if (!base || !(await readable(base))) throw new HttpError(403, MODEL_ERROR.DENIED);
      baseId = base.base_model_id;
    }
  }

  /** Of the provider models, those a user may use (the provider-scoped lists of `/ollama` and `/openai`). */
  async usableIds(user: UserRecord, ids: string[]): Promise<Set<string>> {
    if (user.role !== 'user' || this.upstream.options.bypassModelAccessControl) return new Set(ids);
    const rows = await this.store().byIds(ids);
    const subject = await this.access.subjectOf(user);
    const granted = await this.access.accessibleIds({ ...subject, bypass: false }, RESOURCE, 'read', rows.map((r) => r.id));
    return new Set(rows.filter((r) => r.user_id === user.id || granted.has(r.id)).map((r) => r.id));
  }

  /**
   * A request for a model made ready for its provider: a preset becomes a call
   * to its base model with the preset's parameters and system prompt applied.
   * The caller finds the provider model (404 when there is none), then calls
   * `requireUse` before anything is sent.
   */
  async prepare(
    user: UserRecord,
    body: Json,
    options: { style: 'openai' | 'ollama' | 'none'; bypassSystemPrompt?: boolean; metadata?: Json | null },
  ): Promise<{ payload: Json; info: ModelRecord | null; targetId: string }> {
    const requested = String(body.model ?? '');
    const info = await this.store().byId(requested);
    let payload: Json = { ...body };
    if (info?.base_model_id) payload.model = info.base_model_id;
    if (info && options.style !== 'none') {
      const { system, ...params } = info.params;
      if (Object.keys(info.params).length > 0) {
        payload = options.style === 'openai' ? applyParamsOpenAI(params, payload) : applyParamsOllama(params, payload);
        if (!options.bypassSystemPrompt) payload = applySystemPrompt(system, payload, user, options.metadata);
      }
    }
    return { payload, info, targetId: String(payload.model) };
  }
}

/** Arena models keep their grants in their config (utils/access_control.has_access with a grant list). */
function arenaAllows(grants: unknown[], userId: string, groupIds: Set<string>): boolean {
  return grants.some((grant) => {
    if (!isObject(grant) || grant.permission !== 'read') return false;
    if (grant.principal_type === 'user') return grant.principal_id === '*' || grant.principal_id === userId;
    return grant.principal_type === 'group' && groupIds.has(String(grant.principal_id));
  });
}
