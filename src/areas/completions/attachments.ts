import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { badRequest } from '../../core/http/errors.js';
import type { Retrieval } from '../../core/retrieval/retrieval.js';
import { BYPASS_EMBEDDING_AND_RETRIEVAL, RAG_FULL_CONTEXT, TOP_K } from '../../core/retrieval/settings.js';
import { RAG_TEMPLATE, ragTemplateText } from '../../core/retrieval/template.js';
import type { CallContext } from '../../core/upstream/headers.js';
import { type Json, type Message, contentText, currentMessageIdOf, isObject, messageList, messagesOf } from '../chats/history.js';
import type { ChatsService } from '../chats/service.js';
import type { FilesService } from '../files/service.js';
import type { FoldersService } from '../folders/service.js';
import type { CollectionsService } from '../retrieval/service.js';
import { renderSystemPrompt } from '../models/params.js';
import { IMAGE_COMPRESSION_HEIGHT, IMAGE_COMPRESSION_WIDTH } from '../system/settings.js';
import type { TasksService } from '../tasks/service.js';
import { lastUserText } from '../tasks/templates.js';
import { ConversationImages } from './images.js';
import { type Source, citable, documentCount, withSourceContext } from './sources.js';

/** What the knowledge area gives a chat (wired in app.ts); who may read a knowledge base is the retrieval area's `accessible`. */
export interface KnowledgeReader {
  /** The extracted text of each file of a knowledge base the user may read (for "full context"); none otherwise. */
  fileContents(user: UserRecord, id: string): Promise<{ id: string; filename: string; content: string }[]>;
}

/** External knowledge bases (vector stores run elsewhere), as the knowledge area queries them (wired in app.ts). */
export interface ExternalKnowledgeReader {
  /** The best `count` chunks for the queries when `id` is an external knowledge base the user may read; null otherwise. A store that fails throws. */
  query(user: UserRecord, id: string, queries: string[], count: number): Promise<{ content: string; metadata: Json; distance: unknown }[] | null>;
}

/** The notes a user may read, as the notes area provides them (wired in app.ts). */
export interface NoteReader {
  /** The note's title and Markdown when the user may read it (owner, admin, read grant); null otherwise. */
  readable(user: UserRecord, id: string): Promise<{ id: string; title: string; markdown: string } | null>;
}

export interface AttachmentSources {
  files: FilesService;
  chats: ChatsService;
  folders: FoldersService;
  tasks: TasksService;
  retrieval: Retrieval;
  /** Who may search a collection the request names (the retrieval area's filter_accessible_collections). */
  collections: Pick<CollectionsService, 'accessible'>;
  knowledge: KnowledgeReader | null;
  externalKnowledge: ExternalKnowledgeReader | null;
  notes: NoteReader | null;
}

/** One answer's request, as the attachments step needs it. */
export interface AttachRequest {
  user: UserRecord;
  /** The model answering (its `info.meta.knowledge` and `capabilities.file_context` count). */
  model: Json;
  /** The request's `files`. */
  items: unknown;
  messages: Message[];
  chatId: string;
  context: CallContext;
  /** Shows a status line under the answer (`status` events), when there is an answer to show it under. */
  status: ((data: Json) => Promise<void>) | null;
  /** Results of tools already run (legacy function calling): sources before the attachments'. */
  toolSources?: Source[];
}

interface Found {
  documents: string[];
  metadatas: Json[];
  distances?: number[];
}

/** Each attachment may cost a lookup or a search: a request names at most this many (a chat's files accumulate, far below it). */
const MAX_ATTACHMENTS = 1000;

/** A request's `files` must be a list of at most MAX_ATTACHMENTS entries (or absent), else 400 before anything is stored. */
export function checkAttachmentList(files: unknown): void {
  if (files === undefined || files === null) return;
  if (!Array.isArray(files) || files.length > MAX_ATTACHMENTS) throw badRequest(`files must be a list of at most ${MAX_ATTACHMENTS} attachments`);
}
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/**
 * What a chat's attachments give the model (middleware.py process_chat_payload,
 * chat_completion_files_handler; retrieval/utils.py get_sources_from_items): image
 * parts inlined from stored files; documents, knowledge bases, chats, notes and
 * pasted text turned into sources (whole, or the passages retrieval finds for
 * generated queries), put before the model through the RAG template, and
 * returned for the answer's citations. Every attachment is read as the user: what
 * they may not read is skipped as if absent.
 */
export class ChatAttachments {
  private readonly images: ConversationImages;

  constructor(
    private readonly core: Core,
    private readonly deps: AttachmentSources,
    private readonly options: { ragSystemContext: boolean },
  ) {
    const warn = (details: Json, message: string) => core.log.warn(details, message);
    this.images = new ConversationImages(deps.files, () => ({ width: core.settings.get(IMAGE_COMPRESSION_WIDTH), height: core.settings.get(IMAGE_COMPRESSION_HEIGHT) }), warn);
  }

