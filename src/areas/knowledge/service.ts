import { randomUUID } from 'node:crypto';
import { type AccessGrant, RESOURCE_TYPES } from '../../core/access/grants.js';
import type { AccessService, SharingRule } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import type { Db } from '../../core/db/database.js';
import { WORKSPACE_PAGE_SIZE } from '../../core/db/workspace-search.js';
import { ERROR, HttpError, badRequest, notFound, unauthorized } from '../../core/http/errors.js';
import type { KnowledgeFileReach, ProcessedFile } from '../../core/knowledge.js';
import type { Retrieval } from '../../core/retrieval/retrieval.js';
import type { FileRecord, FilesService } from '../files/service.js';
import type { ModelsService } from '../models/service.js';
import type { UsersService } from '../users/service.js';
import type { FileSearchQuery, KnowledgeFileIdForm, KnowledgeFilesQuery, KnowledgeForm, SyncDiffForm } from './schemas.js';
import { type DirectoryRecord, type KnowledgeFileEntry, type KnowledgeRecord, KnowledgeStore } from './store.js';

type Json = Record<string, unknown>;

export const KNOWLEDGE_ERROR = {
  FILE_NOT_PROCESSED: 'Extracted content is not available for this file. Please ensure that the file is processed before proceeding.',
  EXTERNAL_READ_ONLY: 'External knowledge bases are read-only.',
  DIRECTORY_CREATE: 'Failed to create directory. A directory with this name may already exist at this level.',
  DIRECTORY_UPDATE: 'Failed to update directory. This may be caused by a naming conflict or circular move.',
  TARGET_DIRECTORY: 'Target directory not found.',
  EMPTY_NAME: 'The name must not be empty',
} as const;

const RESOURCE = RESOURCE_TYPES.knowledge;
export const KNOWLEDGE_SHARING: SharingRule = { publicPermission: 'sharing.public_knowledge' };
/** The directory update form's default parent: leave the parent as it is. */
const UNSET = '__unset__';
/** How long a pending-files stream polls (routers/knowledge.py: an hour, every 3 seconds). */
const PENDING_POLL_MS = 3000;
const PENDING_POLL_MAX_MS = 3600 * 1000;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);
const isExternal = (knowledge: KnowledgeRecord) => knowledge.meta?.source === 'external';

export interface KnowledgeView extends KnowledgeRecord {
  access_grants: AccessGrant[];
}

interface OwnerSummary {
  id: string;
  name: string;
  role: string;
  email: string;
}

/** FileMetadataResponse of a linked file. */
const fileMetadata = (file: KnowledgeFileEntry) => ({ id: file.id, hash: file.hash, meta: file.meta, created_at: file.created_at, updated_at: file.updated_at });

/**
 * Knowledge bases (`/api/v1/knowledge`): named sets of files, in folders, whose
 * extracted text is indexed in the retrieval store under the knowledge base's id.
 * Access as other workspace resources: owner, admins, grants. See docs/knowledge.md.
 */
export class KnowledgeService implements KnowledgeFileReach {
  constructor(
    private readonly core: Core,
    private readonly accessControl: AccessService,
    private readonly users: UsersService,
    private readonly files: FilesService,
    private readonly models: ModelsService,
    private readonly retrieval: Retrieval,
  ) {
    accessControl.registerPreviewCatalog('knowledge', { resourceType: RESOURCE, list: (db) => new KnowledgeStore(db).all() });
  }

  private store(db: Db = this.core.db): KnowledgeStore {
    return new KnowledgeStore(db);
  }

  // ---- rules ---------------------------------------------------------------

  /** Admins (whatever BYPASS_ADMIN_ACCESS_CONTROL says, as the reference's routes), owners and grant holders. */
  private async may(user: UserRecord, knowledge: KnowledgeRecord, permission: 'read' | 'write'): Promise<boolean> {
    return isAdmin(user) || (await this.accessControl.hasAccess(user, RESOURCE, knowledge.id, permission, knowledge.user_id));
  }

  /** What the response's `write_access` says: the owner, a bypassing admin, a write grant. */
  private writeAccess(user: UserRecord, knowledge: KnowledgeRecord): Promise<boolean> {
    return this.accessControl.hasAccess(user, RESOURCE, knowledge.id, 'write', knowledge.user_id);
  }

  /** The knowledge base, or the reference's answer for a missing one (`status`: 400 on most routes, 404 on some). */
  private async require(id: string, status: 400 | 404 = 400): Promise<KnowledgeRecord> {
    const knowledge = await this.store().byId(id);
    if (!knowledge) throw new HttpError(status, ERROR.NOT_FOUND);
    return knowledge;
  }

  private async requireReadable(user: UserRecord, id: string, options: { missing?: 400 | 404; denied?: 400 | 401 } = {}): Promise<KnowledgeRecord> {
    const knowledge = await this.require(id, options.missing);
    if (!(await this.may(user, knowledge, 'read'))) throw new HttpError(options.denied ?? 400, ERROR.ACCESS_PROHIBITED);
    return knowledge;
  }

  /**
   * A local knowledge base the user may change: 400 when missing, read-only (external)
   * or not writable, as most reference routes answer; the folder and sync routes answer
   * 404 and 403 (`strict`).
   */
  private async requireWritable(user: UserRecord, id: string, strict = false): Promise<KnowledgeRecord> {
    const knowledge = await this.require(id, strict ? 404 : 400);
    if (isExternal(knowledge)) throw badRequest(KNOWLEDGE_ERROR.EXTERNAL_READ_ONLY);
    if (!(await this.may(user, knowledge, 'write'))) throw new HttpError(strict ? 403 : 400, ERROR.ACCESS_PROHIBITED);
    return knowledge;
  }

