import { randomUUID } from 'node:crypto';
import * as Y from 'yjs';
import { type AccessGrant, RESOURCE_TYPES } from '../../core/access/grants.js';
import type { AccessService, AccessSubject, SharingRule } from '../../core/access/service.js';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import type { Db } from '../../core/db/database.js';
import { ERROR, forbidden, notFound, unauthorized } from '../../core/http/errors.js';
import type { ChatResponse } from '../chats/schemas.js';
import type { ChatsService } from '../chats/service.js';
import type { UsersService } from '../users/service.js';
import { renderNoteDocument } from './rendering.js';
import type { NoteForm, NoteSearchQuery } from './schemas.js';
import { type NoteRecord, NoteStore, type NoteWrite } from './store.js';

type Json = Record<string, unknown>;

const RESOURCE = RESOURCE_TYPES.note;
const SHARING: SharingRule = { publicPermission: 'sharing.public_notes' };
/** Page size of `GET /?page=` and `GET /search` (routers/notes.py). */
const PAGE_SIZE = 60;
/** List items carry this much of the markdown (routers/notes.py _truncate_note_data). */
const ITEM_MARKDOWN_LENGTH = 1000;

export interface NoteUser {
  id: string;
  name: string;
  role: string;
  email: string;
}

/** A note as the routes answer it (NoteModel): the record with the caller's pin and the grants. */
export interface NoteView extends NoteRecord {
  is_pinned: boolean;
  access_grants: AccessGrant[];
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** `data` of a list item: only `content.md`, cut (the editor loads the whole note by id). */
function itemData(data: Json | null): Json | null {
  if (!data || Object.keys(data).length === 0) return data;
  const content = isObject(data.content) ? data.content : {};
  const md = typeof content.md === 'string' ? content.md : '';
  return { content: { md: [...md].slice(0, ITEM_MARKDOWN_LENGTH).join('') } };
}

/** What marks a chat as one of a note's (0.11.0 stores the link in the hidden chat's meta). */
const noteChatMeta = (noteId: string) => ({ type: 'note', note_id: noteId });

/** The system prompt of a note's chat (routers/notes.py, 0.11.0). */
const noteChatSystem = (noteId: string) =>
  `You are chatting with note ${noteId}. Use view_note with this note id to read the current note. ` +
  'For edits, use replace_note_content for whole-note changes or replace_note_text for targeted exact text replacement.';

/** A note's chat as answered: its system prompt the current one, without a stale `params.note_id` (_normalize_note_chat_payload). */
function withNoteSystem(chat: ChatResponse, noteId: string): ChatResponse {
  const content = isObject(chat.chat) ? chat.chat : {};
  const { note_id: _noteId, ...params } = isObject(content.params) ? content.params : {};
  return { ...chat, chat: { ...content, params: { ...params, system: noteChatSystem(noteId) } } };
}

/** A document from stored updates, one at a time: an update that does not apply is skipped, never the whole document. */
function documentOf(updates: { update: Uint8Array }[]): Y.Doc {
  const doc = new Y.Doc();
  for (const { update } of updates) {
    try {
      Y.applyUpdate(doc, update);
    } catch {
      // Checked when received; kept from breaking the rest should one ever be bad.
    }
  }
  return doc;
}

/**
 * Notes (`/api/v1/notes`): the user's notes and the ones shared with them, pins
 * (per user), access grants, and the collaborative document the editors share
 * over the socket (collaboration.ts), saved into `data.content`. See docs/notes.md.
 */
export class NotesService {
  constructor(
    private readonly core: Core,
    private readonly access: AccessService,
    private readonly users: UsersService,
    private readonly chats: ChatsService,
  ) {}

  /** Told every note saved through the HTTP routes. */
  private readonly updateListeners: ((note: NoteView) => void)[] = [];

  private store(db: Db = this.core.db): NoteStore {
    return new NoteStore(db);
  }

  /** Note timestamps are nanoseconds, as the reference's. */
  private nowNs(): number {
    return this.core.clock.nowMs() * 1_000_000;
  }

  // ---- rules ---------------------------------------------------------------

  /** `features.notes` (admins hold every permission): 401 otherwise, as every route of the reference. */
  private async requireFeature(user: UserRecord): Promise<void> {
    if (!(await this.access.hasPermission(user, 'features.notes'))) throw unauthorized(ERROR.UNAUTHORIZED);
  }

