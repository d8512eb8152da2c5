import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { type Env, readEnv } from './config/env.js';
import { SettingsStore } from './config/settings.js';
import { AccessService } from './core/access/service.js';
import { createAuthGuard } from './core/auth/guard.js';
import { RevokedTokens } from './core/auth/revocations.js';
import { TokenService } from './core/auth/tokens.js';
import { ChangeFeed } from './core/changes.js';
import { type Clock, systemClock } from './core/clock.js';
import { type Area, mountAreas } from './core/areas.js';
import type { AreaContext, Core } from './core/context.js';
import { migrate, openDatabase } from './core/db/database.js';
import { messageContextOf } from './core/events/formats.js';
import { EventBus } from './core/events/publish.js';
import { UserWebhooks } from './core/events/user-webhooks.js';
import { readRequestLimits } from './core/http/limits.js';
import { serveMetrics } from './core/observability/metrics.js';
import { readObservabilityOptions } from './core/observability/options.js';
import { observeRequests, type RequestObserver } from './core/observability/requests.js';
import { requestIdMixin } from './core/observability/request-id.js';
import { startTelemetry } from './core/observability/telemetry.js';
import { type App, createHttpServer } from './core/http/server.js';
import { AuthsService } from './areas/auths/service.js';
import { authsArea } from './areas/auths/routes.js';
import { oauthArea } from './areas/oauth/routes.js';
import { OAuthService } from './areas/oauth/service.js';
import { ScimService } from './areas/scim/service.js';
import { scimArea } from './areas/scim/routes.js';
import { configsArea } from './areas/configs/routes.js';
import { eventsArea } from './areas/events/routes.js';
import { EventsService } from './areas/events/service.js';
import { createFrontend } from './areas/frontend/static.js';
import { GroupsService } from './areas/groups/service.js';
import { groupsArea } from './areas/groups/routes.js';
import { legalArea } from './areas/legal/routes.js';
import { systemArea } from './areas/system/routes.js';
import { UsersService } from './areas/users/service.js';
import { usersArea } from './areas/users/routes.js';
import { CompletionsService } from './areas/models/completions.js';
import { modelAppArea, modelsArea } from './areas/models/routes.js';
import { ModelsService } from './areas/models/service.js';
import { ollamaArea } from './areas/ollama/routes.js';
import { OllamaService } from './areas/ollama/service.js';
import { openaiArea } from './areas/openai/routes.js';
import { OpenAIService } from './areas/openai/service.js';
import { UpstreamService } from './core/upstream/service.js';
import { OllamaProvider } from './core/providers/ollama.js';
import { OpenAIProvider } from './core/providers/openai.js';
import { PythonHost } from './core/python/host.js';
import { toolsArea } from './areas/tools/routes.js';
import { functionsArea } from './areas/functions/routes.js';
import { skillsArea } from './areas/skills/routes.js';
import { SkillsService } from './areas/skills/service.js';
import { McpServers } from './areas/completions/mcp.js';
import { ToolServers } from './areas/completions/tool-servers.js';
import { ToolsService } from './areas/tools/service.js';
import { FunctionsService } from './areas/functions/service.js';
import { connectEventFunctions, connectPipes } from './areas/functions/connect.js';
import { ChatFunctions } from './areas/functions/chat.js';
import { PipelineFunctions } from './areas/completions/functions.js';
import { chatsArea } from './areas/chats/routes.js';
import { ChatsService } from './areas/chats/service.js';
import { foldersArea } from './areas/folders/routes.js';
import { FoldersService } from './areas/folders/service.js';
import { completionsArea } from './areas/completions/routes.js';
import { codeExecutionArea } from './areas/code-execution/routes.js';
import { readPipelineOptions } from './areas/completions/options.js';
import { ChatAttachments } from './areas/completions/attachments.js';
import { ChatPipeline } from './areas/completions/service.js';
import { TaskRegistry } from './areas/tasks/registry.js';
import { runningTasksArea, tasksArea } from './areas/tasks/routes.js';
import { TasksService } from './areas/tasks/service.js';
import { connectRealtime } from './areas/completions/realtime.js';
import { readRealtimeOptions } from './core/realtime/options.js';
import { Realtime } from './core/realtime/server.js';
import { audioArea } from './areas/audio/routes.js';
import { AudioService } from './areas/audio/service.js';
import { filesArea } from './areas/files/routes.js';
import { FilesService } from './areas/files/service.js';
import { promptsArea } from './areas/prompts/routes.js';
import { PromptsService } from './areas/prompts/service.js';
import { notesArea } from './areas/notes/routes.js';
import { NotesService } from './areas/notes/service.js';
import { NoteCollaboration } from './areas/notes/collaboration.js';
import { memoriesArea } from './areas/memories/routes.js';
import { MemoriesService } from './areas/memories/service.js';
import { ExternalKnowledgeService } from './areas/knowledge/external.js';
import { knowledgeArea } from './areas/knowledge/routes.js';
import { KnowledgeService } from './areas/knowledge/service.js';
import { FILE_MAX_SIZE } from './core/retrieval/settings.js';
import { buildRetrieval } from './core/retrieval/build.js';
import type { RetrievalService } from './core/retrieval/service.js';
import { retrievalArea } from './areas/retrieval/routes.js';
import { CollectionsService } from './areas/retrieval/service.js';
import { PluginBridge } from './core/python/bridge.js';
import { defineCompatApi } from './core/python/compat-api.js';
import { readWebOptions } from './areas/web/options.js';
import { webArea } from './areas/web/routes.js';
import { WebService } from './areas/web/service.js';
import { channelsArea } from './areas/channels/routes.js';
import { ChannelsService } from './areas/channels/service.js';
import { ChannelModelReplies } from './areas/channels/replies.js';
import { connectChannelSockets } from './areas/channels/realtime.js';
import { readSchedulerOptions, Scheduler } from './core/scheduler/scheduler.js';
import { automationsArea } from './areas/automations/routes.js';
import { AutomationRunner } from './areas/automations/runner.js';
import { AutomationsService } from './areas/automations/service.js';
import { calendarArea } from './areas/calendar/routes.js';
import { CalendarService, readCalendarOptions } from './areas/calendar/service.js';
import { evaluationsArea } from './areas/evaluations/routes.js';
import { EvaluationsService } from './areas/evaluations/service.js';
import { analyticsArea } from './areas/analytics/routes.js';
import { AnalyticsService } from './areas/analytics/service.js';
import { limitsArea } from './areas/limits/routes.js';
import { LimitsService } from './areas/limits/service.js';
import { imagesArea } from './areas/images/routes.js';
import { ImagesService } from './areas/images/service.js';

