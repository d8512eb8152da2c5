import { existsSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CommandError } from '../command-error.js';

/** A row of an Open WebUI table, JSON columns already parsed. */
export type SourceRow = Record<string, unknown>;

/**
 * An Open WebUI database, read only: its SQLite file or its PostgreSQL database.
 * Rows come in primary-key order, in pages, so a large table never sits in memory whole.
 */
export interface OpenWebuiSource {
  readonly description: string;
  /** Where its uploads are by default: `uploads` beside a SQLite file (as in Open WebUI's DATA_DIR); null for PostgreSQL. */
  readonly uploads: string | null;
  tables(): Promise<Set<string>>;
  columns(table: string): Promise<Set<string>>;
  count(table: string): Promise<number>;
  /** Pages of rows ordered by `key` (the table's primary key). */
  pages(table: string, key: string, pageSize: number): AsyncIterable<SourceRow[]>;
  close(): Promise<void>;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

class SqliteSource implements OpenWebuiSource {
  private readonly db: SQLite.Database;
  readonly uploads: string;

  constructor(readonly description: string) {
    this.uploads = path.join(path.dirname(path.resolve(description)), 'uploads');
    this.db = new SQLite(description, { readonly: true, fileMustExist: true });
  }

  async tables() {
    const rows = this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    return new Set(rows.map((r) => r.name));
  }

  async columns(table: string) {
    const rows = this.db.prepare(`PRAGMA table_info(${quote(table)})`).all() as { name: string }[];
    return new Set(rows.map((r) => r.name));
  }

  async count(table: string) {
    return Number(this.db.prepare(`SELECT count(*) FROM ${quote(table)}`).pluck().get());
  }

  async *pages(table: string, key: string, pageSize: number) {
    const first = this.db.prepare(`SELECT * FROM ${quote(table)} ORDER BY ${quote(key)} LIMIT ?`);
    const next = this.db.prepare(`SELECT * FROM ${quote(table)} WHERE ${quote(key)} > ? ORDER BY ${quote(key)} LIMIT ?`);
    let last: unknown = undefined;
    for (;;) {
      const rows = (last === undefined ? first.all(pageSize) : next.all(last, pageSize)) as SourceRow[];
      if (rows.length === 0) return;
      yield rows;
      last = rows[rows.length - 1]![key];
      if (rows.length < pageSize) return;
    }
  }

  async close() {
    this.db.close();
  }
}

class PostgresSource implements OpenWebuiSource {
  readonly description: string;
  readonly uploads = null;

  private constructor(private readonly client: import('pg').Client, url: string) {
    const shown = new URL(url);
    shown.password = shown.password ? '***' : '';
    this.description = shown.toString();
  }

  static async open(url: string): Promise<PostgresSource> {
    const { default: pg } = await import('pg');
    // JSON columns as their text, as SQLite gives them: one decoding for both (tables.ts `json`).
    const asText = (value: string) => value;
    const types = { getTypeParser: (oid: number, format?: string) => (oid === 114 || oid === 3802 ? asText : pg.types.getTypeParser(oid, format as 'text')) };
    const client = new pg.Client({ connectionString: url, types });
    await client.connect();
    // Read only, whatever the role may do.
    await client.query('SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY');
    return new PostgresSource(client, url);
  }

  async tables() {
    const { rows } = await this.client.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()");
    return new Set(rows.map((r) => r.name));
  }

  async columns(table: string) {
    const { rows } = await this.client.query<{ name: string }>(
      'SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
      [table],
    );
    return new Set(rows.map((r) => r.name));
  }

  async count(table: string) {
    const { rows } = await this.client.query<{ n: string }>(`SELECT count(*) AS n FROM ${quote(table)}`);
    return Number(rows[0]!.n);
  }

  async *pages(table: string, key: string, pageSize: number) {
    let last: unknown = undefined;
    for (;;) {
      const { rows } =
        last === undefined
          ? await this.client.query<SourceRow>(`SELECT * FROM ${quote(table)} ORDER BY ${quote(key)} LIMIT $1`, [pageSize])
          : await this.client.query<SourceRow>(`SELECT * FROM ${quote(table)} WHERE ${quote(key)} > $1 ORDER BY ${quote(key)} LIMIT $2`, [last, pageSize]);
      if (rows.length === 0) return;
      yield rows;
      last = rows[rows.length - 1]![key];
      if (rows.length < pageSize) return;
    }
  }

  async close() {
    await this.client.end();
  }
}

/** A SQLite file path or a `postgres://` / `postgresql://` URL. */
export async function openSource(location: string): Promise<OpenWebuiSource> {
  if (/^postgres(ql)?:\/\//.test(location)) return PostgresSource.open(location);
  if (!existsSync(location)) throw new CommandError(`No Open WebUI database at ${location} (give its webui.db file or a postgres:// URL)`);
  return new SqliteSource(location);
}