  /** Admins (whatever BYPASS_ADMIN_ACCESS_CONTROL says, as the reference's routes), owners and grant holders. */
  async may(user: { id: string; role: string }, note: NoteRecord, permission: 'read' | 'write'): Promise<boolean> {
    if (user.role === 'admin' || user.id === note.user_id) return true;
    const record = await this.users.byId(user.id);
    return record !== null && this.access.hasAccess(record, RESOURCE, note.id, permission, note.user_id);
  }

  /** The note when the user may read (or write) it: 404 when missing, the reference's 403 otherwise. */
  private async requireNote(user: UserRecord, id: string, permission: 'read' | 'write'): Promise<NoteRecord> {
    await this.requireFeature(user);
    const note = await this.store().byId(id);
    if (!note) throw notFound();
    if (!(await this.may(user, note, permission))) throw forbidden(ERROR.DEFAULT());
    return note;
  }

  /** Listings are the user's own and granted notes; the reference lists no others even to admins. */
  private ownSubject(subject: AccessSubject): AccessSubject {
    return { ...subject, bypass: false };
  }

  private async view(note: NoteRecord, userId: string, db?: Db): Promise<NoteView> {
    const [grants, pins] = await Promise.all([this.access.grantsOf(RESOURCE, note.id, db), this.store(db).pinnedIds(userId)]);
    return { ...note, is_pinned: pins.has(note.id), access_grants: grants };
  }

  private async owners(notes: NoteRecord[]): Promise<Map<string, NoteUser>> {
    const users = await this.users.byIds([...new Set(notes.map((n) => n.user_id))]);
    return new Map(users.map((u) => [u.id, { id: u.id, name: u.name, role: u.role, email: u.email }]));
  }

  /** List items: the cut content, the caller's pin and the owner; notes whose owner is gone are left out, as the reference. */
  private async items(user: UserRecord, notes: NoteRecord[], pinned?: Set<string>) {
    const [owners, pins] = await Promise.all([this.owners(notes), pinned ? Promise.resolve(pinned) : this.store().pinnedIds(user.id)]);
    return notes
      .filter((note) => owners.has(note.user_id))
      .map((note) => ({
        id: note.id,
        title: note.title,
        data: itemData(note.data),
        is_pinned: pins.has(note.id),
        updated_at: note.updated_at,
        created_at: note.created_at,
        user: owners.get(note.user_id)!,
      }));
  }

  // ---- listings --------------------------------------------------------------

  /** `GET /?page=`: the notes the user owns or may read, newest change first; 60 a page when a page is given. */
  async list(user: UserRecord, page?: number) {
    await this.requireFeature(user);
    const subject = this.ownSubject(await this.access.subjectOf(user));
    const filter = this.access.accessFilter(subject, RESOURCE, 'read', { id: 'note.id', owner: 'note.user_id' });
    const notes = await this.store().list(filter, page ? { offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE } : undefined);
    return this.items(user, notes);
  }

  /** `GET /pinned`: the user's pinned notes they may still read, latest pin first. */
  async pinned(user: UserRecord) {
    await this.requireFeature(user);
    const subject = this.ownSubject(await this.access.subjectOf(user));
    const notes = await this.store().pinned(user.id, this.access.accessFilter(subject, RESOURCE, 'read', { id: 'note.id', owner: 'note.user_id' }));
    return this.items(user, notes, new Set(notes.map((n) => n.id)));
  }

  /** `GET /search`: words in the title or text, the view, `permission` (write by default, as the reference), order, 60 a page. */
  async search(user: UserRecord, query: NoteSearchQuery) {
    await this.requireFeature(user);
    const subject = await this.access.subjectOf(user);
    const words = (query.query ?? '')
      .split(/\s+/)
      .map((word) => word.replace(/-/g, ''))
      .filter((word) => word !== '');
    const page = Math.max(1, query.page ?? 1);
    const result = await this.store().search({
      access: this.access.accessFilter(subject, RESOURCE, query.permission ?? 'write', { id: 'note.id', owner: 'note.user_id' }),
      userId: user.id,
      words,
      viewOption: query.view_option,
      orderBy: query.order_by,
      direction: query.direction,
      offset: (page - 1) * PAGE_SIZE,
      limit: PAGE_SIZE,
    });
    const [grants, pins] = await Promise.all([
      this.access.grantsOfMany(
        RESOURCE,
        result.items.map((n) => n.id),
      ),
      this.store().pinnedIds(user.id),
    ]);
    const items = result.items.map(({ owner, ...note }) => ({
      ...note,
      data: itemData(note.data),
      is_pinned: pins.has(note.id),
      access_grants: grants.get(note.id) ?? [],
      user: owner,
    }));
    return { items, total: result.total };
  }

