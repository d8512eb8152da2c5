import * as Y from 'yjs';
import type { Realtime, RealtimeClient, RealtimeUser } from '../../core/realtime/server.js';
import type { NotesService } from './service.js';

/**
 * Collaborative editing of notes over the socket (socket/main.py `ydoc:*`, and
 * `join-note`), as the frontend's SocketIOCollaborationProvider speaks it:
 *
 * - `ydoc:document:join` {document_id: 'note:<id>'}: readers join the room
 *   `doc_note:<id>` and get `ydoc:document:state` (the merged document, and the
 *   sessions in the room); the others hear `ydoc:user:joined`.
 * - `ydoc:document:update` {document_id, update}: from a member of the room with
 *   write access; the update must decode, is stored, then sent to the other
 *   editors (on every instance, through the socket adapter) and acknowledged.
 *   The note's `data.content` is saved from the merged document after a quiet
 *   `saveDelayMs`, and at once when the last local editor of the note leaves.
 * - `ydoc:document:state`, `ydoc:awareness:update`, `ydoc:document:leave`.
 *
 * Every update is stored before it is acknowledged, so a restart or a kill -9
 * loses no acknowledged edit: the next join merges the stored updates, and the
 * start-up saves documents whose last updates were not saved yet.
 */
export class NoteCollaboration {
  /** Note id → the pending save of its document on this instance. */
  private readonly saves = new Map<string, NodeJS.Timeout>();
  /** Saves under way, awaited by close(). */
  private readonly saving = new Set<Promise<void>>();

  constructor(
    private readonly realtime: Realtime,
    private readonly notes: NotesService,
    private readonly log: { warn(details: object, message: string): void },
    private readonly saveDelayMs = 500,
  ) {
    realtime.on('join-note', (client, data) => this.joinNote(client, data));
    realtime.on('ydoc:document:join', (client, data) => this.join(client, data));
    realtime.on('ydoc:document:state', (client, data) => this.state(client, data));
    realtime.on('ydoc:document:update', (client, data) => this.update(client, data));
    realtime.on('ydoc:awareness:update', (client, data) => this.awareness(client, data));
    realtime.on('ydoc:document:leave', (client, data) => this.leave(client, data));
    realtime.onDisconnect((client) => {
      for (const room of client.rooms()) if (room.startsWith(DOC_ROOM)) void this.left(client, room.slice(DOC_ROOM.length));
    });
    notes.onUpdate((note) => realtime.emitToRoom(`note:${note.id}`, 'note-events', note));
  }

  /** `join-note` {auth: {token}, note_id}: the room of a note's HTTP saves (`note-events`), for its readers. */
  private async joinNote(client: RealtimeClient, data: Record<string, unknown>): Promise<null> {
    const user = await this.realtime.userOfToken(isObject(data.auth) ? data.auth.token : undefined);
    if (!user || typeof data.note_id !== 'string') return null;
    const note = await this.notes.find(data.note_id);
    if (note && (await this.notes.may(user, note, 'read'))) client.join(`note:${note.id}`);
    return null;
  }

  private async join(client: RealtimeClient, data: Record<string, unknown>): Promise<boolean> {
    const user = client.user;
    const noteId = noteIdOf(data.document_id);
    if (!user || !noteId) return false;
    const note = await this.notes.find(noteId);
    if (!note || !(await this.notes.may(user, note, 'read'))) return false;
    const room = roomOf(noteId);
    client.join(room);
    await this.sendState(client, noteId);
    client.broadcast(room, 'ydoc:user:joined', {
      document_id: documentIdOf(noteId),
      user_id: user.id,
      user_name: typeof data.user_name === 'string' ? data.user_name : user.name,
      user_color: typeof data.user_color === 'string' ? data.user_color : '#000000',
    });
    return true;
  }

  private async state(client: RealtimeClient, data: Record<string, unknown>): Promise<boolean> {
    const noteId = noteIdOf(data.document_id);
    if (!client.user || !noteId || !client.inRoom(roomOf(noteId))) return false;
    await this.sendState(client, noteId);
    return true;
  }

  private async sendState(client: RealtimeClient, noteId: string): Promise<void> {
    const [doc, sessions] = await Promise.all([this.notes.document(noteId), this.realtime.socketsIn(roomOf(noteId))]);
    client.emit('ydoc:document:state', { document_id: documentIdOf(noteId), state: Array.from(Y.encodeStateAsUpdate(doc)), sessions });
  }

