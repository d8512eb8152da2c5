import { createHash } from 'node:crypto';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, HttpError, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import type { RetrievalDocument, RetrievedChunk } from '../../core/retrieval/retrieval.js';
import { RAG_TEMPLATE } from '../../core/retrieval/template.js';
import { type WebConfigForm, readWebConfig, webConfigUpdates } from '../../core/web/config.js';
import type { RetrievalService, SearchOptions } from '../../core/retrieval/service.js';
import {
  CHUNK_OVERLAP,
  CHUNK_SIZE,
  ENABLE_ASYNC_EMBEDDING,
  ENABLE_RAG_HYBRID_SEARCH,
  RAG_AZURE_OPENAI_API_KEY,
  RAG_AZURE_OPENAI_API_VERSION,
  RAG_AZURE_OPENAI_BASE_URL,
  RAG_EMBEDDING_BATCH_SIZE,
  RAG_EMBEDDING_CONCURRENT_REQUESTS,
  RAG_EMBEDDING_ENGINE,
  RAG_EMBEDDING_MODEL,
  RAG_OLLAMA_API_KEY,
  RAG_OLLAMA_BASE_URL,
  RAG_OPENAI_API_BASE_URL,
  RAG_OPENAI_API_KEY,
  RAG_RERANKING_MODEL,
  RETRIEVAL_CONFIG_FIELDS,
} from '../../core/retrieval/settings.js';
import type { FilesService } from '../files/service.js';
import type { FileRecord } from '../files/store.js';
import { GOOGLE_DRIVE, IMAGE_COMPRESSION_HEIGHT, IMAGE_COMPRESSION_WIDTH, ONEDRIVE } from '../system/settings.js';
import {
  type BatchProcessFilesForm,
  type BatchProcessFilesResponse,
  COLLECTION_NAME,
  type DeleteForm,
  type EmbeddingConfigForm,
  type EmbeddingConfigResponse,
  type ProcessFileForm,
  type ProcessTextForm,
  type QueryCollectionsForm,
  type QueryDocForm,
  type QueryResult,
} from './schemas.js';

/**
 * What the knowledge area tells retrieval about a collection named by a knowledge base's id.
 * Until it is connected, such collections are the admins' only.
 */
export interface KnowledgeCollections {
  /** Whether the user may read (write) the knowledge base `id`; null when no knowledge base has that id. */
  access(user: UserRecord, id: string, access: 'read' | 'write'): Promise<boolean | null>;
  /** Deletes every knowledge base (reset/db empties the store they index into). */
  deleteAll(user: UserRecord): Promise<void>;
}

/** Settings the config form shows that other modules own (the chat's template, the upload image size and the drive pickers). */
const SHOWN_SETTINGS = {
  RAG_TEMPLATE,
  FILE_IMAGE_COMPRESSION_WIDTH: IMAGE_COMPRESSION_WIDTH,
  FILE_IMAGE_COMPRESSION_HEIGHT: IMAGE_COMPRESSION_HEIGHT,
  ENABLE_GOOGLE_DRIVE_INTEGRATION: GOOGLE_DRIVE,
  ENABLE_ONEDRIVE_INTEGRATION: ONEDRIVE,
};
const CONFIG_SETTINGS = { ...RETRIEVAL_CONFIG_FIELDS, ...SHOWN_SETTINGS };
/** Limits the form sends as '' for "none" (the reference's Union[int, str | None]). */
const LIMIT_FIELDS = new Set(['FILE_MAX_SIZE', 'FILE_MAX_COUNT', 'FILE_IMAGE_COMPRESSION_WIDTH', 'FILE_IMAGE_COMPRESSION_HEIGHT']);

const EMBEDDING_ENGINES = ['', 'openai', 'ollama', 'azure_openai'];

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The reference's query answer: one list of each, best first, the scores as `distances`. */
function asQueryResult(chunks: RetrievedChunk[]): QueryResult {
  return { distances: [chunks.map((c) => c.score)], documents: [chunks.map((c) => c.text)], metadatas: [chunks.map((c) => c.metadata)] };
}

/** The chunk metadata the reference gives a file's text. */
const fileMetadata = (file: FileRecord) => ({ ...(file.meta ?? {}), name: file.filename, created_by: file.user_id, file_id: file.id, source: file.filename });

/**
 * `/api/v1/retrieval`: the retrieval config, processing text and files into collections, querying
 * them, and the admins' deletes and resets (routers/retrieval.py). Who may use which collection
 * is decided here (`accessible`), for every route that names one.
 */
