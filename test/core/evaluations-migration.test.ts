import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../src/core/db/database.js';
import { migrationProvider } from '../../src/core/db/migrations/index.js';
import { createTestDatabase, dropTestDatabase } from '../helpers/server.js';

/** Migration 0019 on a database with chats already: answers' tokens from their stored usage, and the rollup, filled. */
describe('migration 0019 (evaluations)', () => {
  it('backfills token counts and the message rollup from existing messages', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-0019-'));
    const databaseUrl = await createTestDatabase();
    const database = openDatabase({ databaseUrl, dataDir });
    const db = database.db;
    try {
      const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo('0013_memories');
      expect(error).toBeUndefined();
      const day = 20_000 * 86400;
      await sql`INSERT INTO "user" (id, email, role, name, last_active_at, updated_at, created_at) VALUES ('u1', 'u1@x', 'user', 'U', 0, 0, 0)`.execute(db);
      await sql`INSERT INTO chat (id, user_id, title, archived, pinned, internal, created_at, updated_at, meta) VALUES ('c1', 'u1', 'T', ${false}, ${false}, ${false}, 0, 0, '{}')`.execute(db);
      const message = (id: string, role: string, model: string | null, usage: unknown, at: number) =>
        sql`INSERT INTO chat_message (chat_id, id, user_id, role, model_id, done, usage, created_at, updated_at)
            VALUES ('c1', ${id}, 'u1', ${role}, ${model}, ${true}, ${usage === null ? null : JSON.stringify(usage)}, ${at}, ${at})`.execute(db);
      await message('q1', 'user', null, null, day + 10);
      await message('a1', 'assistant', 'm', { prompt_tokens: 7, completion_tokens: 3 }, day + 20);
      await message('a2', 'assistant', 'm', { input_tokens: 2, output_tokens: 1 }, day + 30);
      await message('a3', 'assistant', 'm', null, day + 86400);

      await migrate(db);
      const tokens = await db.selectFrom('chat_message').select(['id', 'input_tokens', 'output_tokens']).orderBy('id').execute();
      expect(tokens.map((r) => [r.id, r.input_tokens === null ? null : Number(r.input_tokens), r.output_tokens === null ? null : Number(r.output_tokens)])).toEqual([
        ['a1', 7, 3],
        ['a2', 2, 1],
        ['a3', null, null],
        ['q1', null, null],
      ]);
      const rollup = await db.selectFrom('message_rollup').selectAll().orderBy('day').execute();
      expect(rollup.map((r) => [Number(r.day), r.model_id, Number(r.messages), Number(r.input_tokens), Number(r.output_tokens), Number(r.token_messages)])).toEqual([
        [20_000, 'm', 2, 9, 4, 2],
        [20_001, 'm', 1, 0, 0, 0],
      ]);

      // From now on the triggers keep it: an answer moved to another model, another deleted.
      await db.updateTable('chat_message').set({ model_id: 'n', input_tokens: 5, output_tokens: 5 }).where('id', '=', 'a3').execute();
      await db.deleteFrom('chat_message').where('id', '=', 'a2').execute();
      const after = await db.selectFrom('message_rollup').selectAll().orderBy('day').execute();
      expect(after.map((r) => [Number(r.day), r.model_id, Number(r.messages), Number(r.input_tokens), Number(r.output_tokens)])).toEqual([
        [20_000, 'm', 1, 7, 3],
        [20_001, 'n', 1, 5, 5],
      ]);
    } finally {
      await database.close();
      await dropTestDatabase(databaseUrl);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
