import type { UserRecord } from '../auth/user.js';
import type { Core } from '../context.js';
import type { GroupsService } from '../../areas/groups/service.js';

/**
 * Permissions (the default tree merged across a user's groups) and access grants
 * for every resource type. TO BE COMPLETED by the access/groups work.
 */
export class AccessService {
  constructor(
    readonly core: Core,
    readonly groups: GroupsService,
  ) {}

  /** The user's effective permissions tree (admins hold everything). */
  async permissionsOf(_user: UserRecord): Promise<Record<string, Record<string, boolean | number | string>>> {
    throw new Error('not implemented');
  }

  /** Whether the user holds a dotted permission such as `features.api_keys`. */
  async hasPermission(_user: UserRecord, _key: string): Promise<boolean> {
    throw new Error('not implemented');
  }
}
