import { randomUUID } from 'node:crypto';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { ERROR, badRequest, forbidden, notFound } from '../../core/http/errors.js';
import type { Retrieval, RetrievedChunk } from '../../core/retrieval/retrieval.js';
import {
  MEMORY_ERROR,
  type MemoryTypeFilter,
  cleanContent,
  cleanPath,
  indexedText,
  listPathGroups,
  memoryLabel,
  pathHints,
  readPath,
  searchMemories,
} from './paths.js';
import type { AddMemoryForm, MemoryUpdateForm, UpdateMemoriesForm } from './schemas.js';
import { MEMORIES_CONTEXT_CHAR_LIMIT, MEMORIES_USER_CHAR_LIMIT } from './settings.js';
import { type MemoryRecord, MemoryStore, type MemoryWrite } from './store.js';

type Json = Record<string, unknown>;

/** The reference's vector SearchResult for one query. */
export interface MemoryQueryResult {
  ids: string[][];
  documents: string[][];
  metadatas: Json[][];
  distances: number[][];
}

interface OperationResult {
  action: string;
  status: 'created' | 'updated' | 'deleted' | 'skipped';
  memory?: MemoryRecord;
  id?: string;
  reason?: string;
}

const MEMORY_CONTEXT_OPEN = '<memory_context>';
const MEMORY_CONTEXT_CLOSE = '</memory_context>';
/** Memories the system context takes from retrieval (add_memory_context asks for 8). */
const CONTEXT_QUERY_K = 8;

/** A user's retrieval collection (the reference's name). */
export const memoryCollection = (userId: string) => `user-memory-${userId}`;

/**
 * Memories (`/api/v1/memories`): strictly per user. Each memory is also indexed,
 * whole, in the user's retrieval collection (its id as the chunk's `file_id`), so
 * `query` and the chat's system context rank by relevance (embeddings when an
 * engine is configured, BM25 otherwise). See docs/memories.md.
 */
