import { randomUUID } from 'node:crypto';
import type { UserRecord } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import type { Db } from '../../core/db/database.js';
import { UserStore, type UserPatch } from './store.js';

export interface NewUser {
  email: string;
  name: string;
  role: string;
  profile_image_url?: string | null;
  oauth?: Record<string, unknown> | null;
  id?: string;
}

/** How often a user's `last_active_at` is written at most (the reference throttles it too). */
const TOUCH_INTERVAL_SECONDS = 60;

/** The rules of user records. Other areas reach users through this service. */
export class UsersService {
  private readonly lastTouched = new Map<string, number>();

  constructor(private readonly core: Core) {}

  store(db: Db = this.core.db): UserStore {
    return new UserStore(db);
  }

  byId(id: string, db?: Db) {
    return this.store(db).byId(id);
  }

  byIds(ids: string[], db?: Db) {
    return this.store(db).byIds(ids);
  }

  byEmail(email: string, db?: Db) {
    return this.store(db).byEmail(email);
  }

  byApiKey(key: string) {
    return this.store().byApiKey(key);
  }

  count(db?: Db) {
    return this.store(db).count();
  }

  async isPrimaryAdmin(id: string, db?: Db): Promise<boolean> {
    return (await this.store(db).firstUserId()) === id;
  }

  /** Creates the user record (credentials are the auths area's). Call inside the caller's transaction. */
  async create(input: NewUser, db: Db): Promise<UserRecord> {
    const now = this.core.clock.now();
    const id = input.id ?? randomUUID();
    const user: UserRecord = {
      id,
      email: input.email.toLowerCase(),
      username: null,
      role: input.role,
      name: input.name,
      profile_image_url: input.profile_image_url || `/api/v1/users/${id}/profile/image`,
      profile_banner_image_url: null,
      bio: null,
      gender: null,
      date_of_birth: null,
      timezone: null,
      presence_state: null,
      status_emoji: null,
      status_message: null,
      status_expires_at: null,
      info: null,
      variables: {},
      settings: null,
      oauth: input.oauth ?? null,
      scim: null,
      last_active_at: now,
      updated_at: now,
      created_at: now,
    };
    await this.store(db).insert(user);
    return user;
  }

  update(id: string, patch: UserPatch, db?: Db): Promise<UserRecord | null> {
    return this.store(db).update(id, { ...patch, updated_at: this.core.clock.now() });
  }

  delete(id: string, db?: Db): Promise<boolean> {
    this.lastTouched.delete(id);
    return this.store(db).delete(id);
  }

  /** Records activity without a write on every request. */
  touch(user: UserRecord): void {
    const now = this.core.clock.now();
    const last = this.lastTouched.get(user.id) ?? user.last_active_at;
    if (now - last < TOUCH_INTERVAL_SECONDS) return;
    this.lastTouched.set(user.id, now);
    this.store()
      .touch(user.id, now)
      .catch((err) => this.core.log.warn({ err }, 'could not record user activity'));
  }
}
