import type { Kysely } from 'kysely';

/**
 * Sessions ended by sign-out before their token expired (`jti`), kept until
 * that expiry. Every instance holds the list in memory (see
 * core/auth/revocations.ts); the table makes it survive restarts and reach
 * instances that start later.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('revoked_token')
    .addColumn('jti', 'text', (c) => c.primaryKey())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
}