  private async view(knowledge: KnowledgeRecord): Promise<KnowledgeView> {
    return { ...knowledge, access_grants: await this.accessControl.grantsOf(RESOURCE, knowledge.id) };
  }

  /** KnowledgeFilesResponse: the record, its files' metadata and the caller's write access. */
  private async withFiles(user: UserRecord, knowledge: KnowledgeRecord, extra: Json = {}) {
    const [view, files, write] = await Promise.all([this.view(knowledge), this.store().files(knowledge.id), this.writeAccess(user, knowledge)]);
    return { ...view, files: files.map(fileMetadata), write_access: write, ...extra };
  }

  private async owners(ids: string[]): Promise<Map<string, OwnerSummary>> {
    const users = await this.users.byIds([...new Set(ids)]);
    return new Map(users.map((u) => [u.id, { id: u.id, name: u.name, role: u.role, email: u.email }]));
  }

  private publish(db: Db, user: UserRecord, event: string, subjectId: string, data: Json): Promise<unknown> {
    return this.core.events.publish({ event, actor: user, subjectId, data }, db);
  }

  // ---- what other areas ask --------------------------------------------------

  /**
   * Whether the user may read (or write) knowledge base `id`; null when there is none
   * (the retrieval routes' check of a collection named by a knowledge base's id).
   */
  async access(user: UserRecord, id: string, permission: 'read' | 'write'): Promise<boolean | null> {
    const knowledge = await this.store().byId(id);
    return knowledge && this.may(user, knowledge, permission);
  }

  /** The knowledge base when the user may read it; null otherwise (the chat pipeline's `#` collections). */
  async readable(user: UserRecord, id: string): Promise<KnowledgeRecord | null> {
    const knowledge = await this.store().byId(id);
    return knowledge && (await this.may(user, knowledge, 'read')) ? knowledge : null;
  }

  /** The extracted text of each file of a knowledge base the user may read ("full context"). */
  async fileContents(user: UserRecord, id: string): Promise<{ id: string; filename: string; content: string }[]> {
    if (!(await this.readable(user, id))) return [];
    const files = await this.files.getMany(user, await this.store().fileIds(id));
    return files.map((file) => ({ id: file.id, filename: file.filename, content: typeof file.data?.content === 'string' ? file.data.content : '' }));
  }

  /** Deletes every knowledge base (admins; the retrieval routes' reset/db, which empties the store they index into). */
  async deleteAll(user: UserRecord): Promise<void> {
    if (!isAdmin(user)) throw unauthorized(ERROR.UNAUTHORIZED);
    const bases = await this.store().all();
    await this.core.db.transaction().execute(async (trx) => {
      for (const knowledge of bases) {
        await this.accessControl.deleteGrantsOf(RESOURCE, knowledge.id, trx);
        await this.store(trx).delete(knowledge.id);
      }
    });
    await this.retrieval.dropCollections(bases.map((knowledge) => knowledge.id));
  }

  /** The collections of the named knowledge bases the user may read (a model's `meta.knowledge`, at chat time). */
  async knowledgeCollectionsFor(user: UserRecord, ids: string[]): Promise<string[]> {
    const bases = (await this.store().byIds(ids)).filter((knowledge) => !isExternal(knowledge));
    const readable = await Promise.all(bases.map((knowledge) => this.may(user, knowledge, 'read')));
    return bases.filter((_, i) => readable[i]).map((knowledge) => knowledge.id);
  }

  async reaching(user: UserRecord, fileId: string, permission: 'read' | 'write'): Promise<{ id: string; user_id: string }[]> {
    const holding = await this.store().holdingFile(fileId);
    if (holding.length === 0) return [];
    const subject = await this.accessControl.subjectOf(user);
    return this.accessControl.filterAccessible(subject, RESOURCE, permission, holding);
  }

  async fileDeleting(fileId: string): Promise<void> {
    for (const knowledge of await this.store().holdingFile(fileId)) await this.retrieval.removeFile(knowledge.id, fileId);
  }

  async allFilesDeleting(): Promise<void> {
    await this.retrieval.dropCollections((await this.store().all()).filter((knowledge) => !isExternal(knowledge)).map((knowledge) => knowledge.id));
  }

  /**
   * A file's extraction ended: it is indexed in the knowledge bases it was added to
   * while pending, and linked to the one its upload named (`metadata.knowledge_id`)
   * when the uploader may write there, as the reference's upload handler does.
   */
  async fileProcessed(file: ProcessedFile): Promise<void> {
    if (file.data?.status !== 'completed') return;
    for (const knowledge of await this.store().holdingFile(file.id)) await this.index(knowledge.id, file);
    const wanted = isObject(file.meta?.data) ? file.meta.data.knowledge_id : undefined;
    if (typeof wanted !== 'string') return;
    const [knowledge, uploader] = await Promise.all([this.store().byId(wanted), this.users.byId(file.user_id)]);
    if (!knowledge || !uploader || isExternal(knowledge) || !(await this.may(uploader, knowledge, 'write'))) return;
    if (await this.store().hasFile(wanted, file.id)) return;
    await this.index(wanted, file);
    await this.link(uploader, knowledge, file.id, null);
  }

  // ---- indexing --------------------------------------------------------------

