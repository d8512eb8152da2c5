import type { Db } from '../../core/db/database.js';
import { toBool } from '../../core/db/json.js';

export interface Credential {
  id: string;
  email: string;
  password: string;
  active: boolean;
}

/** An OAuth session as it may be shown: everything but the provider's tokens. */
export interface OAuthSessionInfo {
  id: string;
  user_id: string;
  provider: string;
  expires_at: number;
  created_at: number;
  updated_at: number;
}

/** Queries of the `auth` (password credentials), `api_key` and `oauth_session` tables. */
/** A row of `api_key`. */
export interface ApiKeyRecord {
  id: string;
  user_id: string;
  key: string;
  data: string | null;
  expires_at: number | null;
  last_used_at: number | null;
  created_at: number;
  updated_at: number;
}

export class AuthStore {
  constructor(private readonly db: Db) {}

  async credentialOf(userId: string): Promise<Credential | null> {
    const row = await this.db.selectFrom('auth').selectAll().where('id', '=', userId).executeTakeFirst();
    return row ? { ...row, active: toBool(row.active) } : null;
  }

  async insertCredential(credential: Credential): Promise<void> {
    await this.db.insertInto('auth').values(credential).execute();
  }

  async updatePassword(userId: string, hash: string): Promise<boolean> {
    const result = await this.db.updateTable('auth').set({ password: hash }).where('id', '=', userId).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async updateEmail(userId: string, email: string): Promise<void> {
    await this.db.updateTable('auth').set({ email }).where('id', '=', userId).execute();
  }

  async apiKeyOf(userId: string): Promise<string | null> {
    const row = await this.db.selectFrom('api_key').select('key').where('user_id', '=', userId).executeTakeFirst();
    return row?.key ?? null;
  }

  /** Replaces the user's key (one per user, id `key_<user id>` as the reference). */
  async replaceApiKey(userId: string, key: string, now: number): Promise<void> {
    await this.db.deleteFrom('api_key').where('user_id', '=', userId).execute();
    await this.db
      .insertInto('api_key')
      .values({ id: `key_${userId}`, user_id: userId, key, data: null, expires_at: null, last_used_at: null, created_at: now, updated_at: now })
      .execute();
  }

  /** A key as another install stored it (`parley import-openwebui`). */
  async insertApiKey(key: ApiKeyRecord): Promise<void> {
    await this.db.insertInto('api_key').values(key).execute();
  }

  async deleteApiKey(userId: string): Promise<void> {
    await this.db.deleteFrom('api_key').where('user_id', '=', userId).execute();
  }

  async oauthSessionsOf(userId: string): Promise<OAuthSessionInfo[]> {
    return this.db
      .selectFrom('oauth_session')
      .select(['id', 'user_id', 'provider', 'expires_at', 'created_at', 'updated_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute();
  }

  async deleteOAuthSessions(userId: string, provider: string): Promise<number> {
    const result = await this.db.deleteFrom('oauth_session').where('user_id', '=', userId).where('provider', '=', provider).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
