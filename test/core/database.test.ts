import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { buildParley } from '../../src/app.js';
import { readEnv } from '../../src/config/env.js';
import { createTestDatabase, dialect, dropTestDatabase } from '../helpers/server.js';

async function countMigrations(parley: Awaited<ReturnType<typeof buildParley>>) {
  const rows = await sql<{ name: string }>`select name from kysely_migration`.execute(parley.core.db);
  return rows.rows.map((r) => r.name);
}

describe('database start-up', () => {
  it('applies migrations once and again finds them applied after a restart', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-db-'));
    const databaseUrl = await createTestDatabase();
    const env = readEnv({ DATA_DIR: dataDir, WEBUI_SECRET_KEY: 'k', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) });
    try {
      const first = await buildParley({ env, logLevel: 'silent' });
      const applied = await countMigrations(first);
      expect(applied).toContain('0001_foundation');
      await first.close();
      const second = await buildParley({ env, logLevel: 'silent' });
      expect(await countMigrations(second)).toEqual(applied);
      await second.close();
    } finally {
      await dropTestDatabase(databaseUrl);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  // Each dialect's own checks are registered only in that dialect's run (npm test runs both).
  if (dialect === 'postgres') it('lets several instances start together against one PostgreSQL database', async () => {
    const databaseUrl = await createTestDatabase();
    const dirs = [0, 1, 2, 3].map(() => mkdtempSync(path.join(tmpdir(), 'parley-db-')));
    try {
      const instances = await Promise.all(
        dirs.map((dir) => buildParley({ env: readEnv({ DATA_DIR: dir, WEBUI_SECRET_KEY: 'k', DATABASE_URL: databaseUrl! }), logLevel: 'silent' })),
      );
      const applied = await countMigrations(instances[0]);
      expect(new Set(applied).size).toBe(applied.length);
      for (const instance of instances) expect(await countMigrations(instance)).toEqual(applied);
      await Promise.all(instances.map((i) => i.close()));
    } finally {
      await dropTestDatabase(databaseUrl);
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });
});

if (dialect === 'sqlite') describe('SQLite single connection', () => {
  it('fails a query made outside the transaction holding the connection instead of hanging', { timeout: 20_000 }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-db-'));
    const parley = await buildParley({ env: readEnv({ DATA_DIR: dataDir, WEBUI_SECRET_KEY: 'k' }), logLevel: 'silent' });
    try {
      const outcome = await parley.core.db
        .transaction()
        .execute(async () => parley.core.db.selectFrom('config').select('key').execute())
        .then(() => 'no error', (error: Error) => error.message);
      expect(outcome).toMatch(/outside the transaction/);
      // The abandoned wait handed the connection back: the database still answers.
      expect(Array.isArray(await parley.core.db.selectFrom('config').select('key').execute())).toBe(true);
    } finally {
      await parley.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('copies the embedded database online while writes go on', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-db-'));
    const parley = await buildParley({ env: readEnv({ DATA_DIR: dataDir, WEBUI_SECRET_KEY: 'k' }), logLevel: 'silent' });
    try {
      const write = (i: number) =>
        parley.core.db.insertInto('config').values({ key: `backup-${i}`, value: '{}' } as never).execute();
      await write(0);
      const copy = path.join(dataDir, 'copy.db');
      await Promise.all([parley.core.database.backupTo!(copy), ...[1, 2, 3].map(write)]);
      const copied = new (await import('better-sqlite3')).default(copy, { readonly: true });
      const keys = copied.prepare("select key from config where key like 'backup-%'").all() as { key: string }[];
      copied.close();
      expect(keys.map((k) => k.key)).toContain('backup-0');
    } finally {
      await parley.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
