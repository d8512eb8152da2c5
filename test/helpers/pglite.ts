import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { Kysely, PostgresDialect, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';
import type { Database } from '../../src/core/db/tables.js';

export interface TestPglite {
  db: Kysely<Database>;
  close(): Promise<void>;
}

/**
 * An in-process PostgreSQL (PGlite, WASM) with the pgvector extension available, behind
 * Kysely's PostgresDialect: for what CI's PostgreSQL cannot test (it has no `vector`). Its one
 * connection is lent to one holder at a time, as a pool of one.
 */
export async function startPglite(): Promise<TestPglite> {
  const pglite = await PGlite.create({ extensions: { vector } });
  let free: Promise<void> = Promise.resolve();
  const pool = {
    async connect(): Promise<PostgresPoolClient> {
      const previous = free;
      let release!: () => void;
      free = new Promise((resolve) => (release = resolve));
      await previous;
      return {
        async query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
          const result = await pglite.query<R>(sql, [...parameters]);
          const command = sql.trimStart().split(/\s/, 1)[0]!.toUpperCase() as PostgresQueryResult<R>['command'];
          return { command, rowCount: result.affectedRows ?? result.rows.length, rows: result.rows };
        },
        release,
      } as PostgresPoolClient;
    },
    end: () => pglite.close(),
  };
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, close: () => db.destroy() };
}