export class CollectionsService {
  private knowledge: KnowledgeCollections | null = null;
  /** ENABLE_RETRIEVAL_UNSCOPED_COLLECTIONS: names that are no file, memory or knowledge base are open to all (legacy). */
  private readonly unscoped: boolean;

  constructor(
    private readonly core: Core,
    private readonly retrieval: RetrievalService,
    private readonly files: FilesService,
  ) {
    this.unscoped = core.env.raw.ENABLE_RETRIEVAL_UNSCOPED_COLLECTIONS?.toLowerCase() === 'true';
  }

  /** Called by app.ts once the knowledge area exists. */
  connectKnowledge(knowledge: KnowledgeCollections): void {
    this.knowledge = knowledge;
  }

  /**
   * The reference's filter_accessible_collections: unsafe names never pass; admins pass; `file-<id>`
   * by the file's access, `user-memory-<id>` for that user only, `web-search-*` for everyone, other
   * names by the knowledge base of that id (denied when there is none, unless unscoped).
   */
  async accessible(user: UserRecord, name: string, access: 'read' | 'write'): Promise<boolean> {
    if (!COLLECTION_NAME.test(name)) return false;
    if (isAdmin(user)) return true;
    if (name === 'knowledge-bases') return false;
    if (name.startsWith('file-')) return this.files.mayAccess(user, name.slice('file-'.length), access);
    if (name.startsWith('user-memory-')) return name === `user-memory-${user.id}`;
    if (name.startsWith('web-search-')) return true;
    const knowledge = this.knowledge ? await this.knowledge.access(user, name, access) : null;
    return knowledge ?? this.unscoped;
  }

  /** 403 unless the user may read (or write) every named collection; the web area's `collection_name` too. */
  async requireAccess(user: UserRecord, names: string[], access: 'read' | 'write'): Promise<void> {
    for (const name of new Set(names)) if (!(await this.accessible(user, name, access))) throw forbidden(ERROR.ACCESS_PROHIBITED);
  }

  /** `GET /config`: every retrieval setting by its form name; RAG_EMBEDDING_ENGINE '' says retrieval is lexical only. */
  config(): Record<string, unknown> {
    const settings = this.core.settings;
    return {
      status: true,
      ...Object.fromEntries(Object.entries(CONFIG_SETTINGS).map(([field, definition]) => [field, settings.get<unknown>(definition.key)])),
      RAG_EMBEDDING_ENGINE: settings.get(RAG_EMBEDDING_ENGINE),
      RAG_EMBEDDING_MODEL: settings.get(RAG_EMBEDDING_MODEL),
      web: readWebConfig(settings),
    };
  }

  /** `POST /config/update`: the fields given (not null) are stored, all or none; answers the new config. */
  async updateConfig(form: Record<string, unknown>): Promise<Record<string, unknown>> {
    const updates: Record<string, unknown> = {};
    for (const [field, definition] of Object.entries(CONFIG_SETTINGS)) {
      let value = form[field];
      if (value === undefined || value === null) continue;
      if (LIMIT_FIELDS.has(field) && typeof value === 'string') {
        if (value.trim() !== '' && !/^\d+$/.test(value.trim())) throw badRequest(`${field} must be a whole number, or '' for no limit`);
        value = value.trim() === '' ? null : Number.parseInt(value, 10);
      }
      if (field === 'RAG_TOKENIZER_MODEL' && typeof value === 'string') value = value.trim();
      updates[definition.key] = value;
    }
    if (form.web) Object.assign(updates, webConfigUpdates(form.web as WebConfigForm));
    const problems = await this.core.settings.validate(updates);
    if (problems.length > 0) throw badRequest(problems.join('; '));
    await this.core.settings.set(updates, this.core.clock.now());
    return this.config();
  }

