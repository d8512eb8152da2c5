import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../src/core/db/database.js';
import { migrationProvider } from '../../src/core/db/migrations/index.js';
import { PostgresChunkStore } from '../../src/core/retrieval/postgres-store.js';
import { SqliteChunkStore, tagOf } from '../../src/core/retrieval/sqlite-store.js';
import { createTestDatabase, dialect, dropTestDatabase } from '../helpers/server.js';

/**
 * Chunks stored by an earlier release: before they had titles (document name, headings weighed
 * in the lexical rank), before the unstemmed word index. After the upgrade each is found by its
 * document's name and ranked by the forms asked, and nothing stored is lost.
 */
describe('chunks stored by an earlier release', () => {
  it('embedded store: the FTS index is rebuilt with each chunk’s document name as its title', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-titles-'));
    try {
      const store = new SqliteChunkStore(dataDir);
      await store.insert('kb', [{ text: 'Pour the vinegar in and wait.', metadata: { name: 'Kettle Handbook.md', file_id: 'f1' }, fileId: 'f1', title: 'Kettle Handbook' }], null);
      await store.insert('kb', [{ text: 'Radiators are bled in spring.', metadata: { name: 'Heating.txt', file_id: 'f2' }, fileId: 'f2', title: 'Heating' }], null);
      await store.close();
      // The file as the release before wrote it: chunks without titles, an index of text and collection tag only.
      const file = new SQLite(path.join(dataDir, 'vector_db', 'retrieval.db'));
      file.exec('ALTER TABLE chunk DROP COLUMN title');
      file.exec("DROP TABLE chunk_fts; CREATE VIRTUAL TABLE chunk_fts USING fts5(text, tag, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2');");
      const rows = file.prepare('SELECT id, text, collection FROM chunk').all() as { id: number; text: string; collection: string }[];
      for (const row of rows) file.prepare('INSERT INTO chunk_fts (rowid, text, tag) VALUES (?, ?, ?)').run(row.id, row.text, tagOf(row.collection));
      file.close();

      const upgraded = new SqliteChunkStore(dataDir);
      try {
        expect((await upgraded.lexical('kb', 'handbook', 5)).map((c) => c.metadata.name)).toEqual(['Kettle Handbook.md']);
        expect((await upgraded.lexical('kb', 'radiators', 5)).map((c) => c.text)).toEqual(['Radiators are bled in spring.']);
        expect((await upgraded.chunks('kb')).map((c) => c.title)).toEqual(['Kettle Handbook', 'Heating']);
      } finally {
        await upgraded.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('embedded store: a file from before the unstemmed word index gets one, so the asked form of a word ranks first', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-exact-'));
    try {
      const store = new SqliteChunkStore(dataDir);
      const chunk = (fileId: string, text: string) => ({ text, metadata: { name: `${fileId}.md`, file_id: fileId }, fileId, title: fileId });
      await store.insert('kb', [chunk('sessions', 'The interactive debugger keeps interactive sessions: interactive mode shows an interactive prompt per command.')], null);
      await store.insert('kb', [chunk('interact', 'The interact command starts an interpreter holding the names of the current scope.')], null);
      const filler = Array.from({ length: 4 }, (_, i) => chunk(`heating-${i}`, `Heating note ${i}: boilers, radiators, valves and pipes are checked every spring by the caretaker.`));
      await store.insert('kb', filler, null);
      await store.close();
      const file = new SQLite(path.join(dataDir, 'vector_db', 'retrieval.db'));
      file.exec('DROP TABLE chunk_exact');
      file.close();

      const upgraded = new SqliteChunkStore(dataDir);
      try {
        expect((await upgraded.lexical('kb', 'interact command', 1)).map((c) => c.metadata.name)).toEqual(['interact.md']);
      } finally {
        await upgraded.close();
      }
      const check = new SQLite(path.join(dataDir, 'vector_db', 'retrieval.db'));
      check.exec("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, chunk_exact, 'row')");
      expect(check.prepare("SELECT term, doc FROM temp.terms WHERE term IN ('interact', 'interactive', 'command') ORDER BY term").all()).toEqual([
        { term: 'command', doc: 2 },
        { term: 'interact', doc: 1 },
        { term: 'interactive', doc: 1 },
      ]);
      check.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it.skipIf(dialect !== 'postgres')('PostgreSQL: migration 0021 gives existing chunks their document name as title', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-0021-'));
    const databaseUrl = await createTestDatabase();
    const database = openDatabase({ databaseUrl, dataDir });
    try {
      const { error } = await new Migrator({ db: database.db, provider: migrationProvider }).migrateTo('0020_user_session_cutoffs');
      expect(error).toBeUndefined();
      await sql`INSERT INTO retrieval_chunk (collection, file_id, text, metadata) VALUES
        ('kb', 'f1', 'Pour the vinegar in and wait.', ${JSON.stringify({ name: 'Kettle Handbook.md' })}),
        ('kb', 'f2', 'Radiators are bled in spring.', ${JSON.stringify({ source: 'https://example.com' })})`.execute(database.db);
      await migrate(database.db);
      const titles = await database.db.selectFrom('retrieval_chunk').select(['file_id', 'title']).orderBy('file_id').execute();
      expect(titles).toEqual([
        { file_id: 'f1', title: 'Kettle Handbook' },
        { file_id: 'f2', title: '' },
      ]);
      const store = new PostgresChunkStore(database.db);
      expect((await store.lexical('kb', 'handbook', 5)).map((c) => c.metadata.name)).toEqual(['Kettle Handbook.md']);
      expect((await store.lexical('kb', 'radiators', 5)).map((c) => c.text)).toEqual(['Radiators are bled in spring.']);
    } finally {
      await database.close();
      await dropTestDatabase(databaseUrl);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
