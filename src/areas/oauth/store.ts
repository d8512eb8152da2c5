import type { Db } from '../../core/db/database.js';
import type { OAuthSessionTable } from '../../core/db/tables.js';

/** A stored session row; `token` is the sealed token text. */
export type OAuthSessionRow = OAuthSessionTable;

/** Queries of the `oauth_session` table (the sign-in side; auths lists and deletes them by provider). */
export class OAuthSessionStore {
  constructor(private readonly db: Db) {}

  async insert(row: OAuthSessionRow): Promise<void> {
    await this.db.insertInto('oauth_session').values(row).execute();
  }

  async byId(id: string): Promise<OAuthSessionRow | null> {
    return (await this.db.selectFrom('oauth_session').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
  }

  /** The user's sessions, newest first. */
  async ofUser(userId: string, provider?: string): Promise<OAuthSessionRow[]> {
    let query = this.db.selectFrom('oauth_session').selectAll().where('user_id', '=', userId);
    if (provider) query = query.where('provider', '=', provider);
    return query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  }

  async replaceToken(id: string, token: string, expiresAt: number, now: number): Promise<void> {
    await this.db.updateTable('oauth_session').set({ token, expires_at: expiresAt, updated_at: now }).where('id', '=', id).execute();
  }

  async delete(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.deleteFrom('oauth_session').where('id', 'in', ids).execute();
  }
}