import { pipelinesArea } from './areas/pipelines/routes.js';
import { PipelinesService } from './areas/pipelines/service.js';
import { utilsArea } from './areas/utils/routes.js';
import { terminalsArea } from './areas/terminals/routes.js';
import { TerminalsService } from './areas/terminals/service.js';
import { UtilsService } from './areas/utils/service.js';

/** Every area's service, built once here; each area's routes take the ones they name. */
export interface Services {
  users: UsersService;
  groups: GroupsService;
  access: AccessService;
  auths: AuthsService;
  oauth: OAuthService;
  events: EventsService;
  upstream: UpstreamService;
  models: ModelsService;
  openai: OpenAIService;
  ollama: OllamaService;
  completions: CompletionsService;
  python: PythonHost;
  tools: ToolsService;
  functions: FunctionsService;
  folders: FoldersService;
  chats: ChatsService;
  realtime: Realtime;
  tasks: TasksService;
  pipeline: ChatPipeline;
  files: FilesService;
  audio: AudioService;
  prompts: PromptsService;
  skills: SkillsService;
  notes: NotesService;
  memories: MemoriesService;
  knowledge: KnowledgeService;
  externalKnowledge: ExternalKnowledgeService;
  retrieval: RetrievalService;
  collections: CollectionsService;
  web: WebService;
  channels: ChannelsService;
  automations: AutomationsService;
  calendar: CalendarService;
  evaluations: EvaluationsService;
  analytics: AnalyticsService;
  limits: LimitsService;
  images: ImagesService;

  pipelines: PipelinesService;
  utils: UtilsService;
  terminals: TerminalsService;
  scim: ScimService;
}