  // ---- records ---------------------------------------------------------------

  /** `POST /create`. */
  async create(user: UserRecord, form: NoteForm): Promise<NoteView> {
    await this.requireFeature(user);
    const grants = (await this.access.grantsOfForm(user, form, RESOURCE, SHARING)) ?? [];
    const now = this.nowNs();
    const note: NoteRecord = { id: randomUUID(), user_id: user.id, title: form.title, data: form.data ?? null, meta: form.meta ?? null, created_at: now, updated_at: now };
    return this.core.db.transaction().execute(async (trx) => {
      await this.store(trx).insert(note);
      const stored = await this.access.replaceGrants(RESOURCE, note.id, grants, trx);
      await this.core.events.publish({ event: 'note.created', actor: user, subjectId: note.id, subjectType: 'note', data: { title: note.title } }, trx);
      return { ...note, is_pinned: false, access_grants: stored };
    });
  }

  /** `GET /{id}`: with `write_access`. */
  async get(user: UserRecord, id: string) {
    const note = await this.requireNote(user, id, 'read');
    const view = await this.view(note, user.id);
    const publicWrite = view.access_grants.some((g) => g.principal_type === 'user' && g.principal_id === '*' && g.permission === 'write');
    return { ...view, write_access: publicWrite || (await this.may(user, note, 'write')) };
  }

  /**
   * `POST /{id}/update`: the title; `data` and `meta` merged into the stored ones
   * (key by key, as the reference); grants when the form names them.
   */
  async update(user: UserRecord, id: string, form: NoteForm): Promise<NoteView> {
    const note = await this.requireNote(user, id, 'write');
    const grants = await this.access.grantsOfForm(user, form, RESOURCE, SHARING);
    const fields: NoteWrite = { title: form.title };
    if (form.data) fields.data = { ...note.data, ...form.data };
    if (form.meta) fields.meta = { ...note.meta, ...form.meta };
    return this.write(user, note, fields, grants ? (trx) => this.access.replaceGrants(RESOURCE, id, grants, trx) : undefined);
  }

  /** Writes a note's fields (and grants) with its `note.updated` event; listeners hear the saved note. */
  private async write(user: UserRecord, note: NoteRecord, fields: NoteWrite, grants?: (trx: Db) => Promise<unknown>): Promise<NoteView> {
    const now = this.nowNs();
    const view = await this.core.db.transaction().execute(async (trx) => {
      // Deleted meanwhile: answer as for a missing note.
      if (!(await this.store(trx).update(note.id, fields, now))) throw notFound();
      await grants?.(trx);
      const updated = { ...note, ...fields, updated_at: now };
      await this.core.events.publish({ event: 'note.updated', actor: user, subjectId: note.id, subjectType: 'note', data: { title: updated.title } }, trx);
      return this.view(updated, user.id, trx);
    });
    for (const listener of this.updateListeners) listener(view);
    return view;
  }

  /** Called with every note saved through the HTTP routes (the socket's `note-events`). */
  onUpdate(listener: (note: NoteView) => void): void {
    this.updateListeners.push(listener);
  }

  /** `POST /{id}/access/update`: replaces the grants (an empty list makes the note private). */
  async updateAccess(user: UserRecord, id: string, accessGrants: unknown[]): Promise<NoteView> {
    const note = await this.requireNote(user, id, 'write');
    const grants = await this.access.prepareGrants(user, accessGrants, SHARING);
    return this.core.db.transaction().execute(async (trx) => {
      if (!(await this.store(trx).byId(id))) throw notFound();
      await this.access.replaceGrants(RESOURCE, id, grants, trx);
      await this.core.events.publish({ event: 'note.access_updated', actor: user, subjectId: id, subjectType: 'note' }, trx);
      return this.view(note, user.id, trx);
    });
  }

  /** `POST /{id}/pin`: pins the note for the caller, or unpins it; readers may pin. */
  async togglePin(user: UserRecord, id: string): Promise<NoteView> {
    const note = await this.requireNote(user, id, 'read');
    return this.core.db.transaction().execute(async (trx) => {
      const pinned = await this.store(trx).togglePin(user.id, id, this.nowNs());
      await this.core.events.publish({ event: pinned ? 'note.pinned' : 'note.unpinned', actor: user, subjectId: id, subjectType: 'note' }, trx);
      return { ...note, is_pinned: pinned, access_grants: await this.access.grantsOf(RESOURCE, id, trx) };
    });
  }

