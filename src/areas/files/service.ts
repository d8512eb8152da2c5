import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Readable } from 'node:stream';
import { RESOURCE_TYPES } from '../../core/access/grants.js';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import type { KnowledgeFileReach } from '../../core/knowledge.js';
import { isUniqueViolation } from '../../core/db/database.js';
import { ERROR, HttpError, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import { LocalStorage } from '../../core/storage/local.js';
import { createStorage } from '../../core/storage/provider.js';
import type { ByteRange, Storage } from '../../core/storage/storage.js';
import type { ChatsService } from '../chats/service.js';
import type { ModelsService } from '../models/service.js';
import type { UsersService } from '../users/service.js';
import type { Retrieval } from '../../core/retrieval/retrieval.js';
import { ALLOWED_FILE_EXTENSIONS, BYPASS_EMBEDDING_AND_RETRIEVAL, FILE_MAX_SIZE } from '../../core/retrieval/settings.js';
import type { SpeechTranscriber } from './extraction.js';
import type { Extracted } from './extraction-shared.js';
import { FileProcessing, readProcessingOptions } from './processing.js';
import { type FilePatch, type FileRecord, FileStore } from './store.js';

export type { FileRecord } from './store.js';

type Json = Record<string, unknown>;

/** FileForm: a record for bytes already stored (`Files.insert_new_file`). */
export interface FileForm {
  id: string;
  hash?: string | null;
  filename: string;
  path: string;
  data?: Json | null;
  meta?: Json | null;
}

/** An upload (`upload_file_handler`): bytes with the name and type the client gave. */
export interface Upload {
  filename: string;
  content: Readable | Buffer;
  contentType: string | null;
  /** The upload's own metadata, kept as `meta.data`: an object, or its JSON text as a form sends it. */
  metadata?: Json | string | null;
  /** Queue content extraction (`?process=true`, the default). */
  process?: boolean;
}

/** Bytes of an upload in storage, not yet recorded. */
export interface ReceivedUpload {
  id: string;
  name: string;
  path: string;
  size: number;
  sha256: string;
  contentType: string | null;
  process: boolean;
}

/** What `GET /files/{id}/content` sends. */
export interface FileContent {
  name: string;
  contentType: string | null;
  size: number;
  /** The bytes, whole or the range asked for. */
  open: (range?: ByteRange) => Readable;
}

/** An upload's answer: the record, with `status: true` when it was queued for processing (as the reference). */
export type UploadResult = FileRecord & { status?: boolean };

const EMPTY_CONTENT = 'The content provided is empty. Please ensure that there is text or data present before proceeding.';
/** Longest stored name most file systems take (bytes); longer names are stored as `<id>.<ext>`. */
const MAX_STORED_NAME_BYTES = 255;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Files without their extracted text, for `?content=false`. */
function withoutContent(file: FileRecord): FileRecord {
  if (!file.data || !('content' in file.data)) return file;
  const { content: _content, ...data } = file.data;
  return { ...file, data };
}

/** A glob (`*.txt`, `report-?`) as a LIKE pattern with `\` escaping; null when it matches everything. */
function globToLike(glob: string): string | null {
  const pattern = glob.replace(/\\/g, '\\\\').replace(/%/g, '\\%').replace(/_/g, '\\_').replace(/\*/g, '%').replace(/\?/g, '_');
  return pattern === '%' ? null : pattern;
}

/**
 * A client's file name as a safe name: its last path segment (either slash),
 * without control characters; a 400 when nothing is left.
 */
function safeName(filename: string): string {
  const name = path.posix.basename(filename.replace(/\\/g, '/')).replace(/[\u0000-\u001f\u007f]/g, '');
  if (!name || name === '.' || name === '..') throw badRequest(ERROR.DEFAULT(`Invalid file name ${JSON.stringify(filename.slice(0, 100))}`));
  return name;
}

/** The stored name of an upload: `<id>_<name>`, or `<id>.<ext>` when that is too long or the extension is odd. */
function storedName(id: string, name: string): string {
  const full = `${id}_${name}`;
  if (Buffer.byteLength(full) <= MAX_STORED_NAME_BYTES) return full;
  const extension = path.extname(name).slice(1).toLowerCase();
  return /^[a-z0-9]{1,16}$/.test(extension) ? `${id}.${extension}` : id;
}

/** What the files area asks of channels (wired in app.ts): whether the user reads a channel the file was posted in. */
export interface ChannelFileReach {
  grantsFileRead(user: UserRecord, fileId: string): Promise<boolean>;
}

/**
 * Files: stored bytes (DATA_DIR/uploads, behind core/storage) and their
 * records. A file is readable by its owner, admins, holders of a read grant
 * on it, readers of a workspace model that attaches it, readers of a knowledge
 * base holding it, those who may open a shared chat showing it and readers of a
 * channel it was posted in; changing it
 * takes ownership, admin, a write grant, or write on a model or knowledge base of
 * the file's owner that holds it. Uploads queue content extraction (processing.ts).
 * The plugin compatibility layer (`open_webui.models.files`,
 * `open_webui.storage.provider`) calls this as the plugin's user. See
 * docs/files.md and docs/plugin-compat.md.
 */
export class FilesService {
  /** Where the bytes are kept: the reference's UPLOAD_DIR. */
  readonly uploadDir: string;
  /** Where uploads go (STORAGE_PROVIDER). */
  readonly storage: Storage;
  /** The upload folder itself: plugins' raw bytes, and the staging of S3 uploads. */
  private readonly local: LocalStorage;
  readonly processing: FileProcessing;
  private knowledge: KnowledgeFileReach | null = null;
  private channels: ChannelFileReach | null = null;

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly users: UsersService,
    private readonly models: ModelsService,
    private readonly chats: ChatsService,
    private readonly retrieval: Retrieval,
  ) {
    this.uploadDir = path.join(path.resolve(core.env.dataDir), 'uploads');
    this.local = new LocalStorage(this.uploadDir);
    this.storage = createStorage(core.env.raw, this.local);
    this.processing = new FileProcessing(core, this.storage, readProcessingOptions(core.env.raw), (file, content) => this.index(file, content), (file) => this.knowledge?.fileProcessed(file));
  }

  /** Knowledge bases, built after this service (app.ts). */
  connect(knowledge: KnowledgeFileReach): void {
    this.knowledge = knowledge;
  }

  /** Speech-to-text, built after this service (app.ts): uploaded recordings are transcribed. */
  connectSpeech(transcriber: SpeechTranscriber): void {
    this.processing.connectSpeech(transcriber);
  }

  /** Channels, built after this service (app.ts): a file posted in a channel is readable by its readers. */
  connectChannels(channels: ChannelFileReach): void {
    this.channels = channels;
  }

  /**
   * Indexes a file's text into its collection `file-<id>`, replacing what it held, with the
   * reference's chunk metadata (a PDF page by page, each page's chunks with its `page`,
   * `page_label` and `total_pages`, so citations name the page); nothing when
   * BYPASS_EMBEDDING_AND_RETRIEVAL. An embedding engine that fails throws its reason (the file
   * is then `failed`).
   */
  async index(file: FileRecord, extracted: Extracted): Promise<void> {
    if (this.core.settings.get(BYPASS_EMBEDDING_AND_RETRIEVAL)) return;
    const collection = `file-${file.id}`;
    const metadata = { ...(file.meta ?? {}), name: file.filename, created_by: file.user_id, file_id: file.id, source: file.filename };
    const documents = extracted.pages
      ? extracted.pages.map((page) => ({ text: page.text, metadata: { ...page.metadata, ...metadata }, outline: page.outline }))
      : [{ text: extracted.text, metadata, outline: extracted.outline }];
    await this.retrieval.index(collection, documents, { replaceFileId: file.id });
  }

  private store(): FileStore {
    return new FileStore(this.core.db);
  }

  private async canRead(user: UserRecord, file: FileRecord): Promise<boolean> {
    return (
      file.user_id === user.id ||
      isAdmin(user) ||
      (await this.access.hasAccess(user, RESOURCE_TYPES.file, file.id, 'read', file.user_id)) ||
      (await this.models.attachingFile(user, file.id, 'read')).length > 0 ||
      (await this.chats.sharedChatShowsFile(user, file.id)) ||
      ((await this.knowledge?.reaching(user, file.id, 'read')) ?? []).length > 0 ||
      ((await this.channels?.grantsFileRead(user, file.id)) ?? false)
    );
  }

  /**
   * A model confers write on a file only when the model's owner owns the file
   * too, as the reference: a file someone may only read, attached to a model
   * they control, must not become theirs to change.
   */
  private async canWrite(user: UserRecord, file: FileRecord): Promise<boolean> {
    return (
      file.user_id === user.id ||
      isAdmin(user) ||
      (await this.access.hasAccess(user, RESOURCE_TYPES.file, file.id, 'write', file.user_id)) ||
      (await this.models.attachingFile(user, file.id, 'write')).some((model) => model.user_id === file.user_id) ||
      ((await this.knowledge?.reaching(user, file.id, 'write')) ?? []).some((knowledge) => knowledge.user_id === file.user_id)
    );
  }

  /** Pending users may read what is theirs but store nothing (the upload route takes a verified user). */
  private requireVerified(user: UserRecord): void {
    if (user.role !== 'user' && !isAdmin(user)) throw forbidden(ERROR.ACCESS_PROHIBITED);
  }

  /** Whose files a listing shows: everyone's for admins while BYPASS_ADMIN_ACCESS_CONTROL holds, else the user's. */
  private listedOwner(user: UserRecord): string | null {
    return isAdmin(user) && this.core.env.bypassAdminAccessControl ? null : user.id;
  }

  /** The file if the user may read it; null when it does not exist or they may not. */
  async get(user: UserRecord, id: string): Promise<FileRecord | null> {
    const file = await this.store().byId(id);
    return file && (await this.canRead(user, file)) ? file : null;
  }

  /** The files among `ids` the user may read, newest change first. */
  async getMany(user: UserRecord, ids: string[]): Promise<FileRecord[]> {
    const files = await this.store().byIds(ids);
    const readable = await Promise.all(files.map((file) => this.canRead(user, file)));
    return files.filter((_, index) => readable[index]);
  }

  /** `GET /api/v1/files/{id}`: 404 for a missing file and for one the user may not read, as the reference. */
  async require(user: UserRecord, id: string): Promise<FileRecord> {
    const file = await this.get(user, id);
    if (!file) throw notFound(ERROR.NOT_FOUND);
    return file;
  }

  /** Whether the user may read (or change) the file: the reference's has_access_to_file, for retrieval's collections. */
  async mayAccess(user: UserRecord, id: string, access: 'read' | 'write'): Promise<boolean> {
    const file = await this.store().byId(id);
    return file !== null && (access === 'read' ? await this.canRead(user, file) : await this.canWrite(user, file));
  }

  /**
   * Records what retrieval's process routes did with a file: its text and status in `data`
   * (merged into the newest record), its hash, and the collection it went into (`meta.collection_name`).
   */
  async recordProcessing(id: string, outcome: { content?: string; status: 'completed' | 'failed'; error?: string; hash: string | null; collectionName?: string }): Promise<void> {
    const current = await this.store().byId(id);
    if (!current) return;
    const { error: _error, ...kept } = current.data ?? {};
    const data = { ...kept, ...(outcome.content !== undefined ? { content: outcome.content } : {}), status: outcome.status, ...(outcome.error ? { error: outcome.error } : {}) };
    const meta = outcome.collectionName ? { ...(current.meta ?? {}), collection_name: outcome.collectionName } : undefined;
    await this.store().update(id, { data, hash: outcome.hash, ...(meta ? { meta } : {}) }, this.core.clock.now());
  }

  /** Every uploaded file's bytes in the local upload folder (the reference's reset/uploads); records stay. */
  async deleteLocalUploads(): Promise<void> {
    await this.local.deleteAll();
  }

  /** A file the user may change; 404 when they may not even read it, as the reference. */
  private async requireWritable(user: UserRecord, id: string): Promise<FileRecord> {
    const file = await this.store().byId(id);
    if (!file || !(await this.canWrite(user, file))) throw notFound(ERROR.NOT_FOUND);
    return file;
  }

  /** `GET /`: a page of 50, newest change first. */
  async list(user: UserRecord, page: number, content: boolean): Promise<{ items: FileRecord[]; total: number }> {
    const pageSize = 50;
    const result = await this.store().list(this.listedOwner(user), (page - 1) * pageSize, pageSize);
    return content ? result : { ...result, items: result.items.map(withoutContent) };
  }

  /** `GET /search`: names matching a glob, case-insensitively; 404 when none, as the reference. */
  async search(user: UserRecord, filename: string, options: { skip: number; limit: number; content: boolean }): Promise<FileRecord[]> {
    const files = await this.store().search(this.listedOwner(user), globToLike(filename), options.skip, options.limit);
    if (files.length === 0) throw notFound('No files found matching the pattern.');
    return options.content ? files : files.map(withoutContent);
  }

  /** `GET /count`. */
  count(user: UserRecord): Promise<number> {
    return this.store().count(this.listedOwner(user));
  }

  /** A stored path inside the upload folder, or a 400. */
  private uploadPath(stored: string): string {
    try {
      return this.local.resolve(stored);
    } catch {
      throw badRequest(`The path ${stored} is not in the upload folder`);
    }
  }

  /**
   * A record for bytes already in the upload folder, owned by the user
   * (`Files.insert_new_file`); null when the id is taken, as the reference's
   * insert answers a failure.
   */
  async insert(user: UserRecord, form: FileForm): Promise<FileRecord | null> {
    this.requireVerified(user);
    const now = this.core.clock.now();
    const file: FileRecord = {
      id: form.id,
      user_id: user.id,
      hash: form.hash ?? null,
      filename: form.filename,
      path: this.uploadPath(form.path),
      data: form.data ?? {},
      meta: form.meta ?? {},
      created_at: now,
      updated_at: now,
    };
    try {
      await this.store().insert(file);
    } catch (error) {
      if (isUniqueViolation(error)) return null;
      throw error;
    }
    return file;
  }

  /** Sets `hash` and merges `data` and `meta` over the stored ones; null when the user cannot see the file. */
  async update(user: UserRecord, id: string, patch: FilePatch): Promise<FileRecord | null> {
    const file = await this.get(user, id);
    if (!file) return null;
    if (!(await this.canWrite(user, file))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    const changes: FilePatch = {};
    if (patch.hash !== undefined) changes.hash = patch.hash;
    if (isObject(patch.data)) changes.data = { ...(file.data ?? {}), ...patch.data };
    if (isObject(patch.meta)) changes.meta = { ...(file.meta ?? {}), ...patch.meta };
    const now = this.core.clock.now();
    await this.store().update(id, changes, now);
    return { ...file, ...changes, updated_at: now };
  }

  /** FILE_MAX_SIZE in bytes; null: no limit. */
  private maxBytes(): { bytes: number; label: string } | null {
    const maxSize = this.core.settings.get(FILE_MAX_SIZE);
    return typeof maxSize === 'number' && maxSize > 0 ? { bytes: maxSize * 1024 * 1024, label: `${maxSize} MB` } : null;
  }

  /**
   * Stores an upload's bytes as they arrive, as the reference's upload handler
   * checks them: a safe name, an allowed extension (when processed), at most
   * FILE_MAX_SIZE (413, nothing kept), not empty. `record` makes it a file.
   */
  async receive(user: UserRecord, upload: { filename: string; content: Readable; contentType: string | null; process: boolean }): Promise<ReceivedUpload> {
    this.requireVerified(user);
    const name = safeName(upload.filename);
    const extension = path.extname(name).slice(1).toLowerCase();
    const allowed = this.core.settings.get(ALLOWED_FILE_EXTENSIONS).filter(Boolean);
    if (upload.process && allowed.length > 0 && !allowed.includes(extension)) {
      throw badRequest(ERROR.DEFAULT(`File type ${extension} is not allowed`));
    }
    const id = randomUUID();
    const limit = this.maxBytes();
    const stored = await this.storage.put(storedName(id, name), upload.content, {
      maxBytes: limit?.bytes,
      tooLarge: () => new HttpError(413, ERROR.FILE_TOO_LARGE(limit?.label)),
    });
    if (stored.size === 0) {
      await this.storage.delete(stored.path);
      throw badRequest(EMPTY_CONTENT);
    }
    return { id, name, path: stored.path, size: stored.size, sha256: stored.sha256, contentType: upload.contentType, process: upload.process };
  }

  /** Drops received bytes that will not be recorded (the rest of the form failed). */
  async discard(received: ReceivedUpload): Promise<void> {
    await this.storage.delete(received.path);
  }

  /**
   * Records received bytes as the user's file with name, type, size and SHA-256
   * in `meta` and the form's metadata as `meta.data`; queues extraction when
   * asked (`data.status: pending`). Emits `file.uploaded`.
   */
  async record(user: UserRecord, received: ReceivedUpload, metadata: Json | string | null | undefined): Promise<UploadResult> {
    let formMetadata: Json = {};
    try {
      const parsed = typeof metadata === 'string' ? (metadata.trim() ? JSON.parse(metadata) : null) : metadata;
      if (parsed !== null && parsed !== undefined && !isObject(parsed)) throw new Error('not an object');
      formMetadata = parsed ?? {};
    } catch {
      await this.discard(received);
      throw badRequest(ERROR.DEFAULT('Invalid metadata format'));
    }
    const now = this.core.clock.now();
    const file: FileRecord = {
      id: received.id,
      user_id: user.id,
      hash: null,
      filename: received.name,
      path: received.path,
      data: received.process ? { status: 'pending' } : {},
      meta: {
        name: received.name,
        content_type: received.contentType,
        size: received.size,
        file_hash: typeof formMetadata.file_hash === 'string' ? formMetadata.file_hash : received.sha256,
        data: formMetadata,
      },
      created_at: now,
      updated_at: now,
    };
    try {
      await this.core.db.transaction().execute(async (trx) => {
        const store = new FileStore(trx);
        await store.insert(file);
        if (received.process) await store.addJob(file.id, now);
        await this.core.events.publish(
          { event: 'file.uploaded', actor: user, subjectId: file.id, subjectType: 'file', data: { filename: file.filename, content_type: received.contentType } },
          trx,
        );
      });
    } catch (error) {
      await this.discard(received);
      throw error;
    }
    if (!received.process) return file;
    this.processing.kick();
    return { status: true, ...file };
  }

  /**
   * A file carried over from another install (`parley import-openwebui`): its bytes stored,
   * its record kept (id, owner, name, meta, times) and its extraction queued again, so it is
   * re-extracted and re-indexed as an upload is (in the knowledge bases linked to it too).
   */
  async restore(file: Omit<FileRecord, 'path' | 'data'>, content: Readable): Promise<void> {
    const stored = await this.storage.put(storedName(file.id, safeName(file.filename)), content);
    const record: FileRecord = { ...file, path: stored.path, data: { status: 'pending' } };
    try {
      await this.core.db.transaction().execute(async (trx) => {
        const store = new FileStore(trx);
        await store.insert(record);
        await store.addJob(record.id, this.core.clock.now());
      });
    } catch (error) {
      await this.storage.delete(stored.path);
      throw error;
    }
    this.processing.kick();
  }

  /** An upload in one call (plugins, `Storage.upload_file` + insert). */
  async upload(user: UserRecord, upload: Upload): Promise<UploadResult> {
    const content = Buffer.isBuffer(upload.content) ? Readable.from([upload.content]) : upload.content;
    const process = upload.process ?? false;
    const received = await this.receive(user, { filename: upload.filename, content, contentType: upload.contentType, process });
    return this.record(user, received, upload.metadata);
  }

  /** Files waiting for or in content extraction, over every instance (for the metrics). */
  processingQueue(): Promise<{ pending: number; running: number }> {
    return this.store().jobCounts();
  }

  /** `GET /{id}/process/status`: the processing status (`pending` when none was recorded, as the reference). */
  async processStatus(user: UserRecord, id: string): Promise<{ status: string; error?: unknown }> {
    const file = await this.require(user, id);
    const data = file.data ?? {};
    const status = typeof data.status === 'string' ? data.status : 'pending';
    return status === 'failed' ? { status, error: data.error ?? null } : { status };
  }

  /**
   * The status events the streamed form sends, one a second until processing
   * ends, as the reference: `{status}`, with `error` when failed; `not_found`
   * when the file went; nothing more for a file that was never processed.
   */
  async *processStatusEvents(user: UserRecord, id: string, signal: AbortSignal, intervalMs = 1000): AsyncGenerator<string> {
    await this.require(user, id);
    const deadline = Date.now() + 2 * 3600 * 1000;
    while (!signal.aborted && Date.now() < deadline) {
      const file = await this.store().byId(id);
      if (!file) {
        yield `data: ${JSON.stringify({ status: 'not_found' })}\n\n`;
        return;
      }
      const data = file.data ?? {};
      if (typeof data.status !== 'string') return;
      yield `data: ${JSON.stringify(data.status === 'failed' ? { status: data.status, error: data.error ?? null } : { status: data.status })}\n\n`;
      if (data.status === 'completed' || data.status === 'failed') return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }

  /** `GET /{id}/data/content`: the extracted text. */
  async dataContent(user: UserRecord, id: string): Promise<{ content: string }> {
    const file = await this.require(user, id);
    const content = file.data?.content;
    return { content: typeof content === 'string' ? content : '' };
  }

  /**
   * `POST /{id}/data/content/update`: replaces the extracted text (at most
   * FILE_MAX_SIZE) and marks the file processed. Emits `file.content_updated`.
   */
  async updateDataContent(user: UserRecord, id: string, content: string): Promise<{ content: string }> {
    const file = await this.requireWritable(user, id);
    const limit = this.maxBytes();
    if (limit && Buffer.byteLength(content) > limit.bytes) throw new HttpError(413, ERROR.FILE_TOO_LARGE(limit.label));
    const now = this.core.clock.now();
    const { error: _error, ...kept } = file.data ?? {};
    const data = { ...kept, content, status: 'completed' };
    await this.core.db.transaction().execute(async (trx) => {
      await new FileStore(trx).update(id, { data }, now);
      await this.core.events.publish(
        { event: 'file.content_updated', actor: user, subjectId: id, subjectType: 'file', data: { content_preview: content.slice(0, 300) } },
        trx,
      );
    });
    // The reference re-processes the file with the new text (its chunks replaced).
    await this.index(file, { text: content }).catch((error) => {
      throw new HttpError(400, (error as Error).message);
    });
    return { content };
  }

  /** `POST /{id}/rename`: the new name in `filename` and `meta.name`. Emits `file.renamed`. */
  async rename(user: UserRecord, id: string, filename: string): Promise<FileRecord> {
    const file = await this.requireWritable(user, id);
    const name = safeName(filename);
    const now = this.core.clock.now();
    const meta = { ...(file.meta ?? {}), name };
    await this.core.db.transaction().execute(async (trx) => {
      await new FileStore(trx).update(id, { filename: name, meta }, now);
      await this.core.events.publish({ event: 'file.renamed', actor: user, subjectId: id, subjectType: 'file', data: { filename: name } }, trx);
    });
    return { ...file, filename: name, meta, updated_at: now };
  }

  /** `DELETE /{id}`: the record, its extraction job and its bytes. Emits `file.deleted`. */
  async delete(user: UserRecord, id: string): Promise<void> {
    const file = await this.requireWritable(user, id);
    await this.knowledge?.fileDeleting(id);
    await this.core.db.transaction().execute(async (trx) => {
      await new FileStore(trx).delete(id);
      await this.core.events.publish({ event: 'file.deleted', actor: user, subjectId: id, subjectType: 'file', data: { filename: file.filename } }, trx);
    });
    await this.retrieval.dropCollections([`file-${id}`]);
    if (file.path) await this.storage.delete(file.path).catch((error) => this.core.log.warn({ err: error, file: id }, 'file bytes not deleted'));
  }

  /** `DELETE /all` (admins): every record and every stored byte. Emits `file.deleted_all`. */
  async deleteAll(user: UserRecord): Promise<void> {
    await this.knowledge?.allFilesDeleting();
    const ids = await this.core.db.transaction().execute(async (trx) => {
      const deleted = await new FileStore(trx).deleteAll();
      await this.core.events.publish({ event: 'file.deleted_all', actor: user, subjectType: 'file' }, trx);
      return deleted;
    });
    await this.retrieval.dropCollections(ids.map((id) => `file-${id}`));
    await this.storage.deleteAll();
  }

  /**
   * Raw bytes under a file name, with no record yet (`Storage.upload_file`):
   * the path to give `Files.insert_new_file`. Bytes of a record the user may
   * not change are not overwritten.
   */
  async writeBytes(user: UserRecord, filename: string, content: Buffer): Promise<string> {
    this.requireVerified(user);
    if (content.length === 0) throw badRequest(EMPTY_CONTENT);
    const name = path.basename(filename);
    if (!name || name === '.' || name === '..') throw badRequest(`Invalid file name ${filename}`);
    const target = this.uploadPath(name);
    await this.requireWritablePath(user, target);
    return (await this.local.put(name, Readable.from([content]))).path;
  }

  /**
   * The local path of stored bytes (`Storage.get_file`): the bytes of a file the
   * user may read, or bytes they stored themselves without a record yet (`own`).
   */
  async localPath(user: UserRecord, stored: string, own: ReadonlySet<string>): Promise<string> {
    const target = this.uploadPath(stored);
    if (own.has(target)) return target;
    const files = await this.store().byPath(target);
    for (const file of files) if (await this.canRead(user, file)) return target;
    throw notFound(ERROR.NOT_FOUND);
  }

  /** Removes stored bytes (`Storage.delete_file`), as the user may: their own unrecorded bytes, or a file they may change. */
  async deleteBytes(user: UserRecord, stored: string, own: ReadonlySet<string>): Promise<void> {
    const target = this.uploadPath(path.basename(stored));
    if (!own.has(target)) {
      const files = await this.store().byPath(target);
      if (files.length === 0) throw notFound(ERROR.NOT_FOUND);
      await this.requireWritablePath(user, target);
    }
    await this.local.delete(target);
  }

  private async requireWritablePath(user: UserRecord, target: string): Promise<void> {
    for (const file of await this.store().byPath(target)) {
      if (!(await this.canWrite(user, file))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    }
  }

  /** `GET /{id}/content`: the bytes of a file the user may read. */
  async content(user: UserRecord, id: string): Promise<FileContent> {
    const file = await this.require(user, id);
    const size = file.path ? await this.storage.size(file.path).catch(() => null) : null;
    if (!file.path || size === null) throw notFound(ERROR.NOT_FOUND);
    const stored = file.path;
    const meta = file.meta ?? {};
    return {
      name: typeof meta.name === 'string' ? meta.name : file.filename,
      contentType: typeof meta.content_type === 'string' ? meta.content_type : null,
      size,
      open: (range) => this.storage.read(stored, range),
    };
  }

  /**
   * `GET /{id}/content/html`: only a file an admin uploaded is served as a page,
   * as the reference (anyone else's HTML could run in the app's origin); 404 otherwise.
   */
  async htmlContent(user: UserRecord, id: string): Promise<FileContent> {
    const file = await this.store().byId(id);
    const owner = file && (await this.users.byId(file.user_id));
    if (!owner || owner.role !== 'admin') throw notFound(ERROR.NOT_FOUND);
    return this.content(user, id);
  }

  start(): void {
    this.processing.start();
  }

  async close(): Promise<void> {
    await this.processing.close();
    await this.storage.close();
  }
}
