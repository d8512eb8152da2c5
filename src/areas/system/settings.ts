import { bool } from '../../config/env.js';
import { checks, defineSetting, parsers } from '../../config/settings.js';

/**
 * Settings `GET /api/config` reports that no other area owns yet (keys and
 * environment variables as the reference's config.py DEFAULT_CONFIG). The areas
 * that will act on them (retrieval, images, tasks, chats) take them over
 * when they are written.
 */
const nullableIntParse = (raw: string): number | null => {
  const n = Number.parseInt(raw, 10);
  return Number.isFinite(n) ? n : null;
};

const flag = (key: string, env: string, fallback: boolean) =>
  defineSetting({ key, env, default: fallback, parse: parsers.bool, check: checks.bool });

export const PASSWORD_CHANGE_FORM = flag('ui.enable_password_change_form', 'ENABLE_PASSWORD_CHANGE_FORM', true);
export const CONTEXT_COMPACTION = flag('chat.context_compaction.enable', 'ENABLE_CONTEXT_COMPACTION', false);
export const AUTOCOMPLETE_GENERATION = flag('task.autocomplete.enable', 'ENABLE_AUTOCOMPLETE_GENERATION', false);
export const GOOGLE_DRIVE = flag('google_drive.enable', 'ENABLE_GOOGLE_DRIVE_INTEGRATION', false);
export const ONEDRIVE = flag('onedrive.enable', 'ENABLE_ONEDRIVE_INTEGRATION', false);

const optionalInt = (key: string, env: string) =>
  defineSetting<number | null>({ key, env, default: null, parse: nullableIntParse, check: checks.nullableInt });

export const IMAGE_COMPRESSION_WIDTH = optionalInt('file.image_compression_width', 'FILE_IMAGE_COMPRESSION_WIDTH');
export const IMAGE_COMPRESSION_HEIGHT = optionalInt('file.image_compression_height', 'FILE_IMAGE_COMPRESSION_HEIGHT');

/**
 * Process-level switches `/api/config` and the system routes report, read once
 * from the environment (the reference's env.py constants, never changed at run time).
 */
export interface SystemOptions {
  /** Shown by the frontend; a custom name carries the product name, as the reference does. */
  displayName: string;
  deploymentId: string;
  defaultLocale: string;
  enableWebsocket: boolean;
  enableSignupPasswordConfirmation: boolean;
  enableVersionUpdateCheck: boolean;
  enablePyodideFilePersistence: boolean;
  enablePublicActiveUsersCount: boolean;
  enableEasterEggs: boolean;
  enablePlugins: boolean;
  enableAdminExport: boolean;
  enableAdminChatAccess: boolean;
  enableAdminAnalytics: boolean;
  iframeCsp: string;
  googleDrive: { client_id: string; api_key: string };
  onedrive: { client_id_personal: string; client_id_business: string; sharepoint_url: string; sharepoint_tenant_id: string };
  enableOnedrivePersonal: boolean;
  enableOnedriveBusiness: boolean;
}

export function readSystemOptions(raw: Record<string, string | undefined>, webuiName: string): SystemOptions {
  const onedriveClientId = raw.ONEDRIVE_CLIENT_ID ?? '';
  const onedrive = {
    client_id_personal: raw.ONEDRIVE_CLIENT_ID_PERSONAL ?? onedriveClientId,
    client_id_business: raw.ONEDRIVE_CLIENT_ID_BUSINESS ?? onedriveClientId,
    sharepoint_url: raw.ONEDRIVE_SHAREPOINT_URL ?? '',
    sharepoint_tenant_id: raw.ONEDRIVE_SHAREPOINT_TENANT_ID ?? '',
  };
  return {
    displayName: webuiName === 'Open WebUI' ? webuiName : `${webuiName} (Open WebUI)`,
    deploymentId: raw.DEPLOYMENT_ID ?? '',
    defaultLocale: raw.DEFAULT_LOCALE ?? '',
    enableWebsocket: bool(raw.ENABLE_WEBSOCKET_SUPPORT, true),
    enableSignupPasswordConfirmation: bool(raw.ENABLE_SIGNUP_PASSWORD_CONFIRMATION, false),
    // Parley never asks the network for releases; OFFLINE_MODE also hides the check, as in the reference.
    enableVersionUpdateCheck: bool(raw.ENABLE_VERSION_UPDATE_CHECK, true) && !bool(raw.OFFLINE_MODE, false),
    enablePyodideFilePersistence: bool(raw.ENABLE_PYODIDE_FILE_PERSISTENCE, false),
    enablePublicActiveUsersCount: bool(raw.ENABLE_PUBLIC_ACTIVE_USERS_COUNT, false),
    enableEasterEggs: bool(raw.ENABLE_EASTER_EGGS, true),
    enablePlugins: bool(raw.ENABLE_PLUGINS, true),
    enableAdminExport: bool(raw.ENABLE_ADMIN_EXPORT, true),
    enableAdminChatAccess: bool(raw.ENABLE_ADMIN_CHAT_ACCESS, true),
    enableAdminAnalytics: bool(raw.ENABLE_ADMIN_ANALYTICS, true),
    iframeCsp: raw.IFRAME_CSP ?? '',
    googleDrive: { client_id: raw.GOOGLE_DRIVE_CLIENT_ID ?? '', api_key: raw.GOOGLE_DRIVE_API_KEY ?? '' },
    onedrive,
    enableOnedrivePersonal: bool(raw.ENABLE_ONEDRIVE_PERSONAL, true) && Boolean(onedrive.client_id_personal),
    enableOnedriveBusiness: bool(raw.ENABLE_ONEDRIVE_BUSINESS, true) && Boolean(onedrive.client_id_business),
  };
}
