import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../../src/core/db/database.js';
import { createTestDatabase, dialect, dropTestDatabase } from '../../helpers/server.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** Migrates DATA_DIR's SQLite file in another process; resolves with when it finished. */
function migrateInChild(dataDir: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'node_modules', 'vite-node', 'vite-node.mjs'), path.join(ROOT, 'test/core/db/migrate-child.ts')], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.on('exit', (code) => (code === 0 && output.includes('migrated') ? resolve(Date.now()) : reject(new Error(`migration exited with ${code}: ${output}`))));
  });
}

describe('migrations taken once under a lock', () => {
  it.runIf(dialect === 'sqlite')('wait on SQLite for the write lock another process holds', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'parley-migration-lock-'));
    try {
      const database = openDatabase({ databaseUrl: null, dataDir });
      await migrate(database.db);
      await database.close();
      // Another process holds the write lock (as a first instance running long migrations would).
      const holder = new SQLite(path.join(dataDir, 'webui.db'));
      holder.exec('BEGIN IMMEDIATE');
      const finished = migrateInChild(dataDir);
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      const released = Date.now();
      holder.exec('COMMIT');
      holder.close();
      expect(await finished).toBeGreaterThanOrEqual(released);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  it.runIf(dialect === 'postgres')('run once on PostgreSQL when instances migrate together (Kysely holds an advisory lock)', async () => {
    const url = await createTestDatabase();
    const handles = Array.from({ length: 3 }, () => openDatabase({ databaseUrl: url, dataDir: tmpdir() }));
    try {
      await Promise.all(handles.map((handle) => migrate(handle.db)));
      const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration`.execute(handles[0].db);
      expect(rows.length).toBeGreaterThan(10);
      expect(rows.length).toBe(new Set(rows.map((row) => row.name)).size);
    } finally {
      for (const handle of handles) await handle.close();
      await dropTestDatabase(url);
    }
  });
});
