import { createHash, randomUUID } from 'node:crypto';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { RESOURCE_TYPES } from '../../core/access/grants.js';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { isUniqueViolation } from '../../core/db/database.js';
import { ERROR, HttpError, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import { FILE_MAX_SIZE } from '../system/settings.js';
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
  content: Buffer;
  contentType: string | null;
  /** The upload's own metadata, kept as `meta.data`. */
  metadata: Json;
}

/** What `GET /files/{id}/content` sends. */
export interface FileContent {
  path: string;
  name: string;
  contentType: string | null;
}

const EMPTY_CONTENT = 'The content provided is empty. Please ensure that there is text or data present before proceeding.';

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Files: stored bytes under DATA_DIR/uploads and their records. A file is
 * readable by its owner, admins and holders of a read grant on it (knowledge
 * and channels will add theirs); changing it takes ownership, admin or a write
 * grant. The plugin compatibility layer (`open_webui.models.files`,
 * `open_webui.storage.provider`) calls this as the plugin's user. See
 * docs/plugin-compat.md.
 */
export class FilesService {
  /** Where the bytes are kept: the reference's UPLOAD_DIR. */
  readonly uploadDir: string;

  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
  ) {
    this.uploadDir = path.join(path.resolve(core.env.dataDir), 'uploads');
  }

  private store(): FileStore {
    return new FileStore(this.core.db);
  }

  private async canRead(user: UserRecord, file: FileRecord): Promise<boolean> {
    return file.user_id === user.id || isAdmin(user) || this.access.hasAccess(user, RESOURCE_TYPES.file, file.id, 'read', file.user_id);
  }

  private async canWrite(user: UserRecord, file: FileRecord): Promise<boolean> {
    return file.user_id === user.id || isAdmin(user) || this.access.hasAccess(user, RESOURCE_TYPES.file, file.id, 'write', file.user_id);
  }

  /** Pending users may read what is theirs but store nothing (the upload route takes a verified user). */
  private requireVerified(user: UserRecord): void {
    if (user.role !== 'user' && !isAdmin(user)) throw forbidden(ERROR.ACCESS_PROHIBITED);
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

  /** A stored path inside the upload folder, or a 400. */
  private uploadPath(stored: string): string {
    const resolved = path.resolve(this.uploadDir, stored);
    if (!resolved.startsWith(this.uploadDir + path.sep)) throw badRequest(`The path ${stored} is not in the upload folder`);
    return resolved;
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

  /**
   * Stores an upload for the user, as the reference's upload handler: the
   * bytes as `<id>_<name>` (or `<id>.<ext>` when the name is too long for the
   * file system), the record with name, type, size and SHA-256 in `meta`.
   * Parley does not extract document content yet, so nothing is processed.
   */
  async upload(user: UserRecord, upload: Upload): Promise<FileRecord> {
    this.requireVerified(user);
    if (upload.content.length === 0) throw badRequest(EMPTY_CONTENT);
    const maxSize = this.core.settings.get(FILE_MAX_SIZE);
    if (typeof maxSize === 'number' && maxSize > 0 && upload.content.length > maxSize * 1024 * 1024) {
      throw new HttpError(413, ERROR.FILE_TOO_LARGE(`${maxSize} MB`));
    }
    const id = randomUUID();
    const name = path.basename(upload.filename || 'file');
    let stored: string;
    try {
      stored = await this.write(`${id}_${name}`, upload.content);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENAMETOOLONG') throw error;
      const extension = path.extname(name).slice(1).toLowerCase();
      stored = await this.write(extension ? `${id}.${extension}` : id, upload.content);
    }
    const hash = createHash('sha256').update(upload.content).digest('hex');
    const now = this.core.clock.now();
    const file: FileRecord = {
      id,
      user_id: user.id,
      hash: null,
      filename: name,
      path: stored,
      data: {},
      meta: { name, content_type: upload.contentType, size: upload.content.length, file_hash: hash, data: upload.metadata },
      created_at: now,
      updated_at: now,
    };
    await this.store().insert(file);
    return file;
  }

  private async write(name: string, content: Buffer): Promise<string> {
    await mkdir(this.uploadDir, { recursive: true });
    const target = this.uploadPath(name);
    await writeFile(target, content);
    return target;
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
    return this.write(name, content);
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
    await rm(target, { force: true });
  }

  private async requireWritablePath(user: UserRecord, target: string): Promise<void> {
    for (const file of await this.store().byPath(target)) {
      if (!(await this.canWrite(user, file))) throw forbidden(ERROR.ACCESS_PROHIBITED);
    }
  }

  /** `GET /api/v1/files/{id}/content`: the bytes of a file the user may read. */
  async content(user: UserRecord, id: string): Promise<FileContent> {
    const file = await this.require(user, id);
    const stored = file.path ? path.resolve(this.uploadDir, file.path) : null;
    const exists = stored ? await stat(stored).then((s) => s.isFile(), () => false) : false;
    if (!stored || !exists) throw notFound(ERROR.NOT_FOUND);
    const meta = file.meta ?? {};
    return {
      path: stored,
      name: typeof meta.name === 'string' ? meta.name : file.filename,
      contentType: typeof meta.content_type === 'string' ? meta.content_type : null,
    };
  }
}