  /** `DELETE /{id}/delete`: the note, its pins, its document and its grants. */
  async delete(user: UserRecord, id: string): Promise<boolean> {
    await this.requireNote(user, id, 'write');
    return this.core.db.transaction().execute(async (trx) => {
      await this.access.deleteGrantsOf(RESOURCE, id, trx);
      if (await this.store(trx).delete(id)) {
        await this.core.events.publish({ event: 'note.deleted', actor: user, subjectId: id, subjectType: 'note' }, trx);
      }
      return true;
    });
  }

  // ---- the note's chats (0.11.0) --------------------------------------------------

  /** `GET /{id}/chat`: the caller's latest chat about the note, started when there is none. */
  async chat(user: UserRecord, id: string): Promise<ChatResponse> {
    const note = await this.requireNote(user, id, 'read');
    const [latest] = await this.chats.internalChats(user.id, noteChatMeta(note.id));
    return latest ? withNoteSystem(latest, note.id) : this.startChat(user, note);
  }

  /** `GET /{id}/chats`: the caller's chats about the note, latest change first. */
  async chatsOf(user: UserRecord, id: string): Promise<ChatResponse[]> {
    const note = await this.requireNote(user, id, 'read');
    return (await this.chats.internalChats(user.id, noteChatMeta(note.id))).map((chat) => withNoteSystem(chat, note.id));
  }

  /** `POST /{id}/chat`: a new chat about the note (readers too: the chat is the caller's). */
  async newChat(user: UserRecord, id: string): Promise<ChatResponse> {
    return this.startChat(user, await this.requireNote(user, id, 'read'));
  }

  /** A hidden chat of the caller linked to the note, its system prompt pointing the model at the note's tools. */
  private async startChat(user: UserRecord, note: NoteRecord): Promise<ChatResponse> {
    const id = randomUUID();
    const chat = await this.chats.createInternal(
      user,
      { id, title: 'Chat', models: [''], params: { system: noteChatSystem(note.id) }, history: { messages: {}, currentId: null }, messages: [], tags: [] },
      noteChatMeta(note.id),
    );
    await this.core.events.publish({ event: 'note.chat_linked', actor: user, subjectId: note.id, subjectType: 'note', data: { chat_id: chat.id } });
    return chat;
  }

  // ---- the collaborative document ------------------------------------------------

  /** A note as a chat's source: its title and Markdown when the user may read it, null otherwise. */
  async readable(user: UserRecord, id: string): Promise<{ id: string; title: string; markdown: string } | null> {
    const note = await this.store().byId(id);
    if (!note || !(await this.may(user, note, 'read'))) return null;
    const content = (note.data as { content?: { md?: unknown } } | null)?.content;
    return { id: note.id, title: note.title, markdown: typeof content?.md === 'string' ? content.md : '' };
  }

  /** The note, or null (the socket handlers drop what they cannot serve). */
  async find(id: string): Promise<NoteRecord | null> {
    return this.store().byId(id);
  }

  /** Stores one update of the note's document (already checked to decode). */
  async appendUpdate(noteId: string, update: Uint8Array): Promise<void> {
    await this.store().appendUpdate(noteId, update, this.nowNs());
  }

  /** The merged document of the note, from every stored update. */
  async document(noteId: string): Promise<Y.Doc> {
    return documentOf(await this.store().updates(noteId));
  }

  /**
   * Saves the merged document into `data.content` (md, html, json) and compacts its
   * stored updates into one. Inside one transaction that locks the note row, so two
   * instances saving at once write in order and the later one holds every update the
   * earlier one read. A note deleted meanwhile is left alone.
   */
  async saveDocument(noteId: string): Promise<void> {
    await this.core.db.transaction().execute(async (trx) => {
      const store = this.store(trx);
      const note = await store.byId(noteId, this.core.database.dialect === 'postgres');
      if (!note) return;
      const updates = await store.updates(noteId);
      if (updates.length === 0) return;
      const doc = documentOf(updates);
      const merged = Y.encodeStateAsUpdate(doc);
      const now = this.nowNs();
      await store.update(noteId, { data: { ...note.data, content: renderNoteDocument(doc) } }, now);
      await store.compact(
        noteId,
        updates.map((u) => u.id),
        merged,
        now,
      );
    });
  }

  /** Notes whose document changed after their last save (an instance stopped before saving): saved now. */
  async saveUnsavedDocuments(): Promise<void> {
    for (const noteId of await this.store().unsavedDocuments()) await this.saveDocument(noteId);
  }
}