  /**
   * Indexes a file in a knowledge base's collection, replacing what it had there: the chunks of
   * the file's own collection (`file-<id>`) as they are, with their metadata (a PDF's pages) and
   * titles, embedded with the current model, as the reference's process_file copies them; or its
   * extracted text when it has none (retrieval was bypassed when it was processed).
   */
  private async index(collection: string, file: Pick<FileRecord, 'id' | 'user_id' | 'filename' | 'hash' | 'data'>): Promise<void> {
    const metadata = { file_id: file.id, name: file.filename, source: file.filename, created_by: file.user_id, hash: file.hash };
    const chunks = await this.retrieval.documents(`file-${file.id}`);
    if (chunks.length > 0) {
      const copies = chunks.map((chunk) => ({ text: chunk.text, title: chunk.title, metadata: { ...chunk.metadata, ...metadata } }));
      await this.retrieval.index(collection, copies, { replaceFileId: file.id, whole: true });
      return;
    }
    const content = typeof file.data?.content === 'string' ? file.data.content : '';
    await this.retrieval.index(collection, content.trim() ? [{ text: content, metadata }] : [], { replaceFileId: file.id });
  }

  /**
   * Indexes a file for a knowledge base before it is linked: a file still being extracted
   * is linked at once and indexed when extraction ends (fileProcessed); a failed one, or
   * one never processed, is refused as the reference refuses a file without data.
   */
  private async prepare(collection: string, file: FileRecord): Promise<void> {
    const status = file.data?.status;
    if (status === 'pending' || status === 'processing') return;
    if (status === 'failed' || typeof file.data?.content !== 'string') throw badRequest(KNOWLEDGE_ERROR.FILE_NOT_PROCESSED);
    try {
      await this.index(collection, file);
    } catch (error) {
      throw badRequest((error as Error).message);
    }
  }

  /** The folder a file form names, checked before anything is indexed: a folder of this knowledge base, or null for the top level. */
  private async folderOf(knowledgeId: string, directoryId: string | null | undefined): Promise<string | null> {
    return directoryId ? (await this.requireDirectory(knowledgeId, directoryId, 400)).id : null;
  }

  /** Links a file (in a folder from folderOf, or at the top level); true when it was not there yet. */
  private async link(user: UserRecord, knowledge: KnowledgeRecord, fileId: string, directoryId: string | null): Promise<boolean> {
    const now = this.core.clock.now();
    return this.core.db.transaction().execute(async (trx) => {
      const added = await this.store(trx).link({ id: randomUUID(), knowledge_id: knowledge.id, file_id: fileId, directory_id: directoryId, user_id: user.id }, now);
      if (added) await this.publish(trx, user, 'knowledge.file.added', fileId, { knowledge_id: knowledge.id, directory_id: directoryId });
      return added;
    });
  }

  /** A file the user may read (theirs, or shared with them), for adding to a knowledge base. */
  private async readableFile(user: UserRecord, fileId: string): Promise<FileRecord> {
    const file = await this.files.get(user, fileId);
    if (!file) throw badRequest(ERROR.NOT_FOUND);
    return file;
  }

  // ---- listings --------------------------------------------------------------

  /** `GET /` and `GET /search`: readable knowledge bases, 30 a page, newest change first, with owner, write access and file count. */
  async search(user: UserRecord, query: { query?: string; view_option?: string; source?: string; page?: number }) {
    const subject = await this.accessControl.subjectOf(user);
    const page = Math.max(1, query.page ?? 1);
    const result = await this.store().search({
      query: query.query,
      viewOption: query.view_option,
      source: query.source === 'local' || query.source === 'external' ? query.source : undefined,
      access: this.accessControl.accessFilter(subject, RESOURCE, 'read', { id: 'knowledge.id', owner: 'knowledge.user_id' }),
      userId: user.id,
      offset: (page - 1) * WORKSPACE_PAGE_SIZE,
      limit: WORKSPACE_PAGE_SIZE,
    });
    const ids = result.items.map((k) => k.id);
    const [grants, owners, writable, counts] = await Promise.all([
      this.accessControl.grantsOfMany(RESOURCE, ids),
      this.owners(result.items.map((k) => k.user_id)),
      this.accessControl.accessibleIds(subject, RESOURCE, 'write', ids),
      this.store().fileCounts(ids),
    ]);
    const items = result.items.map((knowledge) => ({
      ...knowledge,
      access_grants: grants.get(knowledge.id) ?? [],
      user: owners.get(knowledge.user_id) ?? null,
      write_access: knowledge.user_id === user.id || writable.has(knowledge.id),
      file_count: counts.get(knowledge.id) ?? 0,
    }));
    return { items, total: result.total };
  }

  /** `GET /search/files`: files by name (or text) across the knowledge bases the user may read, with their knowledge base. */
  async searchFiles(user: UserRecord, query: FileSearchQuery) {
    const subject = await this.accessControl.subjectOf(user);
    // The reference applies the grant filter here even to admins.
    const readable = this.accessControl.accessFilter({ ...subject, bypass: false }, RESOURCE, 'read', { id: 'knowledge.id', owner: 'knowledge.user_id' });
    const page = Math.max(1, query.page ?? 1);
    const result = await this.store().searchFilesAcross(readable, {
      query: query.query,
      includeContent: query.include_content ?? false,
      userId: user.id,
      offset: (page - 1) * WORKSPACE_PAGE_SIZE,
      limit: WORKSPACE_PAGE_SIZE,
    });
    const adders = await this.owners(result.items.map((m) => m.added_by));
    const bases = new Map((await this.store().byIds(result.items.map((m) => m.knowledge_id))).map((k) => [k.id, k]));
    const grants = await this.accessControl.grantsOfMany(RESOURCE, [...bases.keys()]);
    const items = result.items.map(({ knowledge_id, ...entry }) => {
      const knowledge = bases.get(knowledge_id);
      return { ...this.fileItem(entry, adders), collection: knowledge ? { ...knowledge, access_grants: grants.get(knowledge.id) ?? [] } : null };
    });
    return { items, directories: [], breadcrumbs: [], total: result.total };
  }

