import * as Y from 'yjs';
import { connectSocket, everyoneReceives, fanoutRows } from '../lib/sockets.js';

const EDITORS = 20;
const UPDATES = 300;
const NAME = `note update fan-out to ${EDITORS - 1} editors`;

/**
 * Collaborative note editing (issue 19): 20 editors have one note open over
 * socket.io (`ydoc:document:join`); one types, sending one Yjs update per
 * keystroke (`ydoc:document:update`), one at a time. Each update is timed from
 * its emit until the last of the other 19 editors has received it: the update is
 * checked for write access, decoded, stored, then sent on. Reports p50 and p99
 * of that time, and Parley's CPU per update.
 */
export default {
  name: NAME,
  async setup(ctx) {
    const admin = await ctx.admin();
    const note = await ctx.post('/api/v1/notes/create', { title: 'Bench note' }, { token: admin.token });
    return { token: admin.token, documentId: `note:${note.id}` };
  },
  async measure(ctx, { token, documentId }) {
    const sockets = [];
    for (let i = 0; i < EDITORS; i++) sockets.push(await connectSocket(ctx.url, token));
    const latencies = [];
    let cpuSeconds = NaN;
    try {
      for (const socket of sockets) await socket.timeout(10_000).emitWithAck('ydoc:document:join', { document_id: documentId });
      const [writer, ...readers] = sockets;
      const doc = new Y.Doc();
      const text = doc.getXmlFragment('prosemirror');
      const paragraph = new Y.XmlElement('paragraph');
      const body = new Y.XmlText('');
      paragraph.insert(0, [body]);
      text.insert(0, [paragraph]);
      const updates = [];
      doc.on('update', (update) => updates.push(Array.from(update)));
      for (let i = 0; i < UPDATES; i++) body.insert(body.length, String.fromCharCode(97 + (i % 26)));
      const cpuBefore = ctx.parley.cpuSeconds();
      for (const update of updates) {
        const received = everyoneReceives(readers, 'ydoc:document:update');
        const started = performance.now();
        writer.emit('ydoc:document:update', { document_id: documentId, update });
        await received;
        latencies.push(performance.now() - started);
      }
      cpuSeconds = ctx.parley.cpuSeconds() - cpuBefore;
    } finally {
      for (const socket of sockets) socket.close();
    }
    return { rows: fanoutRows(NAME, latencies, cpuSeconds, 'update'), details: { editors: EDITORS, updates: latencies.length, latencies } };
  },
};
