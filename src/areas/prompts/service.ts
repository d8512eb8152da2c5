import { randomUUID } from 'node:crypto';
import { type AccessGrant, type GrantSpec, RESOURCE_TYPES } from '../../core/access/grants.js';
import type { AccessService, SharingRule } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import { InvalidatedCache, NOTICED_CACHE } from '../../core/cache.js';
import type { Core } from '../../core/context.js';
import { type Db, isUniqueViolation } from '../../core/db/database.js';
import { ERROR, badRequest, notFound, unauthorized } from '../../core/http/errors.js';
import { workspaceSearch } from '../../core/db/workspace-search.js';
import type { WorkspaceListQuery } from '../../core/http/schema.js';
import type { UsersService } from '../users/service.js';
import type { PromptForm, PromptMetadataForm } from './schemas.js';
import { PromptRenderings } from './renderings.js';
import { type PromptRecord, PromptStore, type PromptVersion, type PromptWrite } from './store.js';

type Json = Record<string, unknown>;

export const PROMPT_ERROR = {
  COMMAND_TAKEN: 'Uh-oh! This command is already registered. Please choose another command string.',
  ACTIVE_VERSION: 'Cannot delete the active production version',
  EMPTY_COMMAND: 'The command must not be empty',
  EMPTY_NAME: 'The name must not be empty',
} as const;

const RESOURCE = RESOURCE_TYPES.prompt;
const SHARING: SharingRule = { publicPermission: 'sharing.public_prompts' };
const [OPEN_LIST, COMMA, CLOSE_LIST, CLOSE_ENTRY, NO_GRANTS] = ['[', ',', ']', '}', '[]'].map((text) => Buffer.from(text));
/** History page size (routers/prompts.py get_prompt_history). */
const HISTORY_PAGE_SIZE = 20;

export interface PromptUser {
  id: string;
  name: string;
  role: string;
  email: string;
}

/** A `/` picker entry: what its access check needs, and its PromptModel JSON. */
interface PickerEntry {
  owner: string;
  grants: AccessGrant[];
  json: Buffer;
}

/** The picker's entries are the same for everyone: one cache key. */
const PICKER_KEY = 'active';

/** A prompt as records return it (PromptModel): the record with its grants. */
export interface PromptView extends PromptRecord {
  access_grants: AccessGrant[];
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const isEmpty = (value: Json | null | undefined) => !value || Object.keys(value).length === 0;
const sameTags = (a: (string | null)[], b: (string | null)[]) => a.length === b.length && a.every((tag, i) => tag === b[i]);

/**
 * Prompts (`/api/v1/prompts`): `/` commands with access grants and versions.
 * Every change of the name, command, content, tags or grants through an update
 * records a version (a snapshot); one version is the one in use (`version_id`),
 * and choosing another restores its fields. See docs/prompts.md.
 */
export class PromptsService {
  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly users: UsersService,
  ) {
    // Group memberships are not part of the entries: each request checks them, read from the groups cache.
    core.database.onWrite(['prompt', 'access_grant'], () => core.changes.announce('prompts'));
    core.changes.on('prompts', () => this.picker.invalidate());
  }

  private readonly renderings = new PromptRenderings();
  /** The `/` picker's prompts, dropped on any write to prompts or grants, here or on another instance. */
  private readonly picker = new InvalidatedCache<PickerEntry[]>(NOTICED_CACHE);

  private store(db: Db = this.core.db): PromptStore {
    return new PromptStore(db);
  }

  // ---- rules ---------------------------------------------------------------

  /** Admins (whatever BYPASS_ADMIN_ACCESS_CONTROL says, as the reference's routes), owners and grant holders. */
  private async may(user: UserRecord, prompt: PromptRecord, permission: 'read' | 'write'): Promise<boolean> {
    return isAdmin(user) || (await this.access.hasAccess(user, RESOURCE, prompt.id, permission, prompt.user_id));
  }

  private async require(id: string): Promise<PromptRecord> {
    const prompt = await this.store().byId(id);
    if (!prompt) throw notFound();
    return prompt;
  }

