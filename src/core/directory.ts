import type { UserRecord } from './auth/user.js';
import type { Db } from './db/database.js';

/*
 * Who is who, as what sits below the users and groups areas needs it: core access checks, the
 * plugin API, and the users and groups areas' views of each other. The users and groups services
 * provide these (wired in app.ts), so none of those import the users or groups area.
 */

export interface UserDirectory {
  byId(id: string): Promise<UserRecord | null>;
  /** The records of those ids that exist (read in `db`'s transaction when given). */
  byIds(ids: string[], db?: Db): Promise<UserRecord[]>;
  byEmail(email: string): Promise<UserRecord | null>;
}

/** A group as permission checks and membership lists see it. */
export interface GroupSummary {
  id: string;
  name: string;
  permissions: Record<string, unknown> | null;
}

export interface GroupDirectory {
  /** The user's groups: the same frozen array while memberships are unchanged, so results may be cached by it. */
  groupsOf(userId: string): Promise<readonly GroupSummary[]>;
  groupIdsOf(userId: string, db?: Db): Promise<string[]>;
  groupIdsOfUsers(userIds: string[]): Promise<Map<string, string[]>>;
  byId(id: string, db?: Db): Promise<GroupSummary | null>;
  /** Those of `ids` that name a group. */
  existingIds(ids: string[], db?: Db): Promise<string[]>;
}