  private fileItem(entry: KnowledgeFileEntry, adders: Map<string, OwnerSummary>) {
    const { added_by, directory_id: _folder, ...file } = entry;
    return { ...file, user: adders.get(added_by) ?? null };
  }

  // ---- records ---------------------------------------------------------------

  /** `POST /create`: needs `workspace.knowledge`; grants filtered by the sharing permissions. */
  async create(user: UserRecord, form: KnowledgeForm, meta: Json | null = null): Promise<KnowledgeView> {
    if (!isAdmin(user) && !(await this.accessControl.hasPermission(user, 'workspace.knowledge'))) throw unauthorized(ERROR.UNAUTHORIZED);
    if (form.name.trim() === '') throw badRequest(KNOWLEDGE_ERROR.EMPTY_NAME);
    const grants = (await this.accessControl.grantsOfForm(user, form, RESOURCE, KNOWLEDGE_SHARING)) ?? [];
    const now = this.core.clock.now();
    const knowledge: KnowledgeRecord = { id: randomUUID(), user_id: user.id, name: form.name, description: form.description, meta, created_at: now, updated_at: now };
    return this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).insert(knowledge);
      const stored = await this.accessControl.replaceGrants(RESOURCE, knowledge.id, grants, trx);
      await this.publish(trx, user, 'knowledge.created', knowledge.id, { name: knowledge.name });
      return { ...knowledge, access_grants: stored };
    });
  }

  /** `GET /{id}`: admins, owners and readers (401 for anyone else, 404 when missing). */
  async get(user: UserRecord, id: string) {
    const knowledge = await this.requireReadable(user, id, { missing: 404, denied: 401 });
    return { ...(await this.view(knowledge)), write_access: await this.writeAccess(user, knowledge) };
  }

  /** `POST /{id}/update`: name and description; grants when the form names them. */
  async update(user: UserRecord, id: string, form: KnowledgeForm) {
    const knowledge = await this.require(id);
    if (!(await this.may(user, knowledge, 'write'))) throw badRequest(ERROR.ACCESS_PROHIBITED);
    if (form.name.trim() === '') throw badRequest(KNOWLEDGE_ERROR.EMPTY_NAME);
    const grants = await this.accessControl.grantsOfForm(user, form, RESOURCE, KNOWLEDGE_SHARING);
    const now = this.core.clock.now();
    const updated = await this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).update(id, { name: form.name, description: form.description }, now))) throw badRequest(ERROR.ID_TAKEN);
      if (grants) await this.accessControl.replaceGrants(RESOURCE, id, grants, trx);
      await this.publish(trx, user, 'knowledge.updated', id, { name: form.name });
      return { ...knowledge, name: form.name, description: form.description, updated_at: now };
    });
    return this.withFiles(user, updated);
  }

  /** `POST /{id}/access/update`: replaces the grants. */
  async updateAccess(user: UserRecord, id: string, accessGrants: unknown[]) {
    const knowledge = await this.require(id, 404);
    if (!(await this.may(user, knowledge, 'write'))) throw badRequest(ERROR.ACCESS_PROHIBITED);
    const grants = await this.accessControl.prepareGrants(user, accessGrants, KNOWLEDGE_SHARING);
    await this.core.db.transaction().execute(async (trx) => {
      await this.accessControl.replaceGrants(RESOURCE, id, grants, trx);
      await this.publish(trx, user, 'knowledge.access_updated', id, { name: knowledge.name });
    });
    return this.withFiles(user, knowledge);
  }

  /** `DELETE /{id}/delete`: the knowledge base, its links, folders and grants, its chunks, and its place in models' `meta.knowledge`. */
  async delete(user: UserRecord, id: string): Promise<boolean> {
    const knowledge = await this.require(id);
    if (!(await this.may(user, knowledge, 'write'))) throw badRequest(ERROR.ACCESS_PROHIBITED);
    const removed = await this.core.db.transaction().execute(async (trx) => {
      await this.accessControl.deleteGrantsOf(RESOURCE, id, trx);
      const gone = await this.store(trx).delete(id);
      if (gone) await this.publish(trx, user, 'knowledge.deleted', id, { name: knowledge.name });
      return gone;
    });
    await this.models.forgetKnowledge(id);
    if (isExternal(knowledge)) await this.dropExternalConnection(knowledge);
    else await this.retrieval.dropCollections([id]);
    return removed;
  }

  /** `POST /{id}/reset`: takes every file out (and the folders, unless `include_directories` is false); drops the chunks. */
  async reset(user: UserRecord, id: string, includeDirectories: boolean): Promise<KnowledgeView> {
    const knowledge = await this.requireWritable(user, id);
    await this.retrieval.dropCollections([id]);
    const now = this.core.clock.now();
    const updated = await this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      await store.unlinkAll(id);
      if (includeDirectories) await store.deleteDirectories(id);
      await store.update(id, {}, now);
      await this.publish(trx, user, 'knowledge.reset', id, { include_directories: includeDirectories });
      return { ...knowledge, updated_at: now };
    });
    return this.view(updated);
  }

  /** `POST /reindex` (admins): every knowledge base's collection rebuilt from its files' text. */
  async reindexAll(user: UserRecord): Promise<boolean> {
    if (!isAdmin(user)) throw unauthorized(ERROR.UNAUTHORIZED);
    const bases = (await this.store().all()).filter((knowledge) => !isExternal(knowledge));
    for (const knowledge of bases) {
      await this.retrieval.dropCollections([knowledge.id]);
      for (const fileId of await this.store().fileIds(knowledge.id)) {
        const file = await this.files.get(user, fileId);
        if (!file || typeof file.data?.content !== 'string') continue;
        await this.index(knowledge.id, file).catch((error) => this.core.log.error({ err: error, knowledge: knowledge.id, file: fileId }, 'reindexing a file failed'));
      }
    }
    await this.core.events.publish({ event: 'knowledge.reindexed', actor: user, subjectId: 'all', subjectType: 'knowledge', data: { count: bases.length } });
    return true;
  }

  /**
   * `POST /metadata/reindex` (admins): the reference embeds each knowledge base's name and
   * description for a semantic search of knowledge bases, which no route of the interface
   * queries; Parley keeps none, and answers with the count.
   */
  async reindexMetadata(): Promise<{ total: number; success: number }> {
    const total = (await this.store().all()).length;
    return { total, success: total };
  }

  /** `GET /{id}/export` (admins): a zip of the files' extracted text, one `.txt` each. */
  async export(admin: UserRecord, id: string): Promise<{ filename: string; entries: { name: string; content: string }[] }> {
    const knowledge = await this.require(id, 404);
    if (isExternal(knowledge)) throw badRequest(KNOWLEDGE_ERROR.EXTERNAL_READ_ONLY);
    const entries: { name: string; content: string }[] = [];
    for (const fileId of await this.store().fileIds(id)) {
      const file = await this.files.get(admin, fileId);
      const content = file && typeof file.data?.content === 'string' ? file.data.content : '';
      if (content) entries.push({ name: file!.filename.endsWith('.txt') ? file!.filename : `${file!.filename}.txt`, content });
    }
    const safe = [...knowledge.name].map((c) => (/[\p{L}\p{N} _-]/u.test(c) ? c : '_')).join('');
    return { filename: `${safe}.zip`, entries };
  }

  // ---- files -------------------------------------------------------------------

  /** `GET /{id}/files`: a page of files (admins may set `limit`), the folders at that level and the path to it. */
  async listFiles(user: UserRecord, id: string, query: KnowledgeFilesQuery) {
    await this.requireReadable(user, id);
    const page = Math.max(1, query.page ?? 1);
    const limit = isAdmin(user) && query.limit !== undefined ? Math.max(1, query.limit) : WORKSPACE_PAGE_SIZE;
    // An empty directory_id is the top level; absent, every folder.
    const directoryId = query.directory_id === undefined ? undefined : query.directory_id || null;
    const store = this.store();
    const result = await store.searchFiles(id, {
      query: query.query,
      includeContent: query.include_content ?? false,
      viewOption: query.view_option,
      orderBy: query.order_by,
      direction: query.direction,
      directoryId,
      userId: user.id,
      offset: (page - 1) * limit,
      limit,
    });
    const adders = await this.owners(result.items.map((f) => f.added_by));
    const folders = await store.directories(id);
    return {
      items: result.items.map((entry) => this.fileItem(entry, adders)),
      directories: folders.filter((d) => d.parent_id === (directoryId ?? null)),
      breadcrumbs: breadcrumbs(folders, directoryId ?? null),
      total: result.total,
    };
  }

  /** `GET /{id}/files/pending`: files uploaded for this knowledge base still being extracted. */
  async pendingFiles(user: UserRecord, id: string) {
    await this.requireReadable(user, id, { missing: 404 });
    return this.pending(id);
  }

  private async pending(id: string) {
    const rows = await this.store().pendingFiles(id);
    return rows.map((row) => ({ ...row, data: safeJson(row.data), meta: safeJson(row.meta), created_at: Number(row.created_at), updated_at: Number(row.updated_at) }));
  }

  /** The streamed form: the pending list every 3 seconds until it is empty (at most an hour). */
  async *pendingEvents(user: UserRecord, id: string, signal: AbortSignal, intervalMs = PENDING_POLL_MS): AsyncGenerator<string> {
    await this.requireReadable(user, id, { missing: 404 });
    const deadline = Date.now() + PENDING_POLL_MAX_MS;
    while (!signal.aborted && Date.now() < deadline) {
      const pending = await this.pending(id);
      yield `data: ${JSON.stringify(pending)}\n\n`;
      if (pending.length === 0) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }

  /** `POST /{id}/file/add`: indexes the file's text and links it (in a folder when `directory_id` names one). */
  async addFile(user: UserRecord, id: string, form: KnowledgeFileIdForm) {
    const knowledge = await this.requireWritable(user, id);
    const file = await this.readableFile(user, form.file_id);
    if (!file.data || Object.keys(file.data).length === 0) throw badRequest(KNOWLEDGE_ERROR.FILE_NOT_PROCESSED);
    const folder = await this.folderOf(id, form.directory_id);
    await this.prepare(id, file);
    await this.link(user, knowledge, file.id, folder);
    await this.indexIfFinishedMeanwhile(user, id, file);
    return this.withFiles(user, knowledge);
  }

  /**
   * A file linked while still being extracted is indexed by fileProcessed, which looks for
   * its links after the extraction is recorded; one whose extraction was recorded before the
   * link was made is indexed here, so neither order loses it.
   */
  private async indexIfFinishedMeanwhile(user: UserRecord, id: string, file: FileRecord): Promise<void> {
    const status = file.data?.status;
    if (status !== 'pending' && status !== 'processing') return;
    const current = await this.files.get(user, file.id);
    if (current?.data?.status === 'completed') await this.index(id, current);
  }

  /** `POST /{id}/file/update`: re-indexes a file of the knowledge base (its text changed). */
  async updateFile(user: UserRecord, id: string, form: KnowledgeFileIdForm) {
    const knowledge = await this.requireWritable(user, id);
    const file = await this.readableFile(user, form.file_id);
    if (!(await this.store().hasFile(id, file.id))) throw badRequest(ERROR.NOT_FOUND);
    await this.prepare(id, file);
    await this.core.db.transaction().execute((trx) => this.publish(trx, user, 'knowledge.file.updated', file.id, { knowledge_id: id }));
    return this.withFiles(user, knowledge);
  }

  /**
   * `POST /{id}/file/remove`: unlinks the file and drops its chunks; with `delete_file`
   * (the default) the file itself goes too when the caller owns it or is an admin.
   */
  async removeFile(user: UserRecord, id: string, fileId: string, deleteFile: boolean) {
    const knowledge = await this.requireWritable(user, id);
    const file = await this.files.get(user, fileId);
    if (!file || !(await this.store().hasFile(id, fileId))) throw badRequest(ERROR.NOT_FOUND);
    await this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).unlink(id, fileId);
      await this.publish(trx, user, 'knowledge.file.removed', fileId, { knowledge_id: id, delete_file: deleteFile });
    });
    await this.retrieval.removeFile(id, fileId);
    if (deleteFile && (file.user_id === user.id || isAdmin(user))) {
      await this.files.delete(user, fileId);
    }
    return this.withFiles(user, knowledge);
  }

  /**
   * `POST /{id}/files/batch/add`: every file must exist and be readable; those already in
   * the knowledge base are skipped; those that fail to index are reported in `warnings`.
   */
  async addFiles(user: UserRecord, id: string, forms: KnowledgeFileIdForm[]) {
    const knowledge = await this.requireWritable(user, id);
    const files = new Map((await this.files.getMany(user, forms.map((f) => f.file_id))).map((file) => [file.id, file]));
    const missing = forms.find((form) => !files.has(form.file_id));
    if (missing) throw badRequest(`File ${missing.file_id} not found`);
    const linked = await this.store().linkedAmong(id, [...files.keys()]);
    const errors: string[] = [];
    const seen = new Set<string>();
    for (const form of forms) {
      if (linked.has(form.file_id) || seen.has(form.file_id)) continue;
      seen.add(form.file_id);
      try {
        const file = files.get(form.file_id)!;
        const folder = await this.folderOf(id, form.directory_id);
        await this.prepare(id, file);
        await this.link(user, knowledge, form.file_id, folder);
        await this.indexIfFinishedMeanwhile(user, id, file);
      } catch (error) {
        errors.push(`${form.file_id}: ${error instanceof HttpError ? String(error.detail) : (error as Error).message}`);
      }
    }
    return this.withFiles(user, knowledge, errors.length > 0 ? { warnings: { message: 'Some files failed to process', errors } } : {});
  }

  // ---- folders -------------------------------------------------------------------

  private async requireDirectory(knowledgeId: string, directoryId: string, status: 400 | 404 = 404, detail: string = ERROR.NOT_FOUND): Promise<DirectoryRecord> {
    const directory = await this.store().directory(directoryId);
    if (!directory || directory.knowledge_id !== knowledgeId) throw new HttpError(status, detail);
    return directory;
  }

  /** `POST /{id}/dirs/create`: a folder at the top level or in `parent_id`; names are unique per level. */
  async createDirectory(user: UserRecord, id: string, form: { name: string; parent_id?: string | null }): Promise<DirectoryRecord> {
    await this.requireWritable(user, id, true);
    if (form.name.trim() === '' || /[/\\]/.test(form.name)) throw badRequest(KNOWLEDGE_ERROR.DIRECTORY_CREATE);
    if (form.parent_id) await this.requireDirectory(id, form.parent_id, 400, KNOWLEDGE_ERROR.DIRECTORY_CREATE);
    const now = this.core.clock.now();
    const directory: DirectoryRecord = { id: randomUUID(), knowledge_id: id, parent_id: form.parent_id ?? null, name: form.name, user_id: user.id, created_at: now, updated_at: now };
    return this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).createDirectory(directory))) throw badRequest(KNOWLEDGE_ERROR.DIRECTORY_CREATE);
      await this.publish(trx, user, 'knowledge.directory.created', directory.id, { knowledge_id: id, name: directory.name, parent_id: directory.parent_id });
      return directory;
    });
  }

  /** `POST /{id}/dirs/{dir_id}/update`: renames and/or moves a folder (`parent_id` '__unset__' or absent: stays; null: top level); never into itself. */
  async updateDirectory(user: UserRecord, id: string, dirId: string, form: { name?: string | null; parent_id?: string | null }): Promise<DirectoryRecord> {
    await this.requireWritable(user, id, true);
    const directory = await this.requireDirectory(id, dirId);
    const parentId = form.parent_id === undefined || form.parent_id === UNSET ? directory.parent_id : form.parent_id;
    const name = form.name ?? directory.name;
    if (name.trim() === '' || /[/\\]/.test(name)) throw badRequest(KNOWLEDGE_ERROR.DIRECTORY_UPDATE);
    if (parentId !== null && parentId !== directory.parent_id) {
      const folders = await this.store().directories(id);
      const byId = new Map(folders.map((d) => [d.id, d]));
      if (!byId.has(parentId)) throw badRequest(KNOWLEDGE_ERROR.DIRECTORY_UPDATE);
      // A folder cannot move under itself or one of its subfolders.
      for (let at: string | null = parentId, steps = 0; at && steps <= folders.length; at = byId.get(at)?.parent_id ?? null, steps++) {
        if (at === dirId) throw badRequest(KNOWLEDGE_ERROR.DIRECTORY_UPDATE);
      }
    }
    const now = this.core.clock.now();
    return this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).updateDirectory(dirId, { name, parent_id: parentId }, now))) throw badRequest(KNOWLEDGE_ERROR.DIRECTORY_UPDATE);
      await this.publish(trx, user, 'knowledge.directory.updated', dirId, { knowledge_id: id, name, parent_id: parentId });
      return { ...directory, name, parent_id: parentId, updated_at: now };
    });
  }

  /** `DELETE /{id}/dirs/{dir_id}/delete`: the folder and its subfolders; their files move to its parent (`move_files`, the default) or leave the knowledge base. */
  async deleteDirectory(user: UserRecord, id: string, dirId: string, moveFiles: boolean): Promise<{ status: true }> {
    await this.requireWritable(user, id, true);
    const directory = await this.requireDirectory(id, dirId);
    const removedFiles = await this.removeDirectories(id, [directory], moveFiles);
    await this.core.db.transaction().execute((trx) => this.publish(trx, user, 'knowledge.directory.deleted', dirId, { knowledge_id: id, move_files: moveFiles }));
    for (const fileId of removedFiles) await this.retrieval.removeFile(id, fileId);
    return { status: true };
  }

  /** Deletes folders with their subtrees; returns the files taken out of the knowledge base (when not moved). */
  private async removeDirectories(id: string, directories: DirectoryRecord[], moveFiles: boolean): Promise<string[]> {
    const folders = await this.store().directories(id);
    const now = this.core.clock.now();
    return this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      const removed: string[] = [];
      for (const directory of directories) {
        const subtree = subtreeOf(folders, directory.id);
        if (moveFiles) await store.moveFilesOut(subtree, directory.parent_id, now);
        else {
          const fileIds = await store.fileIdsIn(id, subtree);
          for (const fileId of fileIds) await store.unlink(id, fileId);
          removed.push(...fileIds);
        }
        await store.deleteDirectory(directory.id);
      }
      return removed;
    });
  }

  /** `POST /{id}/file/move`: a file of the knowledge base into a folder of it (null: the top level). */
  async moveFile(user: UserRecord, id: string, form: { file_id: string; directory_id?: string | null }): Promise<{ status: true }> {
    await this.requireWritable(user, id, true);
    if (!(await this.store().hasFile(id, form.file_id))) throw notFound();
    if (form.directory_id) await this.requireDirectory(id, form.directory_id, 404, KNOWLEDGE_ERROR.TARGET_DIRECTORY);
    const directoryId = form.directory_id || null;
    await this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).moveFile(id, form.file_id, directoryId, this.core.clock.now()))) throw notFound();
      await this.publish(trx, user, 'knowledge.file.moved', form.file_id, { knowledge_id: id, directory_id: form.directory_id ?? null });
    });
    return { status: true };
  }

  // ---- sync ------------------------------------------------------------------------

  /**
   * `POST /{id}/sync/diff`: compares a client folder's manifest (path, name, SHA-256)
   * with the knowledge base: files to upload, to replace, to remove; folders to make and
   * to remove; and the folder ids by path.
   */
  async syncDiff(user: UserRecord, id: string, form: SyncDiffForm) {
    await this.requireWritable(user, id, true);
    const store = this.store();
    const [files, folders] = await Promise.all([store.files(id), store.directories(id)]);
    const pathOf = folderPaths(folders);
    const folderByPath = new Map([...pathOf].map(([folderId, path]) => [path, folderId]));
    const indexed = new Map<string, { file_id: string; checksum: unknown }>();
    for (const file of files) {
      const folder = file.directory_id ? (pathOf.get(file.directory_id) ?? '') : '';
      indexed.set(`${folder}\u0000${file.filename}`, { file_id: file.id, checksum: file.meta?.file_hash });
    }
    const added: Json[] = [];
    const modified: Json[] = [];
    let unmodified = 0;
    const seen = new Set<string>();
    const required = new Set<string>();
    for (const entry of form.manifest) {
      const key = `${entry.path}\u0000${entry.filename}`;
      seen.add(key);
      const known = indexed.get(key);
      if (!known) added.push({ filename: entry.filename, path: entry.path });
      else if (known.checksum !== entry.checksum) modified.push({ filename: entry.filename, path: entry.path, stale_file_id: known.file_id });
      else unmodified++;
      if (entry.path) {
        const segments = entry.path.split('/');
        for (let depth = 1; depth <= segments.length; depth++) required.add(segments.slice(0, depth).join('/'));
      }
    }
    const deleted = [...indexed].filter(([key]) => !seen.has(key)).map(([key, info]) => ({ file_id: info.file_id, filename: key.split('\u0000')[1] }));
    const depth = (path: string) => path.split('/').length;
    return {
      added,
      modified,
      deleted,
      mkdir: [...required].filter((path) => !folderByPath.has(path)).sort((a, b) => depth(a) - depth(b)),
      rmdir: [...folderByPath].filter(([path]) => !required.has(path)).map(([, folderId]) => folderId),
      unmodified_count: unmodified,
      directory_map: Object.fromEntries(folderByPath),
    };
  }

  /** `POST /{id}/sync/cleanup`: removes the stale files (deleting those the caller owns) and the orphaned folders. */
  async syncCleanup(user: UserRecord, id: string, form: { file_ids: string[]; dir_ids?: string[] }): Promise<{ status: true }> {
    await this.requireWritable(user, id, true);
    for (const fileId of form.file_ids) {
      const file = await this.files.get(user, fileId);
      if (!file || !(await this.store().unlink(id, fileId))) continue;
      await this.retrieval.removeFile(id, fileId);
      if (file.user_id === user.id || isAdmin(user)) {
        await this.files.delete(user, fileId);
      }
    }
    const folders = await this.store().directories(id);
    const byId = new Map(folders.map((d) => [d.id, d]));
    const doomed = (form.dir_ids ?? []).map((dirId) => byId.get(dirId)).filter((d): d is DirectoryRecord => d !== undefined);
    const removed = await this.removeDirectories(id, doomed.reverse(), false);
    for (const fileId of removed) await this.retrieval.removeFile(id, fileId);
    return { status: true };
  }

  // ---- external knowledge (used by external.ts) -------------------------------------

  /** An external knowledge base (admins; `meta.source` 'external'): created like any, then marked. */
  async createExternal(user: UserRecord, form: { name: string; description: string; access_grants?: Json[] | null }, meta: Json): Promise<KnowledgeView> {
    return this.create(user, { name: form.name.trim(), description: form.description, access_grants: form.access_grants ?? [] }, meta);
  }

  /** Replaces an external knowledge base's name, description, meta and (when given) grants. */
  async updateExternal(user: UserRecord, id: string, form: { name: string; description: string; access_grants?: Json[] | null }, meta: Json): Promise<KnowledgeView> {
    const knowledge = await this.requireExternal(id);
    const grants = form.access_grants ? await this.accessControl.prepareGrants(user, form.access_grants, KNOWLEDGE_SHARING) : null;
    const now = this.core.clock.now();
    const updated = { ...knowledge, name: form.name.trim(), description: form.description, meta, updated_at: now };
    await this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).update(id, { name: updated.name, description: updated.description, meta }, now))) throw notFound();
      if (grants) await this.accessControl.replaceGrants(RESOURCE, id, grants, trx);
      await this.publish(trx, user, 'knowledge.updated', id, { name: updated.name });
    });
    return this.view(updated);
  }

  async requireExternal(id: string): Promise<KnowledgeRecord> {
    const knowledge = await this.store().byId(id);
    if (!knowledge || !isExternal(knowledge)) throw notFound();
    return knowledge;
  }

  /** How many knowledge bases use an external connection. */
  async externalUses(connectionId: string): Promise<number> {
    return (await this.store().all()).filter((k) => isObject(k.meta?.external) && k.meta.external.connection_id === connectionId).length;
  }

  /** Set by the external connections (external.ts): drops a deleted external knowledge base's connection. */
  onExternalDeleted: ((knowledge: KnowledgeRecord) => Promise<void>) | null = null;

  private async dropExternalConnection(knowledge: KnowledgeRecord): Promise<void> {
    await this.onExternalDeleted?.(knowledge);
  }
}

