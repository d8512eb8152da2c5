import { randomUUID } from 'node:crypto';
import { type Expression, type SqlBool, sql } from 'kysely';
import type { Db } from '../../core/db/database.js';
import { fromJson, toJson } from '../../core/db/json.js';
import { containsPattern } from '../../core/db/like.js';
import type { NoteRow } from '../../core/db/tables.js';

type Json = Record<string, unknown>;

/** A note with its JSON columns decoded (the reference's NoteModel without grants and pin). */
export interface NoteRecord {
  id: string;
  user_id: string;
  title: string;
  data: Json | null;
  meta: Json | null;
  created_at: number;
  updated_at: number;
}

export type NoteWrite = Partial<Pick<NoteRecord, 'title' | 'data' | 'meta'>>;

/** What a search runs: the caller's access condition and the reference's filters. */
export interface NoteSearch {
  access: Expression<SqlBool>;
  userId: string;
  words: string[];
  viewOption?: string;
  orderBy?: string;
  direction?: string;
  offset: number;
  limit: number;
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

function toRecord(row: NoteRow): NoteRecord {
  const data = fromJson<unknown>(row.data, null);
  const meta = fromJson<unknown>(row.meta, null);
  return {
    id: row.id,
    user_id: row.user_id,
    title: row.title,
    data: isObject(data) ? data : null,
    meta: isObject(meta) ? meta : null,
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  };
}

/** A text column without hyphens and spaces, lower case: the reference's search normalisation. */
const squeezed = (expression: ReturnType<typeof sql>) => sql`lower(replace(replace(${expression}, '-', ''), ' ', ''))`;

export class NoteStore {
  constructor(private readonly db: Db) {}

