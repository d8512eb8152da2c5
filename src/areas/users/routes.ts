import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { UserPermissionsSchema } from '../../core/access/permissions.js';
import type { AccessService } from '../../core/access/service.js';
import { JsonObject, Nullable } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import { GroupModel } from '../groups/schemas.js';
import type { LimitsService } from '../limits/service.js';
import {
  ActiveResponse,
  ListUsersQuery,
  OAuthSessionList,
  PermissionsTree,
  UserActiveResponse,
  UserGroupIdsListResponse,
  UserIdParams,
  UserInfoListResponse,
  UserInfoResponse,
  UserModel,
  UserPermissionsResponse,
  UserPreviewResponse,
  UserSettings,
  UserStatusForm,
  UserUpdateForm,
  UserUsageQuery,
  UserUsageResponse,
  UserVariablesForm,
  UserVariablesResponse,
} from './schemas.js';
import type { GroupsService } from '../groups/service.js';
import type { UsersService } from './service.js';

/** `/api/v1/users`: user records, the signed-in user's own data, and default permissions. */
async function usersRoutes(app: App, ctx: AreaContext<{ users: UsersService; groups: GroupsService; access: AccessService; limits: LimitsService }>): Promise<void> {
  const { auth } = ctx;
  const { users, groups, access, limits } = ctx.services;
  const tags = ['users'];

  // ---- Lists ----

  app.get('/', { onRequest: auth.admin, schema: { tags, querystring: ListUsersQuery, response: { 200: UserGroupIdsListResponse } } }, (request) =>
    users.listWithGroupIds(request.query),
  );

  app.get('/all', { onRequest: auth.admin, schema: { tags, response: { 200: UserInfoListResponse } } }, () => users.search(null));

  app.get('/search', { onRequest: auth.verified, schema: { tags, querystring: ListUsersQuery, response: { 200: UserInfoListResponse } } }, (request) =>
    users.search(request.query),
  );

  // ---- The caller's groups and permissions; the default permissions ----

  app.get('/groups', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(GroupModel) } } }, (request) =>
    groups.groupsOf(request.user!.id),
  );

  app.get('/permissions', { onRequest: auth.verified, schema: { tags, response: { 200: PermissionsTree } } }, (request) =>
    access.permissionsOf(request.user!),
  );

  app.get('/default/permissions', { onRequest: auth.admin, schema: { tags, response: { 200: UserPermissionsResponse } } }, () =>
    access.defaultPermissions(),
  );

  app.post(
    '/default/permissions',
    { onRequest: auth.admin, schema: { tags, body: UserPermissionsSchema, response: { 200: UserPermissionsResponse } } },
    (request) => access.setDefaultPermissions(request.user!, request.body),
  );

  app.get('/default/permissions/defaults', { onRequest: auth.admin, schema: { tags, response: { 200: UserPermissionsResponse } } }, () =>
    access.baselinePermissions(),
  );

  // ---- The signed-in user's own settings, status, info, variables and usage ----

  app.get('/user/settings', { onRequest: auth.verified, schema: { tags, response: { 200: Nullable(UserSettings) } } }, async (request) =>
    request.user!.settings,
  );

  app.post(
    '/user/settings/update',
    // The interface settings may hold a chat background image as a data URI.
    { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: UserSettings, response: { 200: UserSettings } } },
    (request) => users.updateSettings(request.user!, request.body),
  );

  app.get('/user/status', { onRequest: auth.verified, schema: { tags, response: { 200: UserModel } } }, async (request) =>
    users.statusOf(request.user!),
  );

  app.post(
    '/user/status/update',
    { onRequest: auth.verified, schema: { tags, body: UserStatusForm, response: { 200: UserModel } } },
    (request) => users.updateStatus(request.user!, request.body),
  );

  app.get('/user/info', { onRequest: auth.verified, schema: { tags, response: { 200: Nullable(JsonObject()) } } }, async (request) =>
    request.user!.info,
  );

  app.post(
    '/user/info/update',
    { onRequest: auth.verified, schema: { tags, body: JsonObject(), response: { 200: Nullable(JsonObject()) } } },
    (request) => users.updateInfo(request.user!, request.body),
  );

  app.get('/user/variables', { onRequest: auth.verified, schema: { tags, response: { 200: UserVariablesResponse } } }, async (request) =>
    users.variablesOf(request.user!),
  );

  app.post(
    '/user/variables/update',
    { onRequest: auth.verified, schema: { tags, body: UserVariablesForm, response: { 200: UserVariablesResponse } } },
    (request) => users.updateVariables(request.user!, request.body.variables ?? {}),
  );

  app.get('/usage', { onRequest: auth.verified, schema: { tags, querystring: UserUsageQuery, response: { 200: UserUsageResponse } } }, async (request) =>
    // The report, and the budgets an admin set for the user (usage limits).
    ({ ...(await users.usage(request.user!, request.query)), limits: await limits.budgets(request.user!) }),
  );

  // ---- One user by id ----

  app.get('/:user_id', { onRequest: auth.admin, schema: { tags, params: UserIdParams, response: { 200: UserActiveResponse } } }, (request) =>
    users.profileWithGroups(request.params.user_id),
  );

  app.get('/:user_id/info', { onRequest: auth.verified, schema: { tags, params: UserIdParams, response: { 200: UserInfoResponse } } }, (request) =>
    users.info(request.params.user_id),
  );

  app.get(
    '/:user_id/oauth/sessions',
    { onRequest: auth.admin, schema: { tags, params: UserIdParams, response: { 200: OAuthSessionList } } },
    (request) => users.oauthSessions(request.params.user_id),
  );

  app.get('/:user_id/profile/image', { onRequest: auth.verified, schema: { tags, params: UserIdParams } }, async (request, reply) => {
    const image = await users.profileImage(request.params.user_id);
    if (image.kind === 'redirect') return reply.code(302).header('location', image.location).send();
    if (image.uploaded) reply.header('content-disposition', 'inline').header('x-content-type-options', 'nosniff');
    return reply.type(image.contentType).send(image.body);
  });

  app.get('/:user_id/active', { onRequest: auth.verified, schema: { tags, params: UserIdParams, response: { 200: ActiveResponse } } }, (request) =>
    users.activeStatus(request.params.user_id),
  );

  app.post(
    '/:user_id/update',
    { onRequest: auth.admin, schema: { tags, params: UserIdParams, body: UserUpdateForm, response: { 200: UserModel } } },
    (request) => users.updateByAdmin(request.user!, request.params.user_id, request.body),
  );

  app.delete('/:user_id', { onRequest: auth.admin, schema: { tags, params: UserIdParams, response: { 200: Type.Boolean() } } }, (request) =>
    users.deleteByAdmin(request.user!, request.params.user_id),
  );

  app.get('/:user_id/groups', { onRequest: auth.admin, schema: { tags, params: UserIdParams, response: { 200: Type.Array(GroupModel) } } }, (request) =>
    groups.groupsOf(request.params.user_id),
  );

  app.get(
    '/:user_id/preview',
    { onRequest: auth.admin, schema: { tags, params: UserIdParams, response: { 200: UserPreviewResponse } } },
    (request) => users.accessPreview(request.params.user_id),
  );
}

export const usersArea = defineArea('/api/v1/users', usersRoutes);
