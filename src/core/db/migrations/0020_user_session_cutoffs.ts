import type { Kysely } from 'kysely';

/**
 * A user's sessions ended all at once (OpenID back-channel logout, SCIM de-provisioning): every token
 * issued to the user up to `revoked_at` is refused. One row per user, replaced
 * by a later logout; removed with the user.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('user_session_cutoff')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('user.id').onDelete('cascade'))
    .addColumn('revoked_at', 'bigint', (c) => c.notNull())
    .execute();
}
