import { io, type Socket } from 'socket.io-client';
import * as Y from 'yjs';
import { expect } from 'vitest';

/**
 * A note editor as the frontend's SocketIOCollaborationProvider drives one: a Yjs
 * document bound to the fragment `prosemirror`, joined to `note:<id>`, sending its
 * local changes as `ydoc:document:update` and applying the others'.
 */
export class NoteEditor {
  readonly doc = new Y.Doc();
  readonly acks: Promise<boolean>[] = [];
  readonly received: { event: string; data: any }[] = [];
  private synced!: Promise<void>;

  private constructor(
    readonly socket: Socket,
    readonly documentId: string,
  ) {}

  static async open(url: string, token: string, noteId: string): Promise<NoteEditor> {
    const socket = io(url, { path: '/ws/socket.io', transports: ['websocket'], auth: { token }, reconnection: false, forceNew: true });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
    const editor = new NoteEditor(socket, `note:${noteId}`);
    editor.listen();
    return editor;
  }

  private listen(): void {
    for (const event of ['ydoc:user:joined', 'ydoc:user:left', 'ydoc:awareness:update', 'ydoc:document:update', 'ydoc:document:state']) {
      this.socket.on(event, (data: any) => this.received.push({ event, data }));
    }
    this.socket.on('ydoc:document:update', (data: any) => {
      if (data.document_id === this.documentId) Y.applyUpdate(this.doc, new Uint8Array(data.update), 'server');
    });
    this.synced = new Promise((resolve) =>
      this.socket.on('ydoc:document:state', (data: any) => {
        Y.applyUpdate(this.doc, new Uint8Array(data.state), 'server');
        resolve();
      }),
    );
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === 'server') return;
      this.acks.push(this.socket.timeout(5000).emitWithAck('ydoc:document:update', { document_id: this.documentId, update: Array.from(update), data: { content: { md: 'ignored' } } }));
    });
  }

  /** Joins the document and waits for its state; the ack says whether the server let it in. */
  async join(): Promise<boolean> {
    const joined = await this.socket.timeout(5000).emitWithAck('ydoc:document:join', { document_id: this.documentId, user_name: 'Tester' });
    if (joined) await this.synced;
    return joined;
  }

  /** Adds a paragraph with this text at the end. */
  type(text: string): void {
    const fragment = this.doc.getXmlFragment('prosemirror');
    fragment.insert(fragment.length, [paragraph(text)]);
  }

  text(): string {
    return this.doc.getXmlFragment('prosemirror').toString();
  }

  /** Every update sent so far, acknowledged. */
  async settled(): Promise<boolean[]> {
    return Promise.all(this.acks);
  }

  close(): void {
    this.socket.close();
  }
}

/** A ProseMirror paragraph as y-prosemirror stores it. */
export function paragraph(text: string): Y.XmlElement {
  const element = new Y.XmlElement('paragraph');
  element.insert(0, [new Y.XmlText(text)]);
  return element;
}

export { expect };