  /** The prompt, when the user may change it: 404 when missing, 401 without write access. */
  private async requireWritable(user: UserRecord, id: string): Promise<PromptRecord> {
    const prompt = await this.require(id);
    if (!(await this.may(user, prompt, 'write'))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    return prompt;
  }

  private async requireReadable(user: UserRecord, id: string): Promise<PromptRecord> {
    const prompt = await this.require(id);
    if (!(await this.may(user, prompt, 'read'))) throw unauthorized(ERROR.ACCESS_PROHIBITED);
    return prompt;
  }

  /** A command and a name the `/` picker can show; another prompt's command is taken. */
  private async checkNaming(form: { command: string; name: string }, ownId?: string): Promise<void> {
    if (form.command.trim() === '') throw badRequest(PROMPT_ERROR.EMPTY_COMMAND);
    if (form.name.trim() === '') throw badRequest(PROMPT_ERROR.EMPTY_NAME);
    const holder = await this.store().idOfCommand(form.command);
    if (holder && holder !== ownId) throw badRequest(PROMPT_ERROR.COMMAND_TAKEN);
  }

  /** A write that changes the command can lose a race for it: the reference's duplicate error, not a 500. */
  private commandRace(error: unknown): never {
    if (isUniqueViolation(error)) throw badRequest(PROMPT_ERROR.COMMAND_TAKEN);
    throw error;
  }

  private view(prompt: PromptRecord, grants: AccessGrant[]): PromptView {
    return { ...prompt, access_grants: grants };
  }

  private async views(prompts: PromptRecord[]): Promise<PromptView[]> {
    const grants = await this.access.grantsOfMany(
      RESOURCE,
      prompts.map((p) => p.id),
    );
    return prompts.map((p) => this.view(p, grants.get(p.id) ?? []));
  }

  private async usersById(ids: string[]): Promise<Map<string, PromptUser>> {
    const users = await this.users.byIds([...new Set(ids)]);
    return new Map(users.map((u) => [u.id, { id: u.id, name: u.name, role: u.role, email: u.email }]));
  }

  /** What a version keeps: the fields in use after the write, and the grants. */
  private snapshot(prompt: PromptRecord, grants: AccessGrant[]): Json {
    return {
      name: prompt.name,
      content: prompt.content,
      command: prompt.command,
      data: prompt.data,
      meta: prompt.meta,
      tags: prompt.tags,
      access_grants: grants,
    };
  }

  // ---- listings --------------------------------------------------------------

  /**
   * `GET /` (the `/` picker): the active prompts the user may read (admins with
   * the bypass: all), newest change first, as PromptModel JSON already serialised.
   * With thousands of prompts, reading, checking and serialising every row per
   * request cost fifteen times the floor (docs/prompts.md, Bench): every active
   * prompt is kept rendered with its grants (`pickerEntries`), and a request only
   * checks the grants in memory and joins the bytes.
   */
  async listBody(user: UserRecord): Promise<Buffer> {
    const subject = await this.access.subjectOf(user);
    const entries = await this.picker.get(PICKER_KEY, () => this.pickerEntries());
    const parts: Buffer[] = [OPEN_LIST];
    for (const entry of entries) {
      if (!this.access.admits(subject, 'read', entry.owner, entry.grants)) continue;
      if (parts.length > 1) parts.push(COMMA);
      parts.push(entry.json);
    }
    parts.push(CLOSE_LIST);
    return Buffer.concat(parts);
  }

  /** Every active prompt, newest change first, with its owner, its grants and its picker JSON. */
  private async pickerEntries(): Promise<PickerEntry[]> {
    const heads = await this.store().activeHeads();
    const rendered = await this.renderings.of(heads, (stale) => this.store().rows(stale));
    this.renderings.retain(heads);
    const grants = await this.access.grantsOfMany(
      RESOURCE,
      rendered.map((entry) => entry.id),
    );
    return rendered.map((entry) => {
      const entryGrants = grants.get(entry.id) ?? [];
      const json = Buffer.concat([entry.head, entryGrants.length > 0 ? Buffer.from(JSON.stringify(entryGrants)) : NO_GRANTS, CLOSE_ENTRY]);
      return { owner: entry.owner, grants: entryGrants, json };
    });
  }

  /** `GET /tags`: the tags of those prompts, sorted, each once. */
  async tags(user: UserRecord): Promise<string[]> {
    const subject = await this.access.subjectOf(user);
    const filter = subject.bypass ? null : this.access.accessFilter(subject, RESOURCE, 'read', { id: 'prompt.id', owner: 'prompt.user_id' });
    const tags = (await this.store().activeTags(filter)).filter((tag): tag is string => typeof tag === 'string' && tag !== '');
    return [...new Set(tags)].sort();
  }

  /** `GET /list` (the workspace page): every readable prompt, active or not, 30 per page, with its owner and `write_access`. */
  async search(user: UserRecord, query: WorkspaceListQuery) {
    const subject = await this.access.subjectOf(user);
    const result = await this.store().search(workspaceSearch(query, this.access.accessFilter(subject, RESOURCE, 'read', { id: 'prompt.id', owner: 'prompt.user_id' }), user.id));
    const [views, owners, writable] = await Promise.all([
      this.views(result.items),
      this.usersById(result.items.map((p) => p.user_id)),
      this.access.accessibleIds(
        subject,
        RESOURCE,
        'write',
        result.items.map((p) => p.id),
      ),
    ]);
    const items = views.map((prompt) => ({
      ...prompt,
      user: owners.get(prompt.user_id) ?? null,
      write_access: prompt.user_id === user.id || writable.has(prompt.id),
    }));
    return { items, total: result.total };
  }

  // ---- records ---------------------------------------------------------------

  /** `POST /create`: needs `workspace.prompts` or `workspace.prompts_import`; the first version is the one in use. */
  async create(user: UserRecord, form: PromptForm): Promise<PromptView> {
    const allowed =
      isAdmin(user) || (await this.access.hasPermission(user, 'workspace.prompts')) || (await this.access.hasPermission(user, 'workspace.prompts_import'));
    if (!allowed) throw unauthorized(ERROR.UNAUTHORIZED);
    await this.checkNaming(form);
    const grants = (await this.access.grantsOfForm(user, form, RESOURCE, SHARING)) ?? [];
    const now = this.core.clock.now();
    const prompt: PromptRecord = {
      id: randomUUID(),
      command: form.command,
      user_id: user.id,
      name: form.name,
      content: form.content,
      data: form.data ?? {},
      meta: form.meta ?? {},
      tags: form.tags ?? [],
      is_active: true,
      version_id: randomUUID(),
      created_at: now,
      updated_at: now,
    };
    return this.core.db
      .transaction()
      .execute(async (trx) => {
        await this.store(trx).insert(prompt);
        const stored = await this.access.replaceGrants(RESOURCE, prompt.id, grants, trx);
        await this.store(trx).addVersion({
          id: prompt.version_id!,
          prompt_id: prompt.id,
          snapshot: this.snapshot(prompt, stored),
          user_id: user.id,
          commit_message: form.commit_message ?? 'Initial version',
          created_at: now,
        });
        await this.core.events.publish(
          { event: 'prompt.created', actor: user, subjectId: prompt.id, subjectType: 'prompt', data: { name: prompt.name, command: prompt.command } },
          trx,
        );
        return this.view(prompt, stored);
      })
      .catch((error: unknown) => this.commandRace(error));
  }

  /**
   * Prompts carried over from an Open WebUI database (`parley import-openwebui`), ids and times
   * kept, each with its grants and its current text as a first version (with the id the prompt
   * names as its version, or a new one); their earlier versions follow with `restoreVersions`.
   */
  async restore(prompts: { prompt: PromptRecord; grants: GrantSpec[] }[]): Promise<void> {
    await this.core.db.transaction().execute(async (trx) => {
      for (const { prompt, grants } of prompts) {
        const record = { ...prompt, version_id: prompt.version_id ?? randomUUID() };
        await this.store(trx).insert(record);
        const stored = await this.access.replaceGrants(RESOURCE, record.id, grants, trx);
        await this.store(trx).addVersion({
          id: record.version_id,
          prompt_id: record.id,
          snapshot: this.snapshot(record, stored),
          user_id: record.user_id,
          commit_message: 'Imported from Open WebUI',
          created_at: record.updated_at,
        });
      }
    });
  }

  /**
   * Versions read from another install (`parley import-openwebui`), ids, authors and times kept:
   * one of the id `restore` wrote for the text in use is replaced by it, and each prompt's
   * versions are ordered by time. The version in use (`version_id`) is left as it is.
   */
  async restoreVersions(versions: PromptVersion[]): Promise<void> {
    await this.core.db.transaction().execute(async (trx) => {
      for (const version of versions) await this.store(trx).restoreVersion(version);
      for (const promptId of new Set(versions.map((v) => v.prompt_id))) await this.store(trx).orderVersions(promptId);
    });
  }

  /** `GET /id/{id}`: admins, owners and readers; anyone else is told it does not exist. */
  async get(user: UserRecord, id: string) {
    const prompt = await this.store().byId(id);
    if (!prompt || !(await this.may(user, prompt, 'read'))) throw notFound();
    const write = await this.access.hasAccess(user, RESOURCE, id, 'write', prompt.user_id);
    return { ...this.view(prompt, await this.access.grantsOf(RESOURCE, id)), user: null, write_access: write };
  }

  /**
   * `POST /id/{id}/update`: a change of name, command, content, tags or grants
   * records a version, which is put in use unless `is_production` is false.
   * Empty `data` and `meta` keep the stored ones; grants change only when the
   * form names them.
   */
  async update(user: UserRecord, id: string, form: PromptForm): Promise<PromptView> {
    const prompt = await this.requireWritable(user, id);
    await this.checkNaming(form, id);
    const grants = await this.access.grantsOfForm(user, form, RESOURCE, SHARING);
    const changed =
      prompt.name !== form.name ||
      prompt.command !== form.command ||
      prompt.content !== form.content ||
      grants !== null ||
      (form.tags != null && !sameTags(prompt.tags, form.tags));
    const fields: PromptWrite = {
      name: form.name,
      command: form.command,
      content: form.content,
      data: isEmpty(form.data) ? prompt.data : form.data!,
      meta: isEmpty(form.meta) ? prompt.meta : form.meta!,
      tags: form.tags ?? prompt.tags,
    };
    const now = this.core.clock.now();
    return this.core.db
      .transaction()
      .execute(async (trx) => {
        const store = this.store(trx);
        const stored = grants ? await this.access.replaceGrants(RESOURCE, id, grants, trx) : await this.access.grantsOf(RESOURCE, id, trx);
        let updated: PromptRecord = { ...prompt, ...fields, updated_at: now };
        if (changed) {
          const version = await store.addVersion({
            id: randomUUID(),
            prompt_id: id,
            snapshot: this.snapshot(updated, stored),
            user_id: user.id,
            commit_message: form.commit_message ?? null,
            created_at: now,
          });
          if (form.is_production !== false) updated = { ...updated, version_id: version.id };
        }
        // Deleted meanwhile: answer as for a missing prompt.
        if (!(await store.update(id, { ...fields, version_id: updated.version_id }, now))) throw notFound();
        await this.core.events.publish(
          { event: 'prompt.updated', actor: user, subjectId: id, subjectType: 'prompt', data: { name: updated.name, command: updated.command } },
          trx,
        );
        return this.view(updated, stored);
      })
      .catch((error: unknown) => this.commandRace(error));
  }

  /** `POST /id/{id}/update/meta`: name, command and tags, without a version. */
  async updateMeta(user: UserRecord, id: string, form: PromptMetadataForm): Promise<PromptView> {
    const prompt = await this.requireWritable(user, id);
    await this.checkNaming(form, id);
    const fields: PromptWrite = { name: form.name, command: form.command, tags: form.tags ?? prompt.tags };
    const now = this.core.clock.now();
    return this.core.db
      .transaction()
      .execute(async (trx) => {
        if (!(await this.store(trx).update(id, fields, now))) throw notFound();
        await this.core.events.publish(
          { event: 'prompt.updated', actor: user, subjectId: id, subjectType: 'prompt', data: { name: form.name, command: form.command } },
          trx,
        );
        return this.view({ ...prompt, ...fields, updated_at: now }, await this.access.grantsOf(RESOURCE, id, trx));
      })
      .catch((error: unknown) => this.commandRace(error));
  }

  /**
   * `POST /id/{id}/update/version`: puts one of the prompt's versions in use and
   * restores its name, content, data, meta and tags (not the command nor the
   * grants, as the reference). A version of another prompt is the reference's 400.
   */
  async setVersion(user: UserRecord, id: string, versionId: string): Promise<PromptView> {
    const prompt = await this.requireWritable(user, id);
    const version = await this.store().version(id, versionId);
    if (!version) throw badRequest(ERROR.DEFAULT());
    const { snapshot } = version;
    const fields: PromptWrite = {
      name: typeof snapshot.name === 'string' ? snapshot.name : prompt.name,
      content: typeof snapshot.content === 'string' ? snapshot.content : prompt.content,
      data: isObject(snapshot.data) ? snapshot.data : prompt.data,
      meta: isObject(snapshot.meta) ? snapshot.meta : prompt.meta,
      tags: Array.isArray(snapshot.tags) ? snapshot.tags.filter((t): t is string | null => t === null || typeof t === 'string') : prompt.tags,
      version_id: version.id,
    };
    const now = this.core.clock.now();
    return this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).update(id, fields, now))) throw notFound();
      await this.core.events.publish(
        { event: 'prompt.version_updated', actor: user, subjectId: id, subjectType: 'prompt', data: { version_id: version.id } },
        trx,
      );
      return this.view({ ...prompt, ...fields, updated_at: now }, await this.access.grantsOf(RESOURCE, id, trx));
    });
  }

  /** `POST /id/{id}/access/update`: replaces the grants (an empty list makes the prompt private); no version. */
  async updateAccess(user: UserRecord, id: string, accessGrants: unknown[]): Promise<PromptView> {
    const prompt = await this.requireWritable(user, id);
    const grants = await this.access.prepareGrants(user, accessGrants, SHARING);
    return this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).byId(id))) throw notFound();
      const stored = await this.access.replaceGrants(RESOURCE, id, grants, trx);
      await this.core.events.publish(
        { event: 'prompt.access_updated', actor: user, subjectId: id, subjectType: 'prompt', data: { name: prompt.name } },
        trx,
      );
      return this.view(prompt, stored);
    });
  }

  /** `POST /id/{id}/toggle`: an inactive prompt leaves the `/` picker but stays in the workspace list. */
  async toggle(user: UserRecord, id: string): Promise<PromptView> {
    const prompt = await this.requireWritable(user, id);
    const now = this.core.clock.now();
    const isActive = !prompt.is_active;
    return this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).update(id, { is_active: isActive }, now))) throw notFound();
      await this.core.events.publish(
        {
          event: isActive ? 'prompt.enabled' : 'prompt.disabled',
          actor: user,
          subjectId: id,
          subjectType: 'prompt',
          data: { name: prompt.name, command: prompt.command },
        },
        trx,
      );
      return this.view({ ...prompt, is_active: isActive, updated_at: now }, await this.access.grantsOf(RESOURCE, id, trx));
    });
  }

  /** `DELETE /id/{id}/delete`: the prompt, its versions and its grants. */
  async delete(user: UserRecord, id: string): Promise<boolean> {
    const prompt = await this.requireWritable(user, id);
    return this.core.db.transaction().execute(async (trx) => {
      await this.access.deleteGrantsOf(RESOURCE, id, trx);
      const removed = await this.store(trx).delete(id);
      if (removed) {
        await this.core.events.publish(
          { event: 'prompt.deleted', actor: user, subjectId: id, subjectType: 'prompt', data: { name: prompt.name, command: prompt.command } },
          trx,
        );
      }
      return removed;
    }).finally(() => this.renderings.forget(id));
  }

  // ---- versions ----------------------------------------------------------------

  /** `GET /id/{id}/history?page=`: 20 versions a page (from 0), newest first, with their authors. */
  async history(user: UserRecord, id: string, page: number) {
    await this.requireReadable(user, id);
    const versions = await this.store().versions(id, page * HISTORY_PAGE_SIZE, HISTORY_PAGE_SIZE);
    const authors = await this.usersById(versions.map((v) => v.user_id));
    return versions.map((version) => ({ ...version, user: authors.get(version.user_id) ?? null }));
  }

  /** `GET /id/{id}/history/{history_id}`: one version of this prompt. */
  async version(user: UserRecord, id: string, versionId: string): Promise<PromptVersion> {
    await this.requireReadable(user, id);
    const version = await this.store().version(id, versionId);
    if (!version) throw notFound();
    return version;
  }

  /** `DELETE /id/{id}/history/{history_id}`: any version but the one in use; its children take its parent. */
  async deleteVersion(user: UserRecord, id: string, versionId: string): Promise<boolean> {
    const prompt = await this.requireWritable(user, id);
    if (prompt.version_id === versionId) throw badRequest(PROMPT_ERROR.ACTIVE_VERSION);
    const deleted = await this.core.db.transaction().execute((trx) => this.store(trx).deleteVersion(id, versionId));
    if (!deleted) throw notFound();
    return true;
  }
}