  /** True when the update was stored and sent on; false when it was dropped (not joined, no write access, malformed). */
  private async update(client: RealtimeClient, data: Record<string, unknown>): Promise<boolean> {
    const user = client.user;
    const noteId = noteIdOf(data.document_id);
    if (!user || !noteId || !client.inRoom(roomOf(noteId))) return false;
    const note = await this.notes.find(noteId);
    // Joining needs read access only: every update checks write access.
    if (!note || !(await this.notes.may(user, note, 'write'))) return false;
    const update = decodeUpdate(data.update);
    if (!update) {
      this.log.warn({ noteId, user: user.id }, 'Dropped a malformed note document update');
      return false;
    }
    await this.notes.appendUpdate(noteId, update);
    client.broadcast(roomOf(noteId), 'ydoc:document:update', {
      document_id: documentIdOf(noteId),
      user_id: user.id,
      update: Array.from(update),
      socket_id: client.sessionId,
    });
    this.scheduleSave(noteId);
    return true;
  }

  private awareness(client: RealtimeClient, data: Record<string, unknown>): boolean {
    const noteId = noteIdOf(data.document_id);
    if (!client.user || !noteId || !client.inRoom(roomOf(noteId))) return false;
    const update = Array.isArray(data.update) || Buffer.isBuffer(data.update) ? data.update : null;
    if (!update) return false;
    // The user id is the signed-in one, never the client's (as the reference).
    client.broadcast(roomOf(noteId), 'ydoc:awareness:update', { document_id: documentIdOf(noteId), user_id: client.user.id, update });
    return true;
  }

  private async leave(client: RealtimeClient, data: Record<string, unknown>): Promise<boolean> {
    const noteId = noteIdOf(data.document_id);
    if (!client.user || !noteId || !client.inRoom(roomOf(noteId))) return false;
    client.leave(roomOf(noteId));
    await this.left(client, noteId);
    return true;
  }

  /** An editor left (or disconnected): the others hear it, and the document is saved now when it has unsaved edits. */
  private async left(client: RealtimeClient, noteId: string): Promise<void> {
    const user = client.user as RealtimeUser | null;
    if (user) client.broadcast(roomOf(noteId), 'ydoc:user:left', { document_id: documentIdOf(noteId), user_id: user.id });
    if (this.saves.has(noteId)) await this.save(noteId);
  }

  private scheduleSave(noteId: string): void {
    clearTimeout(this.saves.get(noteId));
    this.saves.set(
      noteId,
      setTimeout(() => void this.save(noteId), this.saveDelayMs),
    );
  }

  private save(noteId: string): Promise<void> {
    clearTimeout(this.saves.get(noteId));
    this.saves.delete(noteId);
    const saving = this.notes.saveDocument(noteId).catch((error: unknown) => {
      this.log.warn({ noteId, err: error instanceof Error ? error.message : String(error) }, 'Saving a note document failed');
    });
    this.saving.add(saving);
    void saving.finally(() => this.saving.delete(saving));
    return saving;
  }

  /** Saves every document with a pending save, and waits for the saves under way (shutdown). */
  async close(): Promise<void> {
    for (const noteId of [...this.saves.keys()]) void this.save(noteId);
    await Promise.all([...this.saving]);
  }
}

const DOC_ROOM = 'doc_note:';
const roomOf = (noteId: string) => `${DOC_ROOM}${noteId}`;
const documentIdOf = (noteId: string) => `note:${noteId}`;
/** Largest update taken (bytes): a whole pasted document fits; the socket's buffer limit is 16 MiB. */
const MAX_UPDATE_BYTES = 8 * 1024 * 1024;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** `note:<id>`, or `note_<id>` (the reference treats both as the same document). */
function noteIdOf(documentId: unknown): string | null {
  if (typeof documentId !== 'string') return null;
  const match = /^note[:_](.+)$/.exec(documentId);
  return match ? match[1] : null;
}

/**
 * The update as bytes when it is one Yjs can apply: a list of bytes (the frontend
 * sends `Array.from(update)`) or a binary attachment, which applies to an empty
 * document without error. Anything else is null.
 */
function decodeUpdate(value: unknown): Uint8Array | null {
  let bytes: Uint8Array;
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) bytes = new Uint8Array(value);
  else if (Array.isArray(value) && value.length <= MAX_UPDATE_BYTES && value.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) bytes = Uint8Array.from(value as number[]);
  else return null;
  if (bytes.length === 0 || bytes.length > MAX_UPDATE_BYTES) return null;
  try {
    Y.applyUpdate(new Y.Doc(), bytes);
    return bytes;
  } catch {
    return null;
  }
}