  /** `GET /embedding`. */
  embeddingConfig(): EmbeddingConfigResponse {
    const settings = this.core.settings;
    return {
      status: true,
      RAG_EMBEDDING_ENGINE: settings.get(RAG_EMBEDDING_ENGINE),
      RAG_EMBEDDING_MODEL: settings.get(RAG_EMBEDDING_MODEL),
      RAG_EMBEDDING_BATCH_SIZE: settings.get(RAG_EMBEDDING_BATCH_SIZE),
      ENABLE_ASYNC_EMBEDDING: settings.get(ENABLE_ASYNC_EMBEDDING),
      RAG_EMBEDDING_CONCURRENT_REQUESTS: settings.get(RAG_EMBEDDING_CONCURRENT_REQUESTS),
      openai_config: { url: settings.get(RAG_OPENAI_API_BASE_URL), key: settings.get(RAG_OPENAI_API_KEY) },
      ollama_config: { url: settings.get(RAG_OLLAMA_BASE_URL), key: settings.get(RAG_OLLAMA_API_KEY) },
      azure_openai_config: {
        url: settings.get(RAG_AZURE_OPENAI_BASE_URL),
        key: settings.get(RAG_AZURE_OPENAI_API_KEY),
        version: settings.get(RAG_AZURE_OPENAI_API_VERSION),
      },
    };
  }

  /**
   * `POST /embedding/update`. A new engine or model starts a new vector space: chunks embedded
   * before stay found lexically, never compared with the new model's vectors, until reindexed.
   */
  async updateEmbeddingConfig(form: EmbeddingConfigForm): Promise<EmbeddingConfigResponse> {
    if (!EMBEDDING_ENGINES.includes(form.RAG_EMBEDDING_ENGINE)) {
      throw badRequest(`Unsupported embedding engine '${form.RAG_EMBEDDING_ENGINE}': use '' (none: lexical search), 'openai', 'ollama' or 'azure_openai'`);
    }
    const updates: Record<string, unknown> = {
      [RAG_EMBEDDING_ENGINE.key]: form.RAG_EMBEDDING_ENGINE,
      [RAG_EMBEDDING_MODEL.key]: form.RAG_EMBEDDING_MODEL.trim(),
      [RAG_EMBEDDING_BATCH_SIZE.key]: form.RAG_EMBEDDING_BATCH_SIZE ?? 1,
      [ENABLE_ASYNC_EMBEDDING.key]: form.ENABLE_ASYNC_EMBEDDING ?? true,
      [RAG_EMBEDDING_CONCURRENT_REQUESTS.key]: form.RAG_EMBEDDING_CONCURRENT_REQUESTS ?? 0,
    };
    if (form.RAG_EMBEDDING_ENGINE !== '') {
      if (form.openai_config) Object.assign(updates, { [RAG_OPENAI_API_BASE_URL.key]: form.openai_config.url, [RAG_OPENAI_API_KEY.key]: form.openai_config.key });
      if (form.ollama_config) Object.assign(updates, { [RAG_OLLAMA_BASE_URL.key]: form.ollama_config.url, [RAG_OLLAMA_API_KEY.key]: form.ollama_config.key });
      if (form.azure_openai_config) {
        Object.assign(updates, {
          [RAG_AZURE_OPENAI_BASE_URL.key]: form.azure_openai_config.url,
          [RAG_AZURE_OPENAI_API_KEY.key]: form.azure_openai_config.key,
          [RAG_AZURE_OPENAI_API_VERSION.key]: form.azure_openai_config.version,
        });
      }
    }
    const problems = await this.core.settings.validate(updates);
    if (problems.length > 0) throw new HttpError(500, ERROR.DEFAULT('Error updating embedding configuration'));
    await this.core.settings.set(updates, this.core.clock.now());
    return this.embeddingConfig();
  }

  /** `GET /`: the chunking and model settings in brief (the reference's former status route). */
  status(): Record<string, unknown> {
    const settings = this.core.settings;
    return {
      status: true,
      chunk_size: settings.get(CHUNK_SIZE),
      chunk_overlap: settings.get(CHUNK_OVERLAP),
      embedding_engine: settings.get(RAG_EMBEDDING_ENGINE),
      embedding_model: settings.get(RAG_EMBEDDING_MODEL),
      reranking_model: settings.get(RAG_RERANKING_MODEL),
      embedding_batch_size: settings.get(RAG_EMBEDDING_BATCH_SIZE),
    };
  }

  /** Indexes, turning an engine's failure or empty content into a 400 with its reason. */
  private async index(collection: string, documents: RetrievalDocument[], options: { replaceFileId?: string; whole?: boolean } = {}): Promise<void> {
    let stored: { chunks: number };
    try {
      stored = await this.retrieval.index(collection, documents, options);
    } catch (error) {
      throw badRequest((error as Error).message);
    }
    if (stored.chunks === 0) throw badRequest(ERROR.EMPTY_CONTENT);
  }

