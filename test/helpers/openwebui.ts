import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { type FixtureRow, REVISION, SCHEMA, type SchemaVersion } from './openwebui-schema.js';
import { createTestDatabase, dropTestDatabase } from './server.js';

export { chatJson, type FixtureRow, type SchemaVersion } from './openwebui-schema.js';

/** An Open WebUI database being built (schema: openwebui-schema.ts); `location` is what `parley import-openwebui` takes. */
export interface OpenWebuiFixture {
  location: string;
  dialect: 'sqlite' | 'postgres';
  insert(table: string, rows: FixtureRow | FixtureRow[]): Promise<void>;
  /** Runs one statement (a test's own change to the source). */
  exec(sql: string): Promise<void>;
  remove(): Promise<void>;
}

const quote = (name: string) => `"${name}"`;

/** An Open WebUI database of `version`'s schema: a SQLite file, or a PostgreSQL database on PostgreSQL runs when `dialect` says so. */
export async function createOpenWebuiDatabase(version: SchemaVersion, dialect: 'sqlite' | 'postgres' = 'sqlite', revision = REVISION[version]): Promise<OpenWebuiFixture> {
  if (dialect === 'postgres') {
    const url = await createTestDatabase();
    if (!url) throw new Error('a PostgreSQL source needs TEST_DATABASE_URL');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(SCHEMA[version]);
    await client.query('INSERT INTO alembic_version VALUES ($1)', [revision]);
    return {
      location: url,
      dialect,
      async insert(table, rows) {
        for (const row of [rows].flat()) {
          const columns = Object.keys(row);
          const values = columns.map((c) => (row[c] !== null && typeof row[c] === 'object' ? JSON.stringify(row[c]) : row[c]));
          await client.query(`INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, values);
        }
      },
      async exec(sql) {
        await client.query(sql);
      },
      async remove() {
        await client.end();
        await dropTestDatabase(url);
      },
    };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'openwebui-'));
  const file = path.join(dir, 'webui.db');
  const db = new SQLite(file);
  db.exec(SCHEMA[version]);
  db.prepare('INSERT INTO alembic_version VALUES (?)').run(revision);
  return {
    location: file,
    dialect,
    async insert(table, rows) {
      const list = [rows].flat();
      db.transaction(() => {
        for (const row of list) {
          const columns = Object.keys(row);
          const values = columns.map((c) => {
            const value = row[c];
            if (typeof value === 'boolean') return value ? 1 : 0;
            return value !== null && typeof value === 'object' ? JSON.stringify(value) : value;
          });
          db.prepare(`INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`).run(...values);
        }
      })();
    },
    async exec(sql) {
      db.exec(sql);
    },
    async remove() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

