import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { isUniqueViolation } from '../../core/db/database.js';
import { ERROR, HttpError, badRequest, unauthorized } from '../../core/http/errors.js';
import { PluginError } from '../../core/python/errors.js';
import {
  type FunctionCallContext,
  type FunctionDescription,
  type FunctionOperation,
  type PythonHost,
  type ValvesKind,
  rewriteImports,
} from '../../core/python/host.js';
import { ToolSourceFetcher, parseHttpUrl } from '../tools/load-url.js';
import { type ToolsOptions, toolsOptionsFromEnv } from '../tools/options.js';
import { PYTHON_IDENTIFIER, pluginUser, sealedUserValves, settingsWithUserValves, sourceLoadFailure, valvesHostFailure, valvesValidationFailure } from '../tools/plugin-rules.js';
import { ValvesCipher } from '../tools/valves-crypto.js';
import type { UsersService } from '../users/service.js';
import type { FunctionForm, SyncFunction } from './schemas.js';
import { type FunctionRecord, FunctionStore, type FunctionTraits, type FunctionType } from './store.js';

type Json = Record<string, unknown>;

export const FUNCTION_ERROR = {
  INVALID_ID: 'Only alphanumeric characters and underscores are allowed in the id',
  UPDATE_VALVES: '[ERROR: Error updating function valves]',
  UPDATE_USER_VALVES: '[ERROR: Error updating function user valves]',
} as const;

const TYPES: FunctionType[] = ['pipe', 'filter', 'action', 'event'];

/** What the chat layer passes when it runs a function: the host's context, with the caller as a user record. */
export interface FunctionRunOptions extends Omit<FunctionCallContext, 'user' | 'userValves' | 'caller'> {
  user?: UserRecord | null;
}

/**
 * Functions (`/api/v1/functions`): Python pipes, filters, actions and event
 * handlers on the plugin host, their valves, and running them for the chat
 * layer (docs/functions.md). Writes are admins' (the routes say so).
 */