  /** `POST /process/text`: into `collection_name` (write access), or a collection named by the text's hash. */
  async processText(user: UserRecord, form: ProcessTextForm): Promise<{ status: boolean; collection_name: string; content: string }> {
    const collection = form.collection_name ?? sha256(form.content);
    if (form.collection_name != null) await this.requireAccess(user, [collection], 'write');
    await this.index(collection, [{ text: form.content, metadata: { name: form.name, created_by: user.id } }]);
    await this.core.events.publish({
      event: 'retrieval.content.processed',
      actor: user,
      subjectId: collection,
      subjectType: 'retrieval.collection',
      data: { name: form.name, content_preview: form.content.slice(0, 300) },
    });
    return { status: true, collection_name: collection, content: form.content };
  }

  /**
   * `POST /process/file` (the file's owner or an admin): indexes new `content`, or the file's
   * chunks into another collection (`collection_name`, write access), or the file's extracted text
   * again. The file records the text, its hash and status; a failure marks it `failed` (400).
   */
  async processFile(user: UserRecord, form: ProcessFileForm): Promise<{ status: boolean; collection_name: string | null; filename: string; content: string }> {
    const file = await this.files.get(user, form.file_id);
    if (!file || (!isAdmin(user) && file.user_id !== user.id)) throw notFound(ERROR.NOT_FOUND);
    const collection = form.collection_name ?? `file-${file.id}`;
    if (form.collection_name != null) await this.requireAccess(user, [collection], 'write');
    const extracted = typeof file.data?.content === 'string' ? file.data.content : '';
    // Nothing to index yet (extraction still queued, or no text): the file is left as it is.
    if (!form.content && extracted.trim() === '') throw badRequest(ERROR.EMPTY_CONTENT);
    let documents: RetrievalDocument[];
    let content: string;
    let whole = false;
    if (form.content) {
      content = form.content;
      documents = [{ text: form.content.replaceAll('<br/>', '\n'), metadata: fileMetadata(file) }];
      await this.retrieval.dropCollections([`file-${file.id}`]);
    } else if (form.collection_name != null) {
      // The file's chunks as they are (embedded again with the current model), else its text.
      const chunks = await this.retrieval.documents(`file-${file.id}`);
      whole = chunks.length > 0;
      documents = whole ? chunks : [{ text: extracted, metadata: fileMetadata(file) }];
      content = extracted;
    } else {
      content = extracted;
      documents = [{ text: extracted, metadata: fileMetadata(file) }];
    }
    const hash = sha256(content);
    if (this.core.settings.get(RETRIEVAL_CONFIG_FIELDS.BYPASS_EMBEDDING_AND_RETRIEVAL)) {
      await this.files.recordProcessing(file.id, { content, status: 'completed', hash });
      await this.publishProcessed(user, file, null);
      return { status: true, collection_name: null, filename: file.filename, content };
    }
    try {
      const withHash = documents.map((d) => ({ text: d.text, metadata: { ...d.metadata, file_id: file.id, name: file.filename, hash } }));
      await this.index(collection, withHash, { replaceFileId: file.id, whole });
    } catch (error) {
      await this.files.recordProcessing(file.id, { status: 'failed', error: (error as HttpError).detail as string, hash: null });
      throw error;
    }
    await this.files.recordProcessing(file.id, { content, status: 'completed', hash, collectionName: collection });
    await this.publishProcessed(user, file, collection);
    return { status: true, collection_name: collection, filename: file.filename, content };
  }

  private async publishProcessed(user: UserRecord, file: FileRecord, collection: string | null): Promise<void> {
    await this.core.events.publish({
      event: 'retrieval.content.processed',
      actor: user,
      subjectId: file.id,
      subjectType: 'file',
      data: { collection_name: collection, filename: file.filename },
    });
  }

