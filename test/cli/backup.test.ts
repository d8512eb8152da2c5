import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../../src/cli/main.js';
import { backup } from '../../src/cli/backup.js';
import { CommandError } from '../../src/cli/command-error.js';
import { uploadFile } from '../helpers/files.js';
import { dialect, withServer } from '../helpers/server.js';
import { signup } from '../helpers/users.js';

const chatCount = (file: string) => {
  const db = new SQLite(file, { readonly: true });
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    return Number(db.prepare('SELECT count(*) FROM chat').pluck().get());
  } finally {
    db.close();
  }
};

describe('parley backup', () => {
  it.skipIf(dialect === 'postgres')('copies a running install consistently while it writes; the copy restored into a fresh DATA_DIR starts with the data', { timeout: 60_000 }, async () => {
    const destination = path.join(mkdtempSync(path.join(tmpdir(), 'parley-backup-')), 'copy');
    const restored = mkdtempSync(path.join(tmpdir(), 'parley-restored-'));
    try {
      let before = 0;
      const admin = await withServer({}, async ({ api, url, dataDir }) => {
        const admin = await signup(api, 'Backup Admin');
        const file = await uploadFile(url, admin, 'notes.txt', 'kept in the backup', 'text/plain', { query: '?process=false' });
        expect(file.status).toBe(200);

        // Chats are written all along the backup.
        let writing = true;
        const writer = (async () => {
          for (let i = 0; writing; i++) {
            const res = await api.post('/api/v1/chats/new', { chat: { title: `Chat ${i}`, history: { messages: {}, currentId: null } } }, { token: admin.token });
            expect(res.status).toBe(200);
          }
        })();
        while (before < 20) before = Number((await api.get('/api/v1/chats/', { token: admin.token })).body.length);
        const lines: string[] = [];
        const result = await backup({ dataDir, databaseUrl: null, destination, log: (line) => lines.push(line) });
        writing = false;
        await writer;

        expect(result.files).toEqual(['webui.db', 'vector_db/retrieval.db', '.webui_secret_key', 'uploads/'].filter((f) => f !== '.webui_secret_key' || existsSync(path.join(dataDir, f))));
        expect(result.uploads).toBe(1);
        expect(lines.at(-1)).toMatch(/^backup: done/);
        expect(chatCount(path.join(destination, 'webui.db'))).toBeGreaterThanOrEqual(before);
        // A second backup into the same folder is refused: a backup never overwrites one.
        await expect(backup({ dataDir, databaseUrl: null, destination })).rejects.toThrow(CommandError);
        return { ...admin, fileId: file.body.id as string };
      });

      // Restore: the backup's files are the new DATA_DIR.
      cpSync(destination, restored, { recursive: true });
      await withServer({ reuse: { dataDir: restored, databaseUrl: null } }, async ({ api }) => {
        const signin = await api.post('/api/v1/auths/signin', { email: admin.email, password: admin.password });
        expect(signin.status, signin.text).toBe(200);
        const chats = await api.get('/api/v1/chats/?page=1', { token: signin.body.token });
        expect(chats.body.length).toBeGreaterThanOrEqual(Math.min(before, 50));
        const content = await api.get(`/api/v1/files/${admin.fileId}/content`, { token: signin.body.token });
        expect(content.status).toBe(200);
        expect(content.text).toBe('kept in the backup');
      });
    } finally {
      rmSync(path.dirname(destination), { recursive: true, force: true });
      rmSync(restored, { recursive: true, force: true });
    }
  });

  it('refuses an install on PostgreSQL and a folder without a database, with what to do instead', async () => {
    const errors: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => errors.push(String(chunk)) > 0) as typeof process.stderr.write;
    const empty = mkdtempSync(path.join(tmpdir(), 'parley-nodata-'));
    try {
      expect(await runCommand(['backup', path.join(empty, 'copy'), '--data-dir', empty])).toBe(2);
      await expect(backup({ dataDir: empty, databaseUrl: 'postgres://localhost/parley', destination: path.join(empty, 'copy') })).rejects.toThrow('back it up with pg_dump');
    } finally {
      process.stderr.write = write;
      rmSync(empty, { recursive: true, force: true });
    }
    expect(errors.join('')).toContain(`No Parley database at ${path.join(empty, 'webui.db')}`);
  });
});
