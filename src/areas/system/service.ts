import type { PythonHost } from '../../core/python/host.js';
import { sql } from 'kysely';
import type { AccessService } from '../../core/access/service.js';
import { type UserRecord, isAdmin } from '../../core/auth/user.js';
import type { Core } from '../../core/context.js';
import { HttpError } from '../../core/http/errors.js';
import type { Realtime } from '../../core/realtime/server.js';
import type { AuthsService } from '../auths/service.js';
import type { OAuthService } from '../oauth/service.js';
import { readAuthOptions } from '../auths/settings.js';
import type { UsersService } from '../users/service.js';
import { CHANGELOG } from './changelog.js';
import { type SystemOptions, readSystemOptions } from './settings.js';

/** The keys `/api/config` reports, read in one go (main.py get_app_config). */
const CONFIG_KEYS = [
  'oauth.enable',
  'oauth.auto_redirect',
  'ldap.enable',
  'ui.enable_signup',
  'ui.enable_login_form',
  'auth.enable_api_keys',
  'ui.enable_password_change_form',
  'direct.enable',
  'folders.enable',
  'folders.max_file_count',
  'channels.enable',
  'calendar.enable',
  'automations.enable',
  'notes.enable',
  'chat.context_compaction.enable',
  'web.search.enable',
  'web.search.confirmation.enable',
  'web.search.confirmation.content',
  'code_execution.enable',
  'code_interpreter.enable',
  'image_generation.enable',
  'task.autocomplete.enable',
  'ui.enable_community_sharing',
  'ui.enable_message_rating',
  'ui.enable_user_webhooks',
  'users.enable_status',
  'google_drive.enable',
  'onedrive.enable',
  'memories.enable',
  'ui.default_models',
  'ui.default_pinned_models',
  'ui.prompt_suggestions',
  'code_execution.engine',
  'code_interpreter.engine',
  'audio.tts.engine',
  'audio.tts.voice',
  'audio.tts.split_on',
  'audio.stt.engine',
  'rag.file.max_size',
  'rag.file.max_count',
  'file.image_compression_width',
  'file.image_compression_height',
  'ui.pending_user_overlay_title',
  'ui.pending_user_overlay_content',
  'ui.watermark',
] as const;

type ConfigKey = (typeof CONFIG_KEYS)[number];

/** The services the app-level routes consult. */
export interface SystemServices {
  users: UsersService;
  auths: AuthsService;
  oauth: OAuthService;
  access: AccessService;
  realtime: Realtime;
  python: PythonHost;
}

/** How long the readiness check waits for Redis to answer PING. */
const READINESS_REDIS_TIMEOUT_MS = 2_000;

/**
 * The app-level routes: health probes, version, changelog, the frontend's
 * bootstrap config, the PWA manifest and the OpenSearch description.
 */
export class SystemService {
  readonly options: SystemOptions;
  private readonly trustedHeader: boolean;

  constructor(
    private readonly core: Core,
    private readonly services: SystemServices,
  ) {
    this.options = readSystemOptions(core.env.raw, core.env.webuiName);
    this.trustedHeader = Boolean(readAuthOptions(core.env.raw).trustedEmailHeader);
  }

  version() {
    return { version: this.core.env.version, deployment_id: this.options.deploymentId };
  }

  /** Parley never asks the network for releases, so the latest version is the running one. */
  versionUpdates() {
    return { current: this.core.env.version, latest: this.core.env.version };
  }

  changelog() {
    return CHANGELOG;
  }

  /** Throws when the database does not answer. */
  async pingDatabase(): Promise<void> {
    await sql`SELECT 1`.execute(this.core.db);
  }

  /**
   * `/ready`: 503 with the reason while this instance cannot serve (the reference's check of the
   * database and Redis, plus the plugin host). `/health` stays a liveness answer that costs nothing.
   */
  async readiness(): Promise<{ status: true }> {
    try {
      await this.pingDatabase();
    } catch (error) {
      this.core.log.warn({ err: error }, 'readiness check: database ping failed');
      throw new HttpError(503, 'Database not ready');
    }
    const trouble = (await this.core.changes.redisTrouble(READINESS_REDIS_TIMEOUT_MS)) ?? this.services.python.trouble();
    if (trouble) {
      this.core.log.warn({ reason: trouble }, 'readiness check failed');
      throw new HttpError(503, trouble);
    }
    return { status: true };
  }

  /** Models in use are reported by the realtime layer; until it exists none are. */
  async usage(user: UserRecord) {
    if (!this.options.enablePublicActiveUsersCount && !isAdmin(user)) {
      throw new HttpError(403, 'Access denied. Only administrators can view usage statistics.');
    }
    return { model_ids: this.services.realtime.modelsInUse(), user_count: await this.services.users.activeCount() };
  }

  /**
   * Who `/api/config` answers for. The route decodes the credential itself: none
   * is the public view; a token that does not decode (or an unknown API key) is
   * refused; a decodable token whose user is gone is the public view again.
   */
  async configUser(credential: string | null): Promise<UserRecord | null> {
    if (!credential) return null;
    if (credential.startsWith('sk-')) {
      const user = await this.services.users.byApiKey(credential);
      if (!user) throw new HttpError(401, 'Invalid token');
      // Where keys are off or restricted the key is refused here too, as on every other route.
      await this.services.auths.checkApiKeyUse(user, '/api/config');
      return user;
    }
    const claims = await this.core.tokens.verify(credential);
    if (!claims) throw new HttpError(401, 'Invalid token');
    return this.services.users.byId(claims.id);
  }

