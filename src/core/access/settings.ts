import { defineSetting } from '../../config/settings.js';
import { normalizeDefaultPermissions, PERMISSION_VARIABLES, type PermissionsTree, permissionsFromEnv } from './permissions.js';

/** The default permissions tree of every user (config key `user.permissions`), seeded from USER_PERMISSIONS_*. */
export const USER_PERMISSIONS = defineSetting<PermissionsTree>({
  key: 'user.permissions',
  default: permissionsFromEnv({}),
  seed: permissionsFromEnv,
  seedFrom: PERMISSION_VARIABLES,
  // What POST /users/default/permissions refuses (unknown sections and switches are dropped there, kept here).
  check: (value) => {
    const normalized = normalizeDefaultPermissions(value);
    return 'error' in normalized ? normalized.error : null;
  },
});