function safeJson(text: string | null): Json | null {
  if (!text) return null;
  try {
    const value = JSON.parse(text) as unknown;
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

/** A folder's id and those of every folder below it. */
function subtreeOf(folders: DirectoryRecord[], rootId: string): string[] {
  const ids = [rootId];
  for (let i = 0; i < ids.length; i++) for (const folder of folders) if (folder.parent_id === ids[i]) ids.push(folder.id);
  return ids;
}

/** The folders from the top level down to `directoryId` (empty at the top level). */
function breadcrumbs(folders: DirectoryRecord[], directoryId: string | null): DirectoryRecord[] {
  const byId = new Map(folders.map((d) => [d.id, d]));
  const path: DirectoryRecord[] = [];
  const seen = new Set<string>();
  for (let at = directoryId; at && !seen.has(at); at = byId.get(at)?.parent_id ?? null) {
    seen.add(at);
    const folder = byId.get(at);
    if (!folder) break;
    path.unshift(folder);
  }
  return path;
}

/** Each folder's path ('docs/api') by id. */
function folderPaths(folders: DirectoryRecord[]): Map<string, string> {
  const byId = new Map(folders.map((d) => [d.id, d]));
  const paths = new Map<string, string>();
  for (const folder of folders) {
    const segments: string[] = [];
    const seen = new Set<string>();
    for (let at: DirectoryRecord | undefined = folder; at && !seen.has(at.id); at = at.parent_id ? byId.get(at.parent_id) : undefined) {
      seen.add(at.id);
      segments.unshift(at.name);
    }
    paths.set(folder.id, segments.join('/'));
  }
  return paths;
}