  /** `lock`: the row stays locked until the transaction ends (PostgreSQL; SQLite writes one at a time anyway). */
  async byId(id: string, lock = false): Promise<NoteRecord | null> {
    let query = this.db.selectFrom('note').selectAll().where('id', '=', id);
    if (lock) query = query.forUpdate();
    const row = await query.executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  async insert(note: NoteRecord): Promise<void> {
    await this.db
      .insertInto('note')
      .values({ ...note, data: toJson(note.data), meta: toJson(note.meta) })
      .execute();
  }

  /** False when there is no such note. */
  async update(id: string, fields: NoteWrite, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('note')
      .set({
        ...(fields.title !== undefined ? { title: fields.title } : {}),
        ...(fields.data !== undefined ? { data: toJson(fields.data) } : {}),
        ...(fields.meta !== undefined ? { meta: toJson(fields.meta) } : {}),
        updated_at: now,
      })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** The note, its pins and its document (grants are the caller's). */
  async delete(id: string): Promise<boolean> {
    await this.db.deleteFrom('pinned_note').where('note_id', '=', id).execute();
    await this.db.deleteFrom('note_document_update').where('note_id', '=', id).execute();
    const result = await this.db.deleteFrom('note').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Notes the access condition lets through, newest change first; a page when `limit` is given. */
  async list(access: Expression<SqlBool>, page?: { offset: number; limit: number }): Promise<NoteRecord[]> {
    let query = this.db.selectFrom('note').selectAll().where(access).orderBy('updated_at', 'desc').orderBy('id');
    if (page) query = query.offset(page.offset).limit(page.limit);
    return (await query.execute()).map(toRecord);
  }

  /** The user's pinned notes the access condition lets through, latest pin first. */
  async pinned(userId: string, access: Expression<SqlBool>): Promise<NoteRecord[]> {
    const rows = await this.db
      .selectFrom('note')
      .innerJoin('pinned_note', 'pinned_note.note_id', 'note.id')
      .selectAll('note')
      .where('pinned_note.user_id', '=', userId)
      .where(access)
      .orderBy('pinned_note.created_at', 'desc')
      .execute();
    return rows.map(toRecord);
  }

  async pinnedIds(userId: string): Promise<Set<string>> {
    const rows = await this.db.selectFrom('pinned_note').select('note_id').where('user_id', '=', userId).execute();
    return new Set(rows.map((r) => r.note_id));
  }

  /** Pins the note for the user at `at` (an import's pin, kept with its time). */
  async pin(userId: string, noteId: string, at: number): Promise<void> {
    await this.db.insertInto('pinned_note').values({ user_id: userId, note_id: noteId, created_at: at }).execute();
  }

  /** Pins the note for the user, or unpins it when pinned; true when it is pinned afterwards. */
  async togglePin(userId: string, noteId: string, now: number): Promise<boolean> {
    const removed = await this.db.deleteFrom('pinned_note').where('user_id', '=', userId).where('note_id', '=', noteId).executeTakeFirst();
    if (Number(removed.numDeletedRows) > 0) return false;
    await this.db.insertInto('pinned_note').values({ user_id: userId, note_id: noteId, created_at: now }).execute();
    return true;
  }

  /**
   * One page of the search, and how many match: every word must appear in the
   * title or the markdown, hyphens and spaces ignored (notes.py search_notes).
   */
  async search(search: NoteSearch): Promise<{ items: (NoteRecord & { owner: { id: string; name: string; role: string; email: string } | null })[]; total: number }> {
    let query = this.db.selectFrom('note').leftJoin('user', 'user.id', 'note.user_id').where(search.access);
    for (const word of search.words) {
      const pattern = containsPattern(word);
      // The markdown sits in JSON text: searching the whole `data` text is the portable form of data.content.md.
      query = query.where((eb) =>
        eb.or([sql<SqlBool>`${squeezed(sql.ref('note.title'))} like ${pattern} escape '\\'`, sql<SqlBool>`${squeezed(sql.ref('note.data'))} like ${pattern} escape '\\'`]),
      );
    }
    if (search.viewOption === 'created') query = query.where('note.user_id', '=', search.userId);
    else if (search.viewOption === 'shared') query = query.where('note.user_id', '!=', search.userId);

    const counted = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    const column = search.orderBy === 'name' ? 'note.title' : search.orderBy === 'created_at' ? 'note.created_at' : 'note.updated_at';
    const direction = search.orderBy && ['name', 'created_at', 'updated_at'].includes(search.orderBy) && search.direction === 'asc' ? 'asc' : 'desc';
    const rows = await query
      .selectAll('note')
      .select(['user.name as owner_name', 'user.role as owner_role', 'user.email as owner_email', 'user.id as owner_id'])
      .orderBy(column, direction)
      .orderBy('note.id')
      .offset(search.offset)
      .limit(search.limit)
      .execute();
    const items = rows.map((row) => ({
      ...toRecord(row),
      owner: row.owner_id ? { id: row.owner_id, name: row.owner_name ?? '', role: row.owner_role ?? '', email: row.owner_email ?? '' } : null,
    }));
    return { items, total: Number(counted?.n ?? 0) };
  }

  // ---- the collaborative document ------------------------------------------------

  /** Stores one Yjs update of the note's document. */
  async appendUpdate(noteId: string, update: Uint8Array, now: number): Promise<void> {
    await this.db
      .insertInto('note_document_update')
      .values({ id: randomUUID(), note_id: noteId, update: Buffer.from(update).toString('base64'), created_at: now })
      .execute();
  }

  /** Every stored update of the note's document, with its row id. */
  async updates(noteId: string): Promise<{ id: string; update: Uint8Array }[]> {
    const rows = await this.db.selectFrom('note_document_update').select(['id', 'update']).where('note_id', '=', noteId).execute();
    return rows.map((row) => ({ id: row.id, update: new Uint8Array(Buffer.from(row.update, 'base64')) }));
  }

  /** Notes with a document update stored after their last save. */
  async unsavedDocuments(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('note_document_update')
      .innerJoin('note', 'note.id', 'note_document_update.note_id')
      .select('note.id')
      .distinct()
      .whereRef('note_document_update.created_at', '>', 'note.updated_at')
      .execute();
    return rows.map((r) => r.id);
  }

  /** Replaces the rows `ids` (read before) by one merged update; rows stored meanwhile stay. */
  async compact(noteId: string, ids: string[], merged: Uint8Array, now: number): Promise<void> {
    if (ids.length < 2) return;
    await this.db.deleteFrom('note_document_update').where('note_id', '=', noteId).where('id', 'in', ids).execute();
    await this.appendUpdate(noteId, merged, now);
  }
}
