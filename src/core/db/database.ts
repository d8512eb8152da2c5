import path from 'node:path';
import SQLite from 'better-sqlite3';
import { type DatabaseConnection, type Driver, Kysely, Migrator, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
import { migrationProvider } from './migrations/index.js';
import type { Database } from './tables.js';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
export type DialectName = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Db;
  dialect: DialectName;
  close(): Promise<void>;
}

// PostgreSQL returns BIGINT as a string; every BIGINT Parley stores is epoch seconds, safe as a number.
pg.types.setTypeParser(20, (value) => Number.parseInt(value, 10));

const STATEMENT_CACHE_SIZE = 1000;

/**
 * better-sqlite3 refuses to bind booleans; PostgreSQL wants them. Binding them as
 * 0/1 here keeps the stores' query code the same on both dialects. Kysely also
 * prepares every query anew; statements are reused per SQL text instead (`all` and
 * `run` finish synchronously, so a cached statement is only busy while iterated).
 */
function withBooleanBindingAndStatementCache(database: SQLite.Database): SQLite.Database {
  const prepare = database.prepare.bind(database);
  const bindable = (p: unknown) => (typeof p === 'boolean' ? (p ? 1 : 0) : p);
  // Kysely passes the parameters as one array argument.
  const convert = (params: unknown[]) => params.map((p) => (Array.isArray(p) ? p.map(bindable) : bindable(p)));
  const prepareConverting = (source: string) => {
    const statement = prepare(source);
    const all = statement.all.bind(statement);
    const run = statement.run.bind(statement);
    const iterate = statement.iterate.bind(statement);
    return Object.assign(statement, {
      all: (...params: unknown[]) => all(...convert(params)),
      run: (...params: unknown[]) => run(...convert(params)),
      iterate: (...params: unknown[]) => iterate(...convert(params)),
    });
  };
  const statements = new Map<string, SQLite.Statement>();
  database.prepare = ((source: string) => {
    let statement = statements.get(source);
    if (statement?.busy) return prepareConverting(source);
    if (!statement) {
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
      statement = prepareConverting(source);
      statements.set(source, statement);
    }
    return statement;
  }) as typeof database.prepare;
  return database;
}

function openSqlite(file: string): SQLite.Database {
  const database = new SQLite(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  return withBooleanBindingAndStatementCache(database);
}

/** Longer than any real SQLite transaction; reaching it means a wait that would never end. */
const SQLITE_CONNECTION_WAIT_MS = 10_000;

/**
 * SQLite has one connection. A query sent through the root handle while a
 * transaction holds it (instead of through `trx`) would wait forever; this turns
 * that hang into an error that names the cause, and hands the connection back
 * when the abandoned wait is finally served.
 */
class GuardedSqliteDialect extends SqliteDialect {
  override createDriver(): Driver {
    const driver = super.createDriver();
    const acquireConnection = async (): Promise<DatabaseConnection> => {
      const waiting = driver.acquireConnection();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          waiting.then((connection) => driver.releaseConnection(connection)).catch(() => undefined);
          reject(new Error(`SQLite connection wait exceeded ${SQLITE_CONNECTION_WAIT_MS} ms: a query ran outside the transaction holding the connection`));
        }, SQLITE_CONNECTION_WAIT_MS);
      });
      try {
        return await Promise.race([waiting, deadline]);
      } finally {
        clearTimeout(timer);
      }
    };
    return new Proxy(driver, {
      get(target, property) {
        if (property === 'acquireConnection') return acquireConnection;
        const value = Reflect.get(target, property);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}

export function openDatabase(options: { databaseUrl: string | null; dataDir: string }): DatabaseHandle {
  const url = options.databaseUrl;
  if (url && /^postgres(ql)?:\/\//.test(url)) {
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    // An idle client whose connection the server ends (restart, admin termination) is dropped and
    // replaced on next use; without a listener, pg would turn that into an uncaught error.
    pool.on('error', () => undefined);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', close: () => db.destroy() };
  }
  let file = path.join(options.dataDir, 'webui.db');
  if (url?.startsWith('sqlite:')) file = url.replace(/^sqlite:(\/\/)?/, '');
  const db = new Kysely<Database>({ dialect: new GuardedSqliteDialect({ database: openSqlite(file) }) });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

/**
 * Applies pending migrations. On PostgreSQL Kysely's migrator holds an advisory
 * lock for the whole run, so instances starting together against one database
 * take turns instead of racing.
 */
export async function migrate(db: Db): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String(error)}`);
  }
}

export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
