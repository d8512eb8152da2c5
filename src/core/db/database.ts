import { chmodSync, existsSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import {
  type DatabaseConnection,
  type Dialect,
  type Driver,
  Kysely,
  type KyselyPlugin,
  type Logger,
  Migrator,
  type OperationNode,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  PostgresDialect,
  type QueryId,
  type QueryResult,
  type RootOperationNode,
  SqliteAdapter,
  SqliteDialect,
  sql,
  type Transaction,
  type TransactionBuilder,
  type UnknownRow,
} from 'kysely';
import { PARLEY_VERSION } from '../../config/env.js';
import type { Tracing } from '../observability/tracing.js';
import { migrationProvider } from './migrations/index.js';
import type { Database } from './tables.js';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
export type DialectName = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Db;
  dialect: DialectName;
  /**
   * Calls `listener` after a statement built with Kysely inserts into, updates
   * or deletes from one of `tables`: at once, and again when the transaction
   * it ran in commits (the moment other connections see it). Raw SQL and
   * foreign-key cascades are not seen.
   */
  onWrite(tables: string[], listener: () => void): void;
  /**
   * Embedded database only: writes a consistent copy of it to `file` while the
   * server keeps writing (SQLite's online backup), never the live file mid-write.
   * Null on PostgreSQL, whose backups are the operator's `pg_dump`.
   */
  backupTo: ((file: string) => Promise<void>) | null;
  close(): Promise<void>;
}

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
  // The server's alone; SQLite gives the -wal and -shm files the database file's mode.
  if (file !== ':memory:' && existsSync(file)) chmodSync(file, 0o600);
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
  override createAdapter(): SqliteAdapter {
    return new LockingSqliteAdapter();
  }

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

/** How long a start-up waits for another process's migrations on the same SQLite file (in 5 s busy waits). */
const SQLITE_MIGRATION_WAIT_ATTEMPTS = 120;

/**
 * Kysely takes no lock on SQLite (one connection per process is assumed); two processes starting
 * on one file would both run the same migration. The migrations run in one `BEGIN IMMEDIATE`
 * transaction instead: the second process waits for the first's write lock, then finds them done.
 */
class LockingSqliteAdapter extends SqliteAdapter {
  override async acquireMigrationLock(db: Kysely<unknown>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await sql`BEGIN IMMEDIATE`.execute(db);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY' || attempt >= SQLITE_MIGRATION_WAIT_ATTEMPTS) throw error;
      }
    }
  }

  override async releaseMigrationLock(db: Kysely<unknown>): Promise<void> {
    await sql`COMMIT`.execute(db);
  }
}

/** Work to run once a transaction has committed, keyed by the transaction it waits for. */
const commitHooks = new WeakMap<Kysely<Database>, Array<() => void>>();

function tableName(node: OperationNode | undefined): string | null {
  if (!node) return null;
  if (node.kind === 'TableNode') return (node as unknown as { table: { identifier: { name: string } } }).table.identifier.name;
  if (node.kind === 'AliasNode') return tableName((node as unknown as { node: OperationNode }).node);
  return null;
}

/** The table a statement writes, or null for anything else. */
function writtenTable(node: RootOperationNode): string | null {
  switch (node.kind) {
    case 'InsertQueryNode':
      return tableName(node.into);
    case 'UpdateQueryNode':
      return tableName(node.table);
    case 'DeleteQueryNode':
      return tableName(node.from.froms[0]);
    default:
      return null;
  }
}

/** Reports each write statement's table once the statement has run. */
class WriteRecorder implements KyselyPlugin {
  private readonly pending = new WeakMap<QueryId, string>();

  constructor(private readonly written: (table: string) => void) {}

  transformQuery({ node, queryId }: PluginTransformQueryArgs): RootOperationNode {
    const table = writtenTable(node);
    if (table) this.pending.set(queryId, table);
    return node;
  }

  async transformResult({ queryId, result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const table = this.pending.get(queryId);
    if (table) this.written(table);
    return result;
  }
}

/** Listeners of writes per table (`DatabaseHandle.onWrite`). */
class WriteListeners {
  private readonly byTable = new Map<string, Array<() => void>>();

  on(tables: string[], listener: () => void): void {
    for (const table of tables) this.byTable.set(table, [...(this.byTable.get(table) ?? []), listener]);
  }

  notify(table: string): void {
    for (const listener of this.byTable.get(table) ?? []) listener();
  }
}

/**
 * Kysely with after-commit hooks and write listeners: every
 * `transaction().execute(...)` records its transaction so `afterCommit` can
 * defer work (cache invalidation, notices to other instances) until the data is
 * visible to other connections, and drop it on rollback; the tables it wrote
 * are reported again at that moment.
 */
class HookedKysely extends Kysely<Database> {
  readonly writes: WriteListeners;