  /** `POST /process/files/batch`: the caller's files' given text, indexed together into `collection_name` (write access). */
  async processFilesBatch(user: UserRecord, form: BatchProcessFilesForm): Promise<BatchProcessFilesResponse> {
    if (form.collection_name) await this.requireAccess(user, [form.collection_name], 'write');
    const results: BatchProcessFilesResponse['results'] = [];
    const errors: BatchProcessFilesResponse['errors'] = [];
    const documents: RetrievalDocument[] = [];
    const prepared: { id: string; content: string }[] = [];
    for (const given of form.files) {
      const file = await this.files.get(user, given.id);
      if (!file) {
        errors.push({ file_id: given.id, status: 'failed', error: 'File not found' });
        continue;
      }
      if (file.user_id !== user.id && !isAdmin(user)) {
        errors.push({ file_id: given.id, status: 'failed', error: 'Permission denied: not file owner' });
        continue;
      }
      const givenContent = (given.data as { content?: unknown } | null | undefined)?.content;
      const content = typeof givenContent === 'string' ? givenContent : '';
      documents.push({ text: content.replaceAll('<br/>', '\n'), metadata: { ...fileMetadata(file), ...(given.meta ?? {}), file_id: file.id, name: file.filename, source: file.filename } });
      prepared.push({ id: file.id, content });
      results.push({ file_id: file.id, status: 'prepared' });
    }
    if (documents.length > 0) {
      try {
        for (const [i, document] of documents.entries()) await this.retrieval.index(form.collection_name, [document], { replaceFileId: prepared[i]!.id });
        for (const [i, { id, content }] of prepared.entries()) {
          await this.files.recordProcessing(id, { content, status: 'completed', hash: sha256(content) });
          results[i]!.status = 'completed';
        }
      } catch (error) {
        for (const result of results) {
          result.status = 'failed';
          errors.push({ file_id: result.file_id, status: 'failed', error: (error as Error).message });
        }
      }
    }
    await this.core.events.publish({
      event: 'retrieval.content.processed',
      actor: user,
      subjectId: form.collection_name,
      subjectType: 'retrieval.collection',
      data: { count: results.filter((r) => r.status === 'completed').length, errors: errors.length },
    });
    return { results, errors };
  }

  private searchOptions(form: QueryDocForm | QueryCollectionsForm): SearchOptions {
    return {
      ...(form.k ? { k: form.k } : {}),
      ...(form.k_reranker ? { kReranker: form.k_reranker } : {}),
      ...(form.r ? { threshold: form.r } : {}),
      ...(form.hybrid_bm25_weight != null ? { bm25Weight: form.hybrid_bm25_weight } : {}),
      // Hybrid when the config enables it and the form does not say no, as the reference.
      hybrid: this.core.settings.get(ENABLE_RAG_HYBRID_SEARCH) && form.hybrid !== false,
    };
  }

  private async search(user: UserRecord, collections: string[], query: string, options: SearchOptions): Promise<QueryResult> {
    await this.requireAccess(user, collections, 'read');
    try {
      return asQueryResult(await this.retrieval.query(collections, [query], options));
    } catch {
      throw badRequest(ERROR.DEFAULT('Error querying knowledge base'));
    }
  }

  /** `POST /query/doc`: one collection the caller may read. */
  queryDoc(user: UserRecord, form: QueryDocForm): Promise<QueryResult> {
    return this.search(user, [form.collection_name], form.query, this.searchOptions(form));
  }

  /** `POST /query/collection`: several collections, every one readable by the caller. */
  queryCollection(user: UserRecord, form: QueryCollectionsForm): Promise<QueryResult> {
    return this.search(user, form.collection_names, form.query, this.searchOptions(form));
  }

  /** `POST /delete` (admin): a file's chunks out of a collection; `status: false` when the collection holds nothing. */
  async deleteFromCollection(user: UserRecord, form: DeleteForm): Promise<{ status: boolean }> {
    if (!COLLECTION_NAME.test(form.collection_name) || !(await this.retrieval.hasCollection(form.collection_name))) return { status: false };
    const file = await this.files.get(user, form.file_id);
    if (!file) throw notFound(ERROR.NOT_FOUND);
    if (file.hash === null) throw badRequest(ERROR.DEFAULT('File has no hash; cannot delete vector entries by hash.'));
    await this.retrieval.removeFile(form.collection_name, file.id);
    await this.core.events.publish({ event: 'retrieval.collection.deleted', actor: user, subjectId: form.collection_name, data: { file_id: form.file_id } });
    return { status: true };
  }

  /** `POST /reset/db` (admin): every chunk, and every knowledge base. */
  async resetStore(user: UserRecord): Promise<null> {
    await this.retrieval.reset();
    await this.knowledge?.deleteAll(user);
    await this.core.events.publish({ event: 'retrieval.vector_db.reset', actor: user, subjectId: 'default' });
    return null;
  }

  /** `POST /reset/uploads` (admin): the upload folder's bytes (file records stay, as the reference). */
  async resetUploads(user: UserRecord): Promise<boolean> {
    await this.files.deleteLocalUploads();
    await this.core.events.publish({ event: 'retrieval.uploads.reset', actor: user, subjectId: 'all', subjectType: 'file.uploads' });
    return true;
  }
}
