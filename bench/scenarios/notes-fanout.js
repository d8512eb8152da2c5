import { io } from 'socket.io-client';
import * as Y from 'yjs';
import { median, percentile, row } from '../lib/report.js';

const EDITORS = 20;
const UPDATES = 300;
const NAME = `note update fan-out to ${EDITORS - 1} editors`;

function connect(url, token) {
  const socket = io(url, { path: '/ws/socket.io', transports: ['websocket'], auth: { token }, reconnection: false, forceNew: true });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', reject);
  });
}

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
    for (let i = 0; i < EDITORS; i++) sockets.push(await connect(ctx.url, token));
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
        let waiting = readers.length;
        const received = new Promise((resolve) => {
          for (const reader of readers) {
            reader.once('ydoc:document:update', () => {
              waiting -= 1;
              if (waiting === 0) resolve();
            });
          }
        });
        const started = performance.now();
        writer.emit('ydoc:document:update', { document_id: documentId, update });
        await received;
        latencies.push(performance.now() - started);
      }
      cpuSeconds = ctx.parley.cpuSeconds() - cpuBefore;
    } finally {
      for (const socket of sockets) socket.close();
    }
    const rows = [
      row({ figure: `${NAME}: p50`, parley: median(latencies), unit: 'ms' }),
      row({ figure: `${NAME}: p99`, parley: percentile(latencies, 0.99), unit: 'ms' }),
      row({ figure: `${NAME}: Parley CPU per update`, parley: (cpuSeconds / latencies.length) * 1e6, unit: 'micros' }),
    ];
    return { rows, details: { editors: EDITORS, updates: latencies.length, latencies } };
  },
};