  /** The messages the model receives, and the sources to show with its answer. */
  async prepare(request: AttachRequest): Promise<{ messages: Message[]; sources: Source[] }> {
    const { user, model } = request;
    const messages = await this.images.inline(user, request.messages);
    const meta = isObject(model.info) && isObject(model.info.meta) ? model.info.meta : {};
    const knowledge = Array.isArray(meta.knowledge) ? meta.knowledge.filter(isObject) : [];
    const attached = Array.isArray(request.items) ? request.items.filter(isObject) : [];
    const items = distinct([...(await this.withFolderFiles(user, attached)), ...knowledge]);
    const fileContext = isObject(meta.capabilities) ? meta.capabilities.file_context !== false : true;
    const query = lastUserText(messages) ?? '';
    const found = items.length > 0 && fileContext ? await this.retrieve(request, messages, items, knowledge.length > 0, query) : [];
    const sources = [...(request.toolSources ?? []), ...found];
    if (sources.length === 0) return { messages, sources: [] };
    const template = renderSystemPrompt(ragTemplateText(this.core.settings.get(RAG_TEMPLATE)), null);
    const prepared = withSourceContext(messages, sources, template, query, this.options.ragSystemContext);
    return { messages: prepared, sources: citable(sources) };
  }

  /** The sources of the attachments and the model's knowledge: whole, or the passages found for generated queries. */
  private async retrieve(request: AttachRequest, messages: Message[], items: Json[], knowledge: boolean, query: string): Promise<Source[]> {
    const { user, model } = request;
    const status = request.status ?? (async () => {});
    if (knowledge) await status({ action: 'knowledge_search', query, done: false });
    const fullContext = items.every((item) => item.context === 'full') || this.core.settings.get(RAG_FULL_CONTEXT);
    let queries: string[] = [];
    if (!fullContext && !this.core.settings.get(BYPASS_EMBEDDING_AND_RETRIEVAL)) {
      queries = await this.deps.tasks.retrievalQueries(user, String(model.id), messages, request.chatId, request.context);
      await status({ action: 'queries_generated', queries, done: false });
    }
    if (queries.length === 0) queries = [query];
    const sources = await this.sources(user, items, queries, fullContext);
    await status({ action: 'sources_retrieved', count: documentCount(sources), done: true });
    if (knowledge) await status({ action: 'knowledge_search', query, done: true, hidden: true });
    return sources;
  }

  /** A folder attachment (`type: 'folder'`) stands for the files and knowledge its owner attached to it; others' folders give nothing. */
  private async withFolderFiles(user: UserRecord, items: Json[]): Promise<Json[]> {
    const expanded: Json[] = [];
    for (const item of items) {
      if (item.type !== 'folder') expanded.push(item);
      else {
        const folder = typeof item.id === 'string' ? await this.deps.folders.byId(item.id) : null;
        if (folder?.user_id === user.id && Array.isArray(folder.data?.files)) expanded.push(...folder.data.files.filter(isObject));
      }
    }
    return expanded;
  }

  /** One source per attachment that gave something, in the attachments' order; a collection is searched once. */
  private async sources(user: UserRecord, items: Json[], queries: string[], fullContext: boolean): Promise<Source[]> {
    const searched = new Set<string>();
    const sources: Source[] = [];
    for (const item of items) {
      const read = await this.read(user, item, queries, fullContext);
      let found = Array.isArray(read) ? null : read;
      if (Array.isArray(read)) {
        const collections = read.filter((name) => !searched.has(name));
        if (collections.length === 0) continue;
        found = await this.search(collections, queries, fullContext);
        for (const name of collections) searched.add(name);
      }
      if (!found || found.documents.length === 0) continue;
      const { data: _data, ...source } = item;
      sources.push({ source, document: found.documents, metadata: found.metadatas, ...(found.distances ? { distances: found.distances } : {}) });
    }
    return sources;
  }

