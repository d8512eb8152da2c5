import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { UserRecord } from '../../core/auth/user.js';
import { JsonObject } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import {
  Anything,
  BannerModel,
  CodeInterpreterConfigForm,
  ConnectionsConfigForm,
  ImportConfigForm,
  ModelsConfigForm,
  ModelsDefaultsResponse,
  NamespaceParams,
  OAuthClientRegistrationForm,
  OAuthClientRegistrationQuery,
  PromptSuggestion,
  SetBannersForm,
  SetDefaultSuggestionsForm,
  SubagentsConfigForm,
  TerminalServerConnection,
  TerminalServerLifecycleForm,
  TerminalServerPolicyForm,
  TerminalServerRefreshForm,
  TerminalServersConfigForm,
  ToolServerConnection,
  ToolServersConfigForm,
} from './schemas.js';
import { ConfigsService } from './service.js';

/** `/api/v1/configs`: admin configuration forms, import/export, banners and suggestions. */
async function configsRoutes(app: App, ctx: AreaContext): Promise<void> {
  const configs = new ConfigsService(ctx.core);
  const admin = { onRequest: ctx.auth.admin };
  const tags = ['configs'];
  const me = (user: UserRecord | null) => user as UserRecord;

  app.post('/import', { ...admin, config: { bodyClass: 'large' }, schema: { tags, body: ImportConfigForm, response: { 200: JsonObject() } } }, (request) =>
    configs.importConfig(me(request.user), request.body.config),
  );
  app.get('/export', { ...admin, schema: { tags, response: { 200: JsonObject() } } }, async () => configs.exportAll());
  app.get('/namespace/:namespace', { ...admin, schema: { tags, params: NamespaceParams, response: { 200: JsonObject() } } }, async (request) =>
    configs.namespace(request.params.namespace),
  );

  app.get('/connections', { ...admin, schema: { tags, response: { 200: ConnectionsConfigForm } } }, async () => configs.connections());
  app.post('/connections', { ...admin, schema: { tags, body: ConnectionsConfigForm, response: { 200: ConnectionsConfigForm } } }, (request) =>
    configs.setConnections(me(request.user), request.body),
  );

  app.post(
    '/oauth/clients/register',
    { ...admin, schema: { tags, body: OAuthClientRegistrationForm, querystring: OAuthClientRegistrationQuery, response: { 200: Anything } } },
    (request) => configs.registerOAuthClient(request.body, request.query.type, `${request.protocol}://${request.host}`),
  );

  // Stored lists may hold imported entries of any shape; answers pass them through whole.
  const toolList = Type.Object({ TOOL_SERVER_CONNECTIONS: Type.Unknown() });
  app.get('/tool_servers', { ...admin, schema: { tags, response: { 200: toolList } } }, async () => configs.toolServers());
  app.post('/tool_servers', { ...admin, schema: { tags, body: ToolServersConfigForm, response: { 200: toolList } } }, (request) =>
    configs.setToolServers(me(request.user), request.body.TOOL_SERVER_CONNECTIONS),
  );
  app.post('/tool_servers/verify', { ...admin, schema: { tags, body: ToolServerConnection, response: { 200: Anything } } }, (request) =>
    configs.verifyToolServer(request.body, request.token),
  );

  const terminalList = Type.Object({ TERMINAL_SERVER_CONNECTIONS: Type.Unknown() });
  app.get('/terminal_servers', { ...admin, schema: { tags, response: { 200: terminalList } } }, async () => configs.terminalServers());
  app.post('/terminal_servers', { ...admin, schema: { tags, body: TerminalServersConfigForm, response: { 200: terminalList } } }, (request) =>
    configs.setTerminalServers(me(request.user), request.body.TERMINAL_SERVER_CONNECTIONS),
  );
  app.post('/terminal_servers/verify', { ...admin, schema: { tags, body: TerminalServerConnection, response: { 200: Anything } } }, (request) =>
    configs.verifyTerminalServer(request.body),
  );
  app.post('/terminal_servers/policy', { ...admin, schema: { tags, body: TerminalServerPolicyForm, response: { 200: Anything } } }, (request) =>
    configs.terminalPolicy(request.body),
  );
  app.post('/terminal_servers/lifecycle', { ...admin, schema: { tags, body: TerminalServerLifecycleForm, response: { 200: Anything } } }, (request) =>
    configs.terminalLifecycle(request.body),
  );
  app.post('/terminal_servers/refresh', { ...admin, schema: { tags, body: TerminalServerRefreshForm, response: { 200: Anything } } }, (request) =>
    configs.refreshTerminals(request.body),
  );

  app.get('/code_execution', { ...admin, schema: { tags, response: { 200: CodeInterpreterConfigForm } } }, async () => configs.codeExecution());
  app.post('/code_execution', { ...admin, schema: { tags, body: CodeInterpreterConfigForm, response: { 200: CodeInterpreterConfigForm } } }, (request) =>
    configs.setCodeExecution(me(request.user), request.body),
  );

  app.get('/models/defaults', { onRequest: ctx.auth.verified, schema: { tags, response: { 200: ModelsDefaultsResponse } } }, async () =>
    configs.modelsDefaults(),
  );
  app.get('/models', { ...admin, schema: { tags, response: { 200: ModelsConfigForm } } }, async () => configs.models());
  app.post('/models', { ...admin, schema: { tags, body: ModelsConfigForm, response: { 200: ModelsConfigForm } } }, (request) =>
    configs.setModels(me(request.user), request.body),
  );

  app.get('/subagents', { ...admin, schema: { tags, response: { 200: SubagentsConfigForm } } }, async () => configs.subagents());
  app.post('/subagents', { ...admin, schema: { tags, body: SubagentsConfigForm, response: { 200: SubagentsConfigForm } } }, (request) =>
    configs.setSubagents(me(request.user), request.body),
  );

  app.post('/suggestions', { ...admin, schema: { tags, body: SetDefaultSuggestionsForm, response: { 200: Type.Array(PromptSuggestion) } } }, (request) =>
    configs.setSuggestions(me(request.user), request.body.suggestions),
  );

  app.post('/banners', { ...admin, schema: { tags, body: SetBannersForm, response: { 200: Type.Array(BannerModel) } } }, (request) =>
    configs.setBanners(me(request.user), request.body.banners),
  );
  app.get('/banners', { onRequest: ctx.auth.verified, schema: { tags, response: { 200: Type.Array(BannerModel) } } }, async () => configs.banners());
}

export const configsArea = defineArea('/api/v1/configs', configsRoutes);
