import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { afterCommit, type DatabaseHandle, migrate, openDatabase } from '../../src/core/db/database.js';
import { createTestDatabase, dropTestDatabase } from '../helpers/server.js';

/**
 * What caches rely on to drop stale entries: write listeners per table and
 * after-commit hooks, on the dialect under test.
 */
describe('write listeners and after-commit hooks', () => {
  let database: DatabaseHandle;
  let databaseUrl: string | null;
  let dataDir: string;
  const heard: string[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'parley-hooks-'));
    databaseUrl = await createTestDatabase();
    database = openDatabase({ databaseUrl, dataDir });
    await migrate(database.db);
    database.onWrite(['config'], () => heard.push('config'));
  });

  afterAll(async () => {
    await database.close();
    await dropTestDatabase(databaseUrl);
    rmSync(dataDir, { recursive: true, force: true });
  });

  beforeEach(() => {
    heard.length = 0;
  });

  const insert = (db = database.db, key = `k${Math.random()}`) => db.insertInto('config').values({ key, value: '1', updated_at: 1 }).execute();

  it('hears inserts, updates and deletes of a watched table, and nothing for reads or other tables', async () => {
    await insert(database.db, 'watched');
    await database.db.updateTable('config').set({ value: '2' }).where('key', '=', 'watched').execute();
    await database.db.deleteFrom('config').where('key', '=', 'watched').execute();
    expect(heard).toEqual(['config', 'config', 'config']);
    await database.db.selectFrom('config').selectAll().execute();
    await database.db.updateTable('folder').set({ name: 'x' }).where('id', '=', 'none').execute();
    expect(heard).toHaveLength(3);
  });

  it('hears a write in a transaction again once it commits, after the work inside it', async () => {
    const order: string[] = [];
    await database.db.transaction().execute(async (trx) => {
      await insert(trx);
      order.push(`inside: ${heard.length}`);
      afterCommit(trx, () => order.push(`committed: ${heard.length}`));
      expect(order).toEqual(['inside: 1']);
    });
    expect(heard).toEqual(['config', 'config']);
    expect(order).toEqual(['inside: 1', 'committed: 2']);
  });

  it('runs no after-commit hook and reports no commit when the transaction rolls back', async () => {
    const ran: string[] = [];
    await expect(
      database.db.transaction().execute(async (trx) => {
        await insert(trx);
        afterCommit(trx, () => ran.push('hook'));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(ran).toEqual([]);
    // Only the statement itself was heard, not a commit.
    expect(heard).toEqual(['config']);
  });

  it('runs a hook at once outside a transaction', () => {
    const ran: string[] = [];
    afterCommit(database.db, () => ran.push('now'));
    expect(ran).toEqual(['now']);
  });
});