  /** An attachment's text, or the collections to search for it; null when the user may not read it. */
  private async read(user: UserRecord, item: Json, queries: string[], fullContext: boolean): Promise<Found | string[] | null> {
    const id = text(item.id);
    const whole = fullContext || item.context === 'full' || this.core.settings.get(BYPASS_EMBEDDING_AND_RETRIEVAL);
    switch (item.type) {
      case 'text': {
        // Pasted text, or a page fetched for the chat: what the request carries is the user's own.
        const file = isObject(item.file) ? item.file : null;
        const fileData = file && isObject(file.data) ? file.data : {};
        const fileText = { documents: [text(fileData.content)], metadatas: [file && isObject(file.meta) ? file.meta : {}] };
        if (file && item.context === 'full') return fileText;
        const collection = text(item.collection_name);
        if (collection) return (await this.deps.collections.accessible(user, collection, 'read')) ? [collection] : null;
        if (file) return fileText;
        return { documents: [text(item.content)], metadatas: [{ file_id: id, name: text(item.name) }] };
      }
      case 'file': {
        // The stored file, never the copy of its content the request may carry.
        const file = id ? await this.deps.files.get(user, id) : null;
        if (!file) return null;
        if (!whole) return [`file-${file.id}`];
        const content = isObject(file.data) ? text(file.data.content) : '';
        return { documents: [content], metadatas: [{ file_id: file.id, name: file.filename, source: file.filename }] };
      }
      case 'collection': {
        // An external knowledge base is searched in its store, whole context or not (get_sources_from_items).
        const external = id ? await this.searchExternal(user, id, queries) : null;
        if (external) return external;
        // A knowledge base: readable as its collection is.
        if (!id || !(await this.deps.collections.accessible(user, id, 'read'))) return null;
        if (!whole) return [id];
        const files = this.deps.knowledge ? await this.deps.knowledge.fileContents(user, id) : [];
        return { documents: files.map((f) => f.content), metadatas: files.map((f) => ({ file_id: f.id, name: f.filename, source: f.filename })) };
      }
      case 'chat': {
        const chat = id ? await this.deps.chats.readable(user, id) : null;
        const current = chat ? currentMessageIdOf(chat.chat) : null;
        if (!chat || !current) return null;
        const history = messageList(messagesOf(chat.chat), current)
          .map((m) => `#### ${capitalize(text(m.role) || 'user')}\n${contentText(m)}\n`)
          .join('\n');
        return { documents: [history], metadatas: [{ file_id: chat.id, name: chat.title }] };
      }
      case 'note': {
        const note = id && this.deps.notes ? await this.deps.notes.readable(user, id) : null;
        return note ? { documents: [note.markdown], metadatas: [{ file_id: note.id, name: note.title }] } : null;
      }
      default: {
        // A web search's pages, passed on whole or as the collection they were indexed into.
        if (Array.isArray(item.docs)) return webDocs(item.docs);
        const collection = text(item.collection_name);
        return item.type === 'web_search' && collection && (await this.deps.collections.accessible(user, collection, 'read')) ? [collection] : null;
      }
    }
  }

  /** The TOP_K best chunks of an external knowledge base the user may read; null when it is none, or its store fails (logged). */
  private async searchExternal(user: UserRecord, id: string, queries: string[]): Promise<Found | null> {
    try {
      const chunks = this.deps.externalKnowledge ? await this.deps.externalKnowledge.query(user, id, queries, this.core.settings.get(TOP_K)) : null;
      if (!chunks) return null;
      const distances = chunks.map((c) => c.distance);
      return {
        documents: chunks.map((c) => c.content),
        metadatas: chunks.map((c) => c.metadata),
        ...(distances.every((d) => typeof d === 'number') ? { distances: distances as number[] } : {}),
      };
    } catch (error) {
      this.core.log.warn({ err: error instanceof Error ? error.message : String(error), knowledge: id }, 'An external knowledge base failed for a chat; it is left out');
      return { documents: [], metadatas: [] };
    }
  }

  /** Every passage of the collections (full context), or the best ones for the queries. */
  private async search(collections: string[], queries: string[], fullContext: boolean): Promise<Found | null> {
    const { retrieval } = this.deps;
    try {
      if (fullContext) {
        const documents = (await Promise.all(collections.map((name) => retrieval.documents(name)))).flat();
        return { documents: documents.map((d) => d.text), metadatas: documents.map((d) => d.metadata) };
      }
      const chunks = await retrieval.query(collections, queries);
      return { documents: chunks.map((c) => c.text), metadatas: chunks.map((c) => c.metadata), distances: chunks.map((c) => c.score) };
    } catch (error) {
      this.core.log.warn({ err: error instanceof Error ? error.message : String(error), collections }, 'Retrieval for a chat failed; its attachments are left out');
      return null;
    }
  }
}

/** Attachments without repeats (the same entry twice, as the reference's JSON comparison). */
function distinct(items: Json[]): Json[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const key = JSON.stringify(item);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Pages a web search passed on whole (BYPASS_WEB_SEARCH_EMBEDDING_AND_RETRIEVAL). */
function webDocs(docs: unknown[]): Found {
  const pages = docs.filter(isObject);
  return { documents: pages.map((doc) => text(doc.content)), metadatas: pages.map((doc) => (isObject(doc.metadata) ? doc.metadata : {})) };
}

const capitalize = (word: string) => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();