  constructor(dialect: Dialect, log?: Logger) {
    const writes = new WriteListeners();
    super({ dialect, plugins: [new WriteRecorder((table) => writes.notify(table))], log });
    this.writes = writes;
  }

  override transaction(): TransactionBuilder<Database> {
    const builder = super.transaction();
    const execute = builder.execute.bind(builder);
    builder.execute = async <T>(callback: (trx: Transaction<Database>) => Promise<T>): Promise<T> => {
      const hooks: Array<() => void> = [];
      const written = new Set<string>();
      const result = await execute((trx) => {
        const recording = trx.withPlugin(new WriteRecorder((table) => written.add(table)));
        commitHooks.set(recording, hooks);
        return callback(recording);
      });
      for (const table of written) this.writes.notify(table);
      for (const hook of hooks) hook();
      return result;
    };
    return builder;
  }
}

/** Runs `hook` once `db`'s transaction commits (never if it rolls back), or now when `db` is not a transaction. */
export function afterCommit(db: Db, hook: () => void): void {
  const hooks = db.isTransaction ? commitHooks.get(db) : undefined;
  if (hooks) hooks.push(hook);
  else hook();
}

/** pg is loaded only when PostgreSQL is used: loading it costs about 40 ms of start-up. */
async function postgresPool(url: string) {
  const { default: pg } = await import('pg');
  // PostgreSQL returns BIGINT as a string; every BIGINT Parley stores is epoch seconds, safe as a number.
  pg.types.setTypeParser(20, (value) => Number.parseInt(value, 10));
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // An idle client whose connection the server ends (restart, admin termination) is dropped and
  // replaced on next use; without a listener, pg would turn that into an uncaught error.
  pool.on('error', () => undefined);
  return pool;
}

/** Kysely's log hook making a span per query; none without tracing (Kysely then wraps no query). */
function queryTracer(tracing: Tracing | null | undefined, system: 'sqlite' | 'postgresql'): Logger | undefined {
  return tracing ? (event) => tracing.recordQuery(system, event) : undefined;
}

export function openDatabase(options: { databaseUrl: string | null; dataDir: string; tracing?: Tracing | null }): DatabaseHandle {
  const url = options.databaseUrl;
  if (url && /^postgres(ql)?:\/\//.test(url)) {
    const db = new HookedKysely(new PostgresDialect({ pool: () => postgresPool(url) }), queryTracer(options.tracing, 'postgresql'));
    return {
      db,
      dialect: 'postgres',
      onWrite: (tables, listener) => db.writes.on(tables, listener),
      backupTo: null,
      close: () => db.destroy(),
    };
  }
  let file = path.join(options.dataDir, 'webui.db');
  if (url?.startsWith('sqlite:')) file = url.replace(/^sqlite:(\/\/)?/, '');
  const database = openSqlite(file);
  const db = new HookedKysely(new GuardedSqliteDialect({ database }), queryTracer(options.tracing, 'sqlite'));
  return {
    db,
    dialect: 'sqlite',
    onWrite: (tables, listener) => db.writes.on(tables, listener),
    backupTo: async (destination) => {
      await database.backup(destination);
    },
    close: () => db.destroy(),
  };
}

/**
 * Applies pending migrations. On PostgreSQL Kysely's migrator holds an advisory
 * lock for the whole run, so instances starting together against one database
 * take turns instead of racing.
 */
export async function migrate(db: Db): Promise<void> {
  await refuseNewerSchema(db);
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    // A newer version may have migrated meanwhile: say so rather than Kysely's "corrupted migrations".
    await refuseNewerSchema(db);
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String(error)}`);
  }
}

/**
 * A database migrated by a newer Parley has migrations this version does not know: its code may
 * not read the new schema right, nor must it run against it, so the start stops with a clear reason
 * (docs/deployment.md § Upgrades). An older database, or a fresh one, passes.
 */
export async function refuseNewerSchema(db: Db): Promise<void> {
  let applied: string[];
  try {
    const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration`.execute(db);
    applied = rows.map((row) => row.name);
  } catch {
    return; // no migration table yet: a fresh database
  }
  const known = new Set(Object.keys(await migrationProvider.getMigrations()));
  const unknown = applied.filter((name) => !known.has(name)).sort();
  if (unknown.length === 0) return;
  throw new Error(
    `The database schema is newer than this Parley: it has migration${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}, ` +
      `which this version (${PARLEY_VERSION}) does not know. A newer Parley upgraded it; run that version (or newer), ` +
      'or restore a backup taken before the upgrade. Nothing was changed.',
  );
}

/**
 * Runs a whole transaction again when PostgreSQL aborted it as a deadlock victim
 * (40P01): its work was rolled back, so a new attempt is safe.
 */
export async function retryOnDeadlock<T>(transaction: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if ((error as { code?: string })?.code !== '40P01' || attempt >= attempts) throw error;
    }
  }
}

export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