  async appConfig(user: UserRecord | null): Promise<Record<string, unknown>> {
    const o = this.options;
    const get = (key: ConfigKey) => this.core.settings.get<unknown>(key) ?? null;
    const onboarding = user === null && (await this.services.users.count()) === 0;
    const signedIn = user !== null;
    const member = user !== null && (user.role === 'admin' || user.role === 'user');

    const features: Record<string, unknown> = {
      auth: this.core.env.webuiAuth,
      auth_trusted_header: this.trustedHeader,
      enable_signup_password_confirmation: o.enableSignupPasswordConfirmation,
      enable_ldap: get('ldap.enable'),
      enable_signup: get('ui.enable_signup'),
      enable_login_form: get('ui.enable_login_form'),
      enable_websocket: o.enableWebsocket,
    };
    if (signedIn) {
      Object.assign(features, {
        enable_api_keys: get('auth.enable_api_keys'),
        enable_password_change_form: get('ui.enable_password_change_form'),
        enable_version_update_check: o.enableVersionUpdateCheck,
        enable_pyodide_file_persistence: o.enablePyodideFilePersistence,
        enable_public_active_users_count: o.enablePublicActiveUsersCount,
        enable_easter_eggs: o.enableEasterEggs,
        enable_direct_connections: get('direct.enable'),
        enable_plugins: o.enablePlugins,
        enable_folders: get('folders.enable'),
        folder_max_file_count: get('folders.max_file_count'),
        enable_channels: get('channels.enable'),
        enable_calendar: get('calendar.enable'),
        enable_automations: get('automations.enable'),
        enable_notes: get('notes.enable'),
        enable_context_compaction: get('chat.context_compaction.enable'),
        enable_web_search: get('web.search.enable'),
        enable_web_search_confirmation: get('web.search.confirmation.enable'),
        web_search_confirmation_content: get('web.search.confirmation.content'),
        enable_code_execution: get('code_execution.enable'),
        enable_code_interpreter: get('code_interpreter.enable'),
        enable_image_generation: get('image_generation.enable'),
        enable_autocomplete_generation: get('task.autocomplete.enable'),
        enable_community_sharing: get('ui.enable_community_sharing'),
        enable_message_rating: get('ui.enable_message_rating'),
        enable_user_webhooks: get('ui.enable_user_webhooks'),
        enable_user_status: get('users.enable_status'),
        enable_admin_export: o.enableAdminExport,
        enable_admin_chat_access: o.enableAdminChatAccess,
        enable_admin_analytics: o.enableAdminAnalytics,
        enable_google_drive_integration: get('google_drive.enable'),
        enable_onedrive_integration: get('onedrive.enable'),
        enable_memories: get('memories.enable'),
        ...(get('onedrive.enable')
          ? { enable_onedrive_personal: o.enableOnedrivePersonal, enable_onedrive_business: o.enableOnedriveBusiness }
          : {}),
      });
    }

    const pendingUi = {
      pending_user_overlay_title: get('ui.pending_user_overlay_title'),
      pending_user_overlay_content: get('ui.pending_user_overlay_content'),
    };

    return {
      ...(onboarding ? { onboarding: true } : {}),
      status: true,
      name: o.displayName,
      version: this.core.env.version,
      default_locale: o.defaultLocale,
      oauth: {
        providers: this.services.oauth.providerLabels(),
        auto_redirect: get('oauth.auto_redirect'),
      },
      features,
      ...(member
        ? {
            default_models: get('ui.default_models'),
            default_pinned_models: get('ui.default_pinned_models'),
            default_prompt_suggestions: get('ui.prompt_suggestions'),
            code: { engine: get('code_execution.engine'), interpreter_engine: get('code_interpreter.engine') },
            audio: {
              tts: { engine: get('audio.tts.engine'), voice: get('audio.tts.voice'), split_on: get('audio.tts.split_on') },
              stt: { engine: get('audio.stt.engine') },
            },
            file: {
              max_size: get('rag.file.max_size'),
              max_count: get('rag.file.max_count'),
              image_compression: { width: get('file.image_compression_width'), height: get('file.image_compression_height') },
            },
            permissions: await this.services.access.permissionsOf(user),
            google_drive: o.googleDrive,
            onedrive: o.onedrive,
            ui: { ...pendingUi, response_watermark: get('ui.watermark'), iframe_csp: o.iframeCsp },
            license_metadata: null,
          }
        : user?.role === 'pending'
          ? { ui: pendingUi }
          : {}),
    };
  }

  manifest() {
    const name = this.options.displayName;
    const icon = (purpose: string) => ({ src: '/static/logo.png', type: 'image/png', sizes: '500x500', purpose });
    return {
      name,
      short_name: name,
      description: `${name} is an open, extensible, user-friendly interface for AI that adapts to your workflow.`,
      start_url: '/',
      display: 'standalone',
      background_color: '#343541',
      icons: [icon('any'), icon('maskable')],
      share_target: { action: '/', method: 'GET', params: { text: 'shared' } },
    };
  }

  opensearch(): string {
    const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
    const name = escape(this.options.displayName);
    const url = escape(String(this.core.settings.get<string>('webui.url') ?? ''));
    return `<OpenSearchDescription xmlns="http://a9.com/-/spec/opensearch/1.1/" xmlns:moz="http://www.mozilla.org/2006/browser/search/">
<ShortName>${name}</ShortName>
<Description>Search ${name}</Description>
<InputEncoding>UTF-8</InputEncoding>
<Image width="16" height="16" type="image/x-icon">${url}/static/favicon.png</Image>
<Url type="text/html" method="get" template="${url}/?q={searchTerms}"/>
<moz:SearchForm>${url}</moz:SearchForm>
</OpenSearchDescription>
`;
  }
}