export class FunctionsService {
  private readonly cipher: ValvesCipher;
  private readonly fetcher: ToolSourceFetcher;
  /** Bumped by every write: the model list's pipe models are listed again. */
  private version = 0;
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly core: Core,
    private readonly users: UsersService,
    private readonly python: PythonHost,
    options: ToolsOptions = toolsOptionsFromEnv(core.env.raw),
  ) {
    this.cipher = new ValvesCipher(core.env.secretKey, options.valveEncryption, (reason) =>
      core.log.warn({ reason }, 'Stored function valves could not be decrypted; function defaults apply'),
    );
    this.fetcher = new ToolSourceFetcher(options.loadUrl, 'function');
    core.changes.on('functions', () => {
      this.version++;
      for (const listener of this.listeners) listener();
    });
  }

  private store(db = this.core.db): FunctionStore {
    return new FunctionStore(db);
  }

  async close(): Promise<void> {
    await this.fetcher.close();
  }

  /** Calls `listener` after every change of a function (the model list rebuilds its pipe models). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  get changes(): number {
    return this.version;
  }

  /** After a function's write has committed: this instance's and, with Redis, the others' pipe models and event receivers are built again. */
  private changed(): void {
    this.core.changes.announce('functions');
  }

  private async require(id: string): Promise<FunctionRecord> {
    const fn = await this.store().byId(id);
    if (!fn) throw unauthorized(ERROR.NOT_FOUND);
    return fn;
  }

  /** Loads a source in the plugin host; one that does not load is the caller's 400 with the Python message. */
  private async describe(user: UserRecord, id: string, content: string): Promise<{ manifest: Json; fn: FunctionDescription }> {
    try {
      const extraction = await this.python.extract(id, content, user.id, 'function');
      if (!extraction.function) throw new PluginError('python_error', 'No Function class found in the module');
      return { manifest: extraction.manifest, fn: extraction.function };
    } catch (error) {
      throw sourceLoadFailure(error);
    }
  }

  /** FunctionMeta as stored: the form's keys, the frontmatter, and a filter's toggle flag (as the reference sets it). */
  private static meta(form: Json, manifest: Json, fn: FunctionDescription): Json {
    const { error: _error, ...kept } = form;
    const meta: Json = { ...kept, description: typeof form.description === 'string' ? form.description : null, manifest };
    if (fn.type === 'filter' && fn.toggle) meta.toggle = true;
    return meta;
  }

  private static traits(fn: FunctionDescription): FunctionTraits {
    // An event function's `events` (Parley's addition) names the events it subscribes to; without it, every event.
    return { actions: fn.actions, events: fn.events, icon: fn.icon, has_user_valves: fn.has_user_valves, file_handler: fn.file_handler };
  }

  private static response(fn: FunctionRecord) {
    const { content: _content, valves: _valves, traits: _traits, ...rest } = fn;
    return rest;
  }

  private static model(fn: FunctionRecord, valves?: Json | null) {
    const { valves: _valves, traits: _traits, ...rest } = fn;
    return valves === undefined ? rest : { ...rest, valves };
  }

  // ---- listings ------------------------------------------------------------------

  /** `GET /`: every function without its source (the reference shows them to every verified user). */
  async list() {
    if (!this.core.env.enablePlugins) return [];
    return (await this.store().all()).map(FunctionsService.response);
  }

  /** `GET /list` (admins): with the owner. */
  async listWithUsers() {
    const functions = await this.store().all();
    const users = await this.users.byIds([...new Set(functions.map((f) => f.user_id))]);
    const owners = new Map(users.map((u) => [u.id, { id: u.id, name: u.name, role: u.role, email: u.email }]));
    return functions.map((fn) => ({ ...FunctionsService.response(fn), user: owners.get(fn.user_id) ?? null }));
  }

  /** `GET /export` (admins): whole records, with their valves when asked. */
  async export(includeValves: boolean) {
    return (await this.store().all()).map((fn) => FunctionsService.model(fn, includeValves ? this.cipher.open(fn.valves) : undefined));
  }

  async get(id: string) {
    return FunctionsService.model(await this.require(id));
  }

  // ---- writes (admins) -------------------------------------------------------------

  async create(user: UserRecord, form: FunctionForm) {
    if (!PYTHON_IDENTIFIER.test(form.id)) throw badRequest(FUNCTION_ERROR.INVALID_ID);
    const id = form.id.toLowerCase();
    if (await this.store().byId(id)) throw badRequest(ERROR.ID_TAKEN);
    const content = rewriteImports(form.content);
    const { manifest, fn } = await this.describe(user, id, content);
    const now = this.core.clock.now();
    const record: FunctionRecord = {
      id,
      user_id: user.id,
      name: form.name,
      type: fn.type,
      content,
      meta: FunctionsService.meta(form.meta, manifest, fn),
      valves: null,
      traits: FunctionsService.traits(fn),
      is_active: false,
      is_global: false,
      updated_at: now,
      created_at: now,
    };
    await this.core.db
      .transaction()
      .execute(async (trx) => {
        await this.store(trx).insert(record);
        await this.core.events.publish({ event: 'function.created', actor: user, subjectId: id, subjectType: 'function', data: { type: record.type, name: record.name } }, trx);
      })
      .catch((error: unknown) => {
        if (isUniqueViolation(error)) throw badRequest(ERROR.ID_TAKEN);
        throw error;
      });
    this.changed();
    return FunctionsService.response(record);
  }

  /** `POST /id/{id}/update`: the source is loaded again; its class decides the type. */
  async update(user: UserRecord, id: string, form: FunctionForm) {
    const current = await this.require(id);
    const content = rewriteImports(form.content);
    const { manifest, fn } = await this.describe(user, id, content);
    const fields = { name: form.name, content, type: fn.type, meta: FunctionsService.meta(form.meta, manifest, fn), traits: FunctionsService.traits(fn) };
    const now = this.core.clock.now();
    await this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).update(id, fields, now))) throw unauthorized(ERROR.NOT_FOUND);
      await this.core.events.publish({ event: 'function.updated', actor: user, subjectId: id, subjectType: 'function', data: { type: fn.type, name: form.name } }, trx);
    });
    this.changed();
    return FunctionsService.model({ ...current, ...fields, updated_at: now });
  }

  /** `POST /id/{id}/toggle` and `/toggle/global`. */
  async toggle(user: UserRecord, id: string, field: 'is_active' | 'is_global') {
    const fn = await this.require(id);
    const value = !fn[field];
    const now = this.core.clock.now();
    const event = field === 'is_global' ? 'function.updated' : value ? 'function.enabled' : 'function.disabled';
    await this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).update(id, { [field]: value }, now))) throw unauthorized(ERROR.NOT_FOUND);
      const data: Json = { type: fn.type, name: fn.name, ...(field === 'is_global' ? { is_global: value } : {}) };
      await this.core.events.publish({ event, actor: user, subjectId: id, subjectType: 'function', data }, trx);
    });
    this.changed();
    return FunctionsService.model({ ...fn, [field]: value, updated_at: now });
  }

  async delete(user: UserRecord, id: string): Promise<boolean> {
    const deleted = await this.core.db.transaction().execute(async (trx) => {
      const removed = await this.store(trx).delete(id);
      if (removed) await this.core.events.publish({ event: 'function.deleted', actor: user, subjectId: id, subjectType: 'function' }, trx);
      return removed;
    });
    this.python.forget(id, 'function');
    if (deleted) this.changed();
    return deleted;
  }

  /**
   * `POST /sync` (admins): the given functions replace every stored one. Each
   * source is loaded first; one that does not load is stored inactive, with
   * its error in `meta.error`, instead of failing the whole import.
   */
  async sync(user: UserRecord, functions: SyncFunction[]) {
    const now = this.core.clock.now();
    const records: FunctionRecord[] = [];
    const seen = new Set<string>();
    for (const item of functions) {
      if (!PYTHON_IDENTIFIER.test(item.id)) throw badRequest(FUNCTION_ERROR.INVALID_ID);
      const id = item.id.toLowerCase();
      if (seen.has(id)) throw badRequest(ERROR.ID_TAKEN);
      seen.add(id);
      const content = rewriteImports(item.content);
      const form: Json = item.meta ?? {};
      let record: FunctionRecord;
      try {
        const { manifest, fn } = await this.describe(user, id, content);
        const valves = item.valves ? await this.validate(user, { id, content, owner: user.id }, 'valves', item.valves) : null;
        record = { id, user_id: user.id, name: item.name, type: fn.type, content, meta: FunctionsService.meta(form, manifest, fn), valves, traits: FunctionsService.traits(fn), is_active: item.is_active ?? false, is_global: item.is_global ?? false, updated_at: now, created_at: now };
      } catch (error) {
        if (!(error instanceof HttpError) || error.statusCode >= 500) throw error;
        const type = TYPES.includes(item.type as FunctionType) ? (item.type as FunctionType) : 'pipe';
        const { error: _previous, ...meta } = form;
        record = { id, user_id: user.id, name: item.name, type, content, meta: { ...meta, error: String(error.detail) }, valves: item.valves ?? null, traits: null, is_active: false, is_global: item.is_global ?? false, updated_at: now, created_at: now };
      }
      records.push(record);
    }
    await this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      for (const existing of await store.all()) {
        if (!seen.has(existing.id)) await store.delete(existing.id);
      }
      for (const record of records) {
        const previous = await store.byId(record.id);
        if (previous) await store.delete(record.id);
        await store.insert({ ...record, created_at: previous?.created_at ?? record.created_at, valves: record.valves ? this.cipher.seal(record.valves as Json) : null });
      }
      await this.core.events.publish({ event: 'function.updated', actor: user, subjectType: 'function', data: { synced: records.length } }, trx);
    });
    for (const id of seen) this.python.forget(id, 'function');
    this.changed();
    return (await this.store().all()).map((fn) => FunctionsService.model(fn, this.cipher.open(fn.valves)));
  }

  /** `POST /load/url` (admins): a function's source for the create page; nothing is stored. */
  loadUrl(url: string): Promise<{ name: string; content: string }> {
    return this.fetcher.load(parseHttpUrl(url));
  }

  // ---- valves ----------------------------------------------------------------

  async valves(id: string): Promise<Json | null> {
    return this.cipher.open((await this.require(id)).valves);
  }

  async valvesSpec(user: UserRecord, id: string, kind: ValvesKind): Promise<Json | null> {
    const fn = await this.require(id);
    try {
      return await this.python.valvesSpec(this.hostFunction(fn), kind, pluginUser(user), user.id);
    } catch (error) {
      throw valvesHostFailure(error);
    }
  }

  async updateValves(user: UserRecord, id: string, body: Json): Promise<Json> {
    const fn = await this.require(id);
    const valves = await this.validate(user, this.hostFunction(fn), 'valves', body);
    const now = this.core.clock.now();
    await this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).setValves(id, this.cipher.seal(valves), now))) throw unauthorized(ERROR.NOT_FOUND);
      await this.core.events.publish({ event: 'function.valves_updated', actor: user, subjectId: id, subjectType: 'function' }, trx);
    });
    this.changed();
    return valves;
  }

  async userValves(user: UserRecord, id: string): Promise<Json | null> {
    await this.require(id);
    return this.storedUserValves(user, id);
  }

  /** `POST /id/{id}/valves/user/update`: kept in the caller's settings (`settings.functions.valves[id]`), as the reference. */
  async updateUserValves(user: UserRecord, id: string, body: Json): Promise<Json> {
    const fn = await this.require(id);
    const valves = await this.validate(user, this.hostFunction(fn), 'user', body);
    await this.core.db.transaction().execute(async (trx) => {
      const current = await this.users.byId(user.id, trx);
      if (!current) throw badRequest(ERROR.USER_NOT_FOUND);
      const settings = settingsWithUserValves(current.settings, 'functions', id, this.cipher.seal(valves));
      await this.users.update(user.id, { settings }, trx);
      await this.core.events.publish({ event: 'function.valves_updated', actor: user, subjectId: id, subjectType: 'function', data: { scope: 'user' } }, trx);
    });
    return valves;
  }

  private storedUserValves(user: UserRecord, id: string): Json | null {
    return this.cipher.open(sealedUserValves(user, 'functions', id));
  }

  private async validate(user: UserRecord, fn: { id: string; content: string; owner: string }, kind: ValvesKind, body: Json): Promise<Json> {
    try {
      return await this.python.validateValves({ ...fn, kind: 'function' }, kind, body, user.id);
    } catch (error) {
      throw valvesValidationFailure(error, kind, FUNCTION_ERROR);
    }
  }

  private hostFunction(fn: FunctionRecord) {
    return { id: fn.id, kind: 'function' as const, content: fn.content, valves: this.cipher.open(fn.valves), owner: fn.user_id };
  }

  // ---- running (for the chat layer) -------------------------------------------------

  /** Active functions of a type (all when `ids` is null, else those named), as stored. */
  async active(type: FunctionType, ids: string[] | null = null): Promise<FunctionRecord[]> {
    if (!this.core.env.enablePlugins) return [];
    const all = await this.store().all({ type, activeOnly: true });
    return ids ? all.filter((fn) => ids.includes(fn.id)) : all;
  }

  byId(id: string): Promise<FunctionRecord | null> {
    return this.store().byId(id);
  }

  /**
   * Runs one operation of a stored function with its admin valves and the
   * user's user valves (the caller has decided that it applies). Fails with
   * PluginError (`python_error`, `timeout`, `cancelled`, ...).
   */
  run<T = unknown>(fn: FunctionRecord, operation: FunctionOperation, options: FunctionRunOptions = {}): Promise<T> {
    const { user, ...context } = options;
    return this.python.callFunction<T>(this.hostFunction(fn), operation, {
      ...context,
      caller: user ?? null,
      user: user ? pluginUser(user) : null,
      userValves: user ? this.storedUserValves(user, fn.id) : null,
    });
  }
}