export interface Parley {
  app: App;
  core: Core;
  services: Services;
  close(): Promise<void>;
}

export interface BuildOptions {
  env?: Env;
  clock?: Clock;
  logLevel?: string;
  /** Where log lines go (standard output by default). */
  logStream?: pino.DestinationStream;
}

/** The composition root: core machinery, then services, then every area's routes. */
export async function buildParley(options: BuildOptions = {}): Promise<Parley> {
  const env = options.env ?? readEnv();
  const observability = readObservabilityOptions(env.raw);
  const clock = options.clock ?? systemClock;
  const logger = pino({ level: options.logLevel ?? env.logLevel, ...(observability.requestContext ? { mixin: requestIdMixin } : {}) }, options.logStream);
  // Started first: its tracing (or null) is handed to the database, the upstream client and the plugin host.
  const telemetry = await startTelemetry(observability.otel, env.version, logger);
  const tracing = telemetry?.tracing ?? null;
  // Tool code runs in Python worker processes, started on first use (docs/plugin-host.md).
  const python = new PythonHost({
    dataDir: env.dataDir,
    python: env.python,
    poolSize: env.pluginPoolMax,
    perUserConcurrency: env.pluginUserConcurrency,
    sandbox: env.pluginSandbox,
    pluginUser: env.pluginUser,
    pluginGroup: env.pluginGroup,
    venvDir: env.pluginVenvDir,
    callTimeoutMs: env.pluginCallTimeoutSeconds * 1000,
    memoryLimitMb: env.pluginMemoryLimitMb,
    enabled: env.enablePlugins,
    pipInstall: env.enablePipInstallFrontmatterRequirements && !env.offlineMode,
    pipOptions: env.pipOptions,
    pipIndexOptions: env.pipPackageIndexOptions,
    env: { WEBUI_NAME: env.webuiName },
    log: logger,
    tracing,
  });
  if (env.enablePlugins) {
    // One line naming the isolation in force, loud when something is not isolated.
    const isolation = python.isolation();
    logger[isolation.level]({ mode: isolation.mode, uid: isolation.uid, gid: isolation.gid }, isolation.message);
  }
  const database = openDatabase({ databaseUrl: env.databaseUrl, dataDir: env.dataDir, tracing });
  await migrate(database.db);

  const realtimeOptions = readRealtimeOptions(env.raw, env.corsAllowOrigin);
  const changes = new ChangeFeed({ redisUrl: env.redisUrl, keyPrefix: realtimeOptions.redisKeyPrefix }, logger);
  const settings = new SettingsStore(database.db, env.raw, env.enablePersistentConfig, changes);
  const revokedTokens = new RevokedTokens(database.db, clock, changes);
  const core: Core = {
    env,
    database,
    db: database.db,
    settings,
    events: new EventBus({ version: env.version, instanceId: env.raw.INSTANCE_ID ?? randomUUID(), now: () => clock.now() }),
    clock,
    log: logger,
    tokens: new TokenService(env.secretKey, clock, revokedTokens),
    revokedTokens,
    changes,
    scheduler: new Scheduler(database.db, database.dialect, clock, logger, readSchedulerOptions(env.raw)),
    userWebhooks: new UserWebhooks(settings, env.raw, messageContextOf(env), logger),
  };

  const users = new UsersService(core);
  const groups = new GroupsService(core, users);
  const access = new AccessService(core, groups, users);
  const auths = new AuthsService(core, users, access, groups, { redisUrl: env.redisUrl, keyPrefix: realtimeOptions.redisKeyPrefix });
  users.connect({ groups, access, auths });
  const oauth = new OAuthService(core, auths, users, groups, access);
  auths.connectOAuth(oauth);
  const scim = new ScimService(core, users, groups, auths, access);
  const events = new EventsService(core, groups);
  const upstream = new UpstreamService(core, tracing);
  const pipelines = new PipelinesService(core, upstream);
  const terminals = new TerminalsService(core, access, upstream);
  const retrieval = await buildRetrieval(core, upstream.client, upstream.options.timeoutMs);
  const models = new ModelsService(core, upstream, access, users);
  // One adapter per kind of provider, below the areas: the proxy routes and every completion go through them.
  const providers = { openai: new OpenAIProvider(upstream, settings), ollama: new OllamaProvider(upstream, settings) };
  const openai = new OpenAIService(core, upstream, providers.openai, models, access);
  const ollama = new OllamaService(core, upstream, providers.ollama, models);
  const completions = new CompletionsService(upstream, models, providers);
  const tools = new ToolsService(core, access, users, python);
  const functions = new FunctionsService(core, users, python);
  const folders = new FoldersService(core, access, users);
  const chats = new ChatsService(core, access, users, folders, models, completions);
  folders.connect(chats);
  const files = new FilesService(core, access, users, models, chats, retrieval);
  const prompts = new PromptsService(core, access, users);
  const skills = new SkillsService(core, access, users);
  const notes = new NotesService(core, access, users, chats);
  const memories = new MemoriesService(core, access, retrieval);
  const collections = new CollectionsService(core, retrieval, files);
  const knowledge = new KnowledgeService(core, access, users, files, models, retrieval);
  files.connect(knowledge);
  const audio = new AudioService(core, access);
  files.connectSpeech(audio);
  const externalKnowledge = new ExternalKnowledgeService(core, knowledge, () => retrieval.embedder());
  collections.connectKnowledge(knowledge);
  const web = new WebService(core, access, collections, retrieval, readWebOptions(env.raw));
  // Plugins' calls into Parley (the `open_webui` compatibility package), answered as their user.
  const bridge = new PluginBridge();
  defineCompatApi(bridge, { users, files, completions, chats, settings, clock });
  python.setBridge(bridge);
  const realtime = new Realtime(realtimeOptions, { tokens: core.tokens, userById: (id) => users.sessionUser(id), touch: (user) => users.touch(user), log: logger });
  const registry = new TaskRegistry({ redisUrl: env.redisUrl, keyPrefix: realtimeOptions.redisKeyPrefix }, logger);
  const tasks = new TasksService(core, models, completions, chats, realtime, registry, pipelines);
  const limits = new LimitsService(core);
  const images = new ImagesService(core, { files, access });
  const pipelineOptions = readPipelineOptions(env.raw);
  const attachments = new ChatAttachments(core, { files, chats, folders, tasks, retrieval, collections, knowledge, externalKnowledge, notes }, pipelineOptions);
  const toolServers = new ToolServers(core, access);
  toolServers.connectOAuth(oauth);
  const mcpServers = new McpServers(core, toolServers);
  tools.connectServers(toolServers);
  const pipeline = new ChatPipeline(core, pipelineOptions, {
    models,
    completions,
    chats,
    tools,
    skills,
    toolServers,
    mcpServers,
    functions: new PipelineFunctions(new ChatFunctions(functions), chats, realtime),
    tasks,
    realtime,
    memories,
    notes,
    knowledge,
    retrieval,
    attachments,
    web,
    access,
    python,
    files,
    limits,
    images,

    pipelines,
    terminals,
    users,
  });
  connectPipes({ functions, models, completions, realtime, chats, log: logger });
  connectRealtime({ realtime, users, chats, folders, registry });
  const automations = new AutomationsService(core, access, folders, users, new AutomationRunner(core, { users, access, chats, folders, models, pipeline, realtime }));
  const calendar = new CalendarService(core, access, users, realtime, automations, readCalendarOptions(env.raw));
  const noteCollaboration = new NoteCollaboration(realtime, notes, logger);
  const evaluations = new EvaluationsService(core, chats, () => retrieval.embedder());
  const analytics = new AnalyticsService(core, evaluations);
  const channels = new ChannelsService(core, access, users, groups, files, realtime);
  files.connectChannels(channels);
  connectChannelSockets({ realtime, channels, users });
  const channelReplies = new ChannelModelReplies(core, channels, models, completions);

  const services: Services = {
    ...{ users, groups, access, auths, oauth, events, upstream, models, openai, ollama, completions, python, tools, functions, folders, chats, files },
    ...{ audio, prompts, skills, notes, memories, realtime, tasks, pipeline, retrieval, collections, knowledge, externalKnowledge, web, channels },
    ...{ automations, calendar, evaluations, analytics, limits, images, pipelines, utils: new UtilsService(core, python), terminals, scim },
  };

  // Setting definitions are registered by the modules imported above; seed and load them now.
  await settings.load(clock.now());
  for (const { key, variables } of settings.shadowed()) {
    logger.warn(
      { key, variables },
      `${variables.join(', ')} ${variables.length > 1 ? 'are' : 'is'} set, but the stored value of the persistent setting ${key} is used: ` +
        'change it in the admin settings (or POST /api/v1/configs/import), or start with ENABLE_PERSISTENT_CONFIG=false to let the environment win',
    );
  }
  await revokedTokens.load();
  await changes.start();
  await connectEventFunctions(functions, events);
  await events.start();
  await registry.start();
  files.start();
  await notes.saveUnsavedDocuments();
  core.scheduler.start();

  const auth = createAuthGuard(core.tokens, {
    userById: (id) => users.sessionUser(id),
    cachedUserById: (id) => users.cachedSessionUser(id),
    userByApiKey: (key) => users.byApiKey(key),
    checkApiKeyUse: (user, path) => auths.checkApiKeyUse(user, path),
    touch: (user) => users.touch(user),
  }, { trustedEmailHeader: env.raw.WEBUI_AUTH_TRUSTED_EMAIL_HEADER?.toLowerCase() || null });

  const frontend = createFrontend(env.frontendBuildDir);
  const app = await createHttpServer({
    logger,
    corsAllowOrigin: env.corsAllowOrigin,
    version: env.version,
    limits: readRequestLimits(env.raw),
    requestContext: observability.requestContext,
    uploadLimitMb: () => settings.get(FILE_MAX_SIZE),
    fallback: frontend?.fallback,
  });
  app.decorateRequest('user', null);
  app.decorateRequest('token', null);
  app.decorateRequest('tokenClaims', null);

  // Metrics and traces (docs/deployment.md § Observability): a hook on every request only when on.
  const observers: RequestObserver[] = [];
  if (observability.metrics.enabled) {
    const sources = {
      runningTasks: () => registry.running,
      plugins: () => python.stats(),
      webhookAttempts: () => events.dispatcher.stats,
      deliveries: () => events.store.deliveryCounts(),
      processing: () => files.processingQueue(),
    };
    observers.push(await serveMetrics(app, observability.metrics, sources, auth.admin));
  }
  if (telemetry) observers.push(telemetry.observer);
  observeRequests(app, observers);

  const context: AreaContext<Services> = { core, auth, services };
  // Every area of the interface, each mounted where its routes.ts says.
  const areas: Area<Services>[] = [
    systemArea,
    authsArea,
    oauthArea,
    scimArea,
    usersArea,
    groupsArea,
    configsArea,
    legalArea,
    eventsArea,
    modelsArea,
    modelAppArea,
    openaiArea,
    ollamaArea,
    toolsArea,
    functionsArea,
    skillsArea,
    chatsArea,
    foldersArea,
    filesArea,
    audioArea,
    promptsArea,
    notesArea,
    memoriesArea,
    knowledgeArea,
    retrievalArea,
    completionsArea,
    codeExecutionArea,
    runningTasksArea,
    tasksArea,
    webArea,
    channelsArea,
    automationsArea,
    calendarArea,
    evaluationsArea,
    analyticsArea,
    limitsArea,
    imagesArea,

    pipelinesArea,
    utilsArea,
    terminalsArea,
  ];
  await mountAreas(app, context, areas);
  if (frontend) await app.register(async (web) => frontend.routes(web as App));
  // The socket server shares the HTTP server (`/ws/socket.io`).
  await realtime.attach(app.server);

  return {
    app,
    core,
    services,
    async close() {
      // Running answers are stopped (and saved) while their sockets and database are still there.
      await core.scheduler.stop();
      await automations.close();
      await registry.close();
      await channelReplies.close();
      await realtime.close();
      await noteCollaboration.close();
      await app.close();
      await telemetry?.close();
      await files.close();
      await web.close();
      await images.close();
      await core.userWebhooks.close();
      await retrieval.close();
      await upstream.close();
      await events.stop();
      await tools.close();
      await functions.close();
      await python.close();
      await auths.close();
      await changes.stop();
      await database.close();
    },
  };
}
