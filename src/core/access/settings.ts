import { checks, defineSetting } from '../../config/settings.js';
import { PERMISSION_VARIABLES, type PermissionsTree, permissionsFromEnv } from './permissions.js';

/** The default permissions tree of every user (config key `user.permissions`), seeded from USER_PERMISSIONS_*. */
export const USER_PERMISSIONS = defineSetting<PermissionsTree>({
  key: 'user.permissions',
  default: permissionsFromEnv({}),
  seed: permissionsFromEnv,
  seedFrom: PERMISSION_VARIABLES,
  check: checks.object,
});
