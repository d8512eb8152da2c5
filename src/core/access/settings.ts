import { checks, defineSetting } from '../../config/settings.js';
import { type PermissionsTree, permissionsFromEnv } from './permissions.js';

/** The default permissions tree of every user (config key `user.permissions`), seeded from USER_PERMISSIONS_*. */
export const USER_PERMISSIONS = defineSetting<PermissionsTree>({
  key: 'user.permissions',
  default: permissionsFromEnv({}),
  seed: permissionsFromEnv,
  check: checks.object,
});
