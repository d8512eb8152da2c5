import type { Kysely } from 'kysely';

/**
 * Users signed out everywhere at once (SCIM de-provisioning): every session token of the user
 * issued at or before `signed_out_at` (epoch seconds) is refused. Held in memory by every
 * instance with the revoked tokens (core/auth/revocations.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('revoked_user_session')
    .addColumn('user_id', 'text', (c) => c.primaryKey())
    .addColumn('signed_out_at', 'bigint', (c) => c.notNull())
    .execute();
}