export class MemoriesService {
  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly retrieval: Retrieval,
  ) {}

  private store(db = this.core.db): MemoryStore {
    return new MemoryStore(db);
  }

  /** `memories.enable` off: 404 for everyone; without `features.memories`: 403 (check_memories_permission). */
  private async requireFeature(user: UserRecord): Promise<void> {
    if (!this.core.settings.get<boolean>('memories.enable')) throw notFound();
    if (!isAdmin(user) && !(await this.access.hasPermission(user, 'features.memories'))) throw forbidden(ERROR.ACCESS_PROHIBITED);
  }

  private async index(userId: string, memories: MemoryRecord[]): Promise<void> {
    for (const memory of memories) {
      await this.retrieval.index(
        memoryCollection(userId),
        [{ text: indexedText(memory.content, memory.path), metadata: { file_id: memory.id, type: memory.type, path: memory.path, created_at: memory.created_at, updated_at: memory.updated_at } }],
        { whole: true, replaceFileId: memory.id },
      );
    }
  }

  private publish(user: UserRecord, event: string, memory: MemoryRecord, operation?: string) {
    return this.core.events.publish({
      event,
      actor: user,
      subjectId: memory.id,
      subjectType: 'memory',
      data: { content_preview: memory.content.slice(0, 300), type: memory.type, path: memory.path, ...(operation ? { operation } : {}) },
    });
  }

  // ---- records ---------------------------------------------------------------

  /** `GET /`. */
  async list(user: UserRecord): Promise<MemoryRecord[]> {
    await this.requireFeature(user);
    return this.store().ofUser(user.id);
  }

  /** `POST /add`: a manual memory (`meta.created_by` 'manual'), indexed. */
  async add(user: UserRecord, form: AddMemoryForm): Promise<MemoryRecord> {
    await this.requireFeature(user);
    const now = this.core.clock.now();
    const memory: MemoryRecord = {
      id: randomUUID(),
      user_id: user.id,
      type: form.type ?? 'context',
      path: cleanPath(form.path),
      content: cleanContent(form.content),
      meta: { created_by: 'manual' },
      created_at: now,
      updated_at: now,
    };
    await this.store().insert(memory);
    await this.index(user.id, [memory]);
    await this.publish(user, 'memory.created', memory);
    return memory;
  }

  /** `POST /{id}/update`: content, type and path (an empty path clears it); another user's memory is a 404. */
  async update(user: UserRecord, id: string, form: MemoryUpdateForm): Promise<MemoryRecord> {
    await this.requireFeature(user);
    const content = form.content != null ? cleanContent(form.content) : undefined;
    const path = cleanPath(form.path);
    if (content === undefined && form.type == null && form.path == null) throw badRequest(MEMORY_ERROR.NO_UPDATE);
    const memory = await this.store().byId(user.id, id);
    if (!memory) throw notFound();
    const fields: MemoryWrite = { meta: { ...memory.meta, created_by: 'manual' } };
    if (content !== undefined) fields.content = content;
    if (form.type != null) fields.type = form.type;
    if (form.path != null) fields.path = path;
    const now = this.core.clock.now();
    await this.store().update(user.id, id, fields, now);
    const updated = { ...memory, ...fields, updated_at: now };
    await this.index(user.id, [updated]);
    await this.publish(user, 'memory.updated', updated);
    return updated;
  }

  /** `DELETE /{id}`: false when the user has no such memory. */
  async delete(user: UserRecord, id: string): Promise<boolean> {
    await this.requireFeature(user);
    if (!(await this.store().delete(user.id, id))) return false;
    await this.retrieval.removeFile(memoryCollection(user.id), id);
    await this.core.events.publish({ event: 'memory.deleted', actor: user, subjectId: id, subjectType: 'memory' });
    return true;
  }

  /** `DELETE /delete/user`: every memory of the user, and their collection. */
  async deleteAll(user: UserRecord): Promise<boolean> {
    await this.requireFeature(user);
    await this.store().deleteAll(user.id);
    await this.retrieval.dropCollections([memoryCollection(user.id)]);
    await this.core.events.publish({ event: 'memory.deleted', actor: user, subjectId: user.id, subjectType: 'user' });
    return true;
  }

  /** `POST /reset`: the collection rebuilt from the stored memories (after a change of embedding model). */
  async reset(user: UserRecord): Promise<boolean> {
    await this.requireFeature(user);
    const memories = await this.store().ofUser(user.id);
    await this.retrieval.dropCollections([memoryCollection(user.id)]);
    await this.index(user.id, memories);
    await this.core.events.publish({ event: 'memory.reset', actor: user, subjectId: user.id, subjectType: 'user', data: { count: memories.length } });
    return true;
  }

  /**
   * `POST /update` (the memory tools): add, replace, move and remove, all or
   * nothing: one missing id is a 404 and nothing changes. An `add` of a memory
   * already stored is skipped.
   */
  async applyOperations(user: UserRecord, form: UpdateMemoriesForm, origin: Json = {}): Promise<OperationResult[]> {
    await this.requireFeature(user);
    if (form.operations.length === 0) throw badRequest(MEMORY_ERROR.NO_OPERATIONS);
    const meta = { created_by: form.source ?? 'tool', chat_id: origin.chat_id ?? null, message_id: origin.message_id ?? null, model: origin.model ?? null };
    const operations = form.operations.map((op) => {
      if (op.action !== 'add' && !op.id) throw badRequest(`Memory id is required for ${op.action}`);
      return {
        ...op,
        content: op.action === 'add' || op.action === 'replace' ? cleanContent(op.content) : undefined,
        path: cleanPath(op.path),
      };
    });
    const now = this.core.clock.now();
    const results = await this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      const done: OperationResult[] = [];
      for (const op of operations) {
        if (op.action === 'add') {
          const type = op.type ?? 'context';
          const existing = await store.duplicate(user.id, op.content!, type, op.path);
          if (existing) {
            done.push({ action: op.action, status: 'skipped', memory: existing, reason: 'duplicate' });
            continue;
          }
          const memory: MemoryRecord = { id: randomUUID(), user_id: user.id, type, path: op.path, content: op.content!, meta, created_at: now, updated_at: now };
          await store.insert(memory);
          done.push({ action: op.action, status: 'created', memory });
          continue;
        }
        const memory = await store.byId(user.id, op.id!);
        if (!memory) throw notFound(`Memory not found: ${op.id}`);
        if (op.action === 'remove') {
          await store.delete(user.id, memory.id);
          done.push({ action: op.action, status: 'deleted', id: memory.id });
          continue;
        }
        const fields: MemoryWrite = { path: op.path, meta: { ...memory.meta, ...meta } };
        if (op.action === 'replace') {
          fields.content = op.content!;
          if (op.type) fields.type = op.type;
        }
        await store.update(user.id, memory.id, fields, now);
        done.push({ action: op.action, status: 'updated', memory: { ...memory, ...fields, updated_at: now } });
      }
      return done;
    });
    const changed = results.filter((r) => r.status === 'created' || r.status === 'updated').map((r) => r.memory!);
    await this.index(user.id, changed);
    for (const result of results) {
      if (result.status === 'deleted') await this.retrieval.removeFile(memoryCollection(user.id), result.id!);
      const event = { created: 'memory.created', updated: 'memory.updated', deleted: 'memory.deleted', skipped: null }[result.status];
      if (!event) continue;
      const memory = result.memory ?? ({ id: result.id!, content: '', type: 'context', path: null } as MemoryRecord);
      await this.publish(user, event, memory, result.action);
    }
    return results;
  }

  // ---- lookups ---------------------------------------------------------------

  /** `POST /query`: the user's memories ranked by relevance to the text, best first (at most `k`, default 1). */
  async query(user: UserRecord, content: string, k = 1): Promise<MemoryQueryResult> {
    await this.requireFeature(user);
    if (!(await this.store().hasAny(user.id))) throw notFound(MEMORY_ERROR.NONE_FOUND);
    const chunks = await this.retrieval.query([memoryCollection(user.id)], [content], { k });
    return {
      ids: [chunks.map((c) => String(c.metadata.file_id))],
      documents: [chunks.map((c) => c.text)],
      metadatas: [chunks.map(chunkMetadata)],
      distances: [chunks.map((c) => c.score)],
    };
  }

  /** `POST /search`. */
  async search(user: UserRecord, form: { query?: string | null; type?: MemoryTypeFilter; path?: string | null; memory_id?: string | null; limit?: number }) {
    await this.requireFeature(user);
    return searchMemories(await this.store().ofUser(user.id), { query: form.query, type: form.type, path: form.path, memoryId: form.memory_id, limit: form.limit });
  }

  /** `POST /paths` (ListMemoryPathsForm). */
  async paths(user: UserRecord, form: { query?: string | null; type?: MemoryTypeFilter; limit?: number }) {
    await this.requireFeature(user);
    return listPathGroups(await this.store().ofUser(user.id), { query: form.query, type: form.type ?? 'all', limit: form.limit });
  }

  /** `POST /path` (ReadMemoryPathForm). */
  async path(user: UserRecord, form: { path: string; type?: MemoryTypeFilter; include_children?: boolean; limit?: number }) {
    await this.requireFeature(user);
    return readPath(await this.store().ofUser(user.id), { path: form.path, type: form.type ?? 'all', includeChildren: form.include_children ?? true, limit: form.limit });
  }

  // ---- the chat's system context -------------------------------------------------

  /**
   * The `<memory_context>` block for a chat turn (utils/memory.py add_memory_context):
   * every `user` memory, the memories filed under paths the text names, and the
   * memories retrieval finds most relevant to it; each part cut to its character
   * limit. Null when there is nothing to add.
   */
  async systemContext(user: UserRecord, query: string): Promise<string | null> {
    if (!query) return null;
    const all = await this.store().ofUser(user.id);
    if (all.length === 0) return null;
    const seen = new Set<string>();
    const sections: Record<'user' | 'neighborhood' | 'context', string[]> = { user: [], neighborhood: [], context: [] };
    for (const memory of all.filter((m) => m.type === 'user').sort((a, b) => (a.path ?? '').localeCompare(b.path ?? '') || a.updated_at - b.updated_at)) {
      seen.add(memory.id);
      sections.user.push(memoryLabel(memory));
    }
    for (const hint of pathHints(query, all)) {
      for (const memory of searchMemories(all, { path: hint, type: 'context', limit: 4 })) {
        if (seen.has(memory.id)) continue;
        seen.add(memory.id);
        sections.neighborhood.push(memoryLabel(memory));
      }
    }
    let found: RetrievedChunk[] = [];
    try {
      found = await this.retrieval.query([memoryCollection(user.id)], [query], { k: CONTEXT_QUERY_K });
    } catch (error) {
      this.core.log.debug({ err: error instanceof Error ? error.message : String(error) }, 'Memory retrieval failed');
    }
    for (const chunk of found) {
      const id = String(chunk.metadata.file_id ?? '');
      if (id && seen.has(id)) continue;
      if (id) seen.add(id);
      const path = typeof chunk.metadata.path === 'string' ? chunk.metadata.path : null;
      const text = path && chunk.text.startsWith(`${path}\n`) ? chunk.text.slice(path.length + 1) : chunk.text;
      sections[chunk.metadata.type === 'user' ? 'user' : 'context'].push(path ? `${path}: ${text}` : text);
    }
    const list = (title: string, items: string[]) => (items.length > 0 ? `[${title}]\n${items.map((item) => `- ${item}`).join('\n')}` : '');
    const userPart = list('User Memory', sections.user);
    const contextPart = [list('Memory Neighborhood', sections.neighborhood), list('Relevant Context', sections.context)].filter(Boolean).join('\n\n');
    const userLimit = Math.max(250, this.core.settings.get(MEMORIES_USER_CHAR_LIMIT) || 2000);
    const contextLimit = Math.max(250, this.core.settings.get(MEMORIES_CONTEXT_CHAR_LIMIT) || 2000);
    const rendered = `${userPart.slice(0, userLimit)}\n\n${contextPart.slice(0, contextLimit)}`.trim();
    return rendered ? `${MEMORY_CONTEXT_OPEN}\n${rendered}\n${MEMORY_CONTEXT_CLOSE}` : null;
  }
}

/** A found chunk's metadata as the reference's memory metadata (without the store's `file_id`). */
function chunkMetadata(chunk: RetrievedChunk): Json {
  const { file_id: _id, ...metadata } = chunk.metadata;
  return metadata;
}
