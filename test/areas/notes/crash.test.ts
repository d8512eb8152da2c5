import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ChildServer, useBuiltServerStore } from '../../helpers/child-server.js';
import { ApiClient } from '../../helpers/server.js';
import { signup } from '../../helpers/users.js';
import { NoteEditor } from './editor.js';

/** The note's stored `data`, read while no server runs. */
async function storedData(dataDir: string, databaseUrl: string | null, noteId: string): Promise<string | null> {
  const query = 'select data from note where id = ';
  if (!databaseUrl) {
    const db = new SQLite(path.join(dataDir, 'webui.db'), { readonly: true });
    try {
      return (db.prepare(`${query}?`).get(noteId) as { data: string | null }).data;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(`${query}$1`, [noteId])).rows[0].data;
  } finally {
    await client.end();
  }
}

/** Collaborative editing across a real SIGKILL: an acknowledged edit is in the note after the restart. */
describe('a server killed with SIGKILL while a note is edited', () => {
  const store = useBuiltServerStore('parley-notes-crash');

  it('keeps every acknowledged update and saves it into the note at the next start', { timeout: 120_000 }, async () => {
    const env = { DATA_DIR: store.dataDir, WEBUI_SECRET_KEY: 'notes-crash-key', ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}) };
    let child = await ChildServer.start(store.entry, env);
    try {
      const admin = await signup(new ApiClient(child.url), 'Crash Notes Admin');
      const note = (await new ApiClient(child.url).post('/api/v1/notes/create', { title: 'Crash' }, { token: admin.token })).body;
      const editor = await NoteEditor.open(child.url, admin.token, note.id);
      expect(await editor.join()).toBe(true);
      editor.type('Acknowledged, then killed');
      expect(await editor.settled()).toEqual([true]);
      // Killed within the save's quiet time: the update is stored, the note not yet saved.
      await child.kill();
      editor.close();
      expect(await storedData(store.dataDir, store.databaseUrl, note.id)).toBeNull();

      child = await ChildServer.start(store.entry, env);
      const saved = (await new ApiClient(child.url).get(`/api/v1/notes/${note.id}`, { token: admin.token })).body;
      expect(saved.data.content.md).toBe('Acknowledged, then killed');
      const back = await NoteEditor.open(child.url, admin.token, note.id);
      try {
        expect(await back.join()).toBe(true);
        expect(back.text()).toBe('<paragraph>Acknowledged, then killed</paragraph>');
      } finally {
        back.close();
      }
    } finally {
      await child.kill().catch(() => undefined);
    }
  });
});
