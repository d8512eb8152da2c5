import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Process-level settings: read once from the environment at start-up and never
 * changed through the API. Settings an admin can change at run time live in the
 * persistent config store (`settings.ts`).
 */
export interface Env {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | null;
  redisUrl: string | null;
  secretKey: string;
  webuiAuth: boolean;
  webuiName: string;
  corsAllowOrigin: string[];
  cookieSecure: boolean;
  cookieSameSite: 'lax' | 'strict' | 'none';
  frontendBuildDir: string | null;
  enablePersistentConfig: boolean;
  enablePasswordValidation: boolean;
  passwordValidationPattern: RegExp;
  passwordValidationHint: string;
  bypassAdminAccessControl: boolean;
  logLevel: string;
  version: string;
  /** Python plugin host (tools): interpreter, pool and per-call limits. */
  python: string | null;
  enablePlugins: boolean;
  enablePipInstallFrontmatterRequirements: boolean;
  offlineMode: boolean;
  pipOptions: string[];
  pipPackageIndexOptions: string[];
  /** PLUGIN_POOL_MAX (alias PLUGIN_POOL_SIZE): most workers; PLUGIN_USER_CONCURRENCY: most calls in flight per user. */
  pluginPoolMax: number;
  pluginUserConcurrency: number;
  /** Isolation of plugin workers (docs/plugin-host.md § Isolation). */
  pluginSandbox: 'auto' | 'bwrap' | 'unshare' | 'none';
  pluginUser: string | null;
  pluginGroup: string | null;
  pluginVenvDir: string | null;
  pluginCallTimeoutSeconds: number;
  pluginMemoryLimitMb: number;
  /** Names of variables the process was configured with; used to scrub child environments. */
  raw: Record<string, string | undefined>;
}

export const PARLEY_VERSION = '0.11.0';

export function bool(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  return value.trim().toLowerCase() === 'true';
}

export function int(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number.parseInt(value, 10);
  return Number.isFinite(n) ? n : fallback;
}

function pluginSandbox(value: string | undefined): Env['pluginSandbox'] {
  const mode = (value ?? 'auto').trim().toLowerCase();
  if (mode === 'auto' || mode === 'bwrap' || mode === 'unshare' || mode === 'none') return mode;
  throw new Error(`PLUGIN_SANDBOX must be auto, bwrap, unshare or none, not "${value}"`);
}

/**
 * DATA_DIR and what holds secrets in it are the server user's alone (plugin
 * workers run as another user): made so, and fixed on start for existing installs.
 */
function protectDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const modes: [string, number][] = [
    [dataDir, 0o700],
    [path.join(dataDir, 'uploads'), 0o700],
    [path.join(dataDir, '.webui_secret_key'), 0o600],
    [path.join(dataDir, 'webui.db'), 0o600],
    [path.join(dataDir, 'webui.db-wal'), 0o600],
    [path.join(dataDir, 'webui.db-shm'), 0o600],
  ];
  for (const [target, mode] of modes) {
    if (!existsSync(target)) continue;
    try {
      chmodSync(target, mode);
    } catch (error) {
      // Left readable, it would be open to plugin code: refuse to start rather than run so.
      throw new Error(`Cannot make ${target} private (mode ${mode.toString(8)}): ${(error as Error).message}. Give it to the user Parley runs as.`);
    }
  }
}

/** The secret is generated on first start and kept beside the data, as the reference's start script does. */
function loadSecretKey(dataDir: string, fromEnv: string | undefined): string {
  if (fromEnv) return fromEnv;
  const file = path.join(dataDir, '.webui_secret_key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = randomBytes(32).toString('base64url');
  writeFileSync(file, key, { mode: 0o600 });
  return key;
}

const STRONG_PASSWORD = /^(?=.*[a-z])(?=.*[A-Z])(?=.*\d)(?=.*[^\w\s]).{8,}$/;

export function readEnv(source: Record<string, string | undefined> = process.env): Env {
  const dataDir = path.resolve(source.DATA_DIR ?? './data');
  protectDataDir(dataDir);
  const sameSite = (source.WEBUI_AUTH_COOKIE_SAME_SITE ?? source.WEBUI_SESSION_COOKIE_SAME_SITE ?? 'lax').toLowerCase();
  let pattern = STRONG_PASSWORD;
  if (source.PASSWORD_VALIDATION_REGEX_PATTERN) {
    try {
      pattern = new RegExp(source.PASSWORD_VALIDATION_REGEX_PATTERN);
    } catch {
      pattern = STRONG_PASSWORD;
    }
  }
  return {
    host: source.HOST ?? '0.0.0.0',
    port: int(source.PORT, 8080),
    dataDir,
    databaseUrl: source.DATABASE_URL || null,
    redisUrl: source.REDIS_URL || null,
    secretKey: loadSecretKey(dataDir, source.WEBUI_SECRET_KEY),
    webuiAuth: bool(source.WEBUI_AUTH, true),
    webuiName: source.WEBUI_NAME ?? 'Open WebUI',
    corsAllowOrigin: (source.CORS_ALLOW_ORIGIN ?? '*').split(';').filter(Boolean),
    cookieSecure: bool(source.WEBUI_AUTH_COOKIE_SECURE ?? source.WEBUI_SESSION_COOKIE_SECURE, false),
    cookieSameSite: sameSite === 'strict' || sameSite === 'none' ? sameSite : 'lax',
    frontendBuildDir: source.FRONTEND_BUILD_DIR ? path.resolve(source.FRONTEND_BUILD_DIR) : null,
    enablePersistentConfig: bool(source.ENABLE_PERSISTENT_CONFIG, true),
    enablePasswordValidation: bool(source.ENABLE_PASSWORD_VALIDATION, false),
    passwordValidationPattern: pattern,
    passwordValidationHint: source.PASSWORD_VALIDATION_HINT ?? '',
    bypassAdminAccessControl: bool(source.BYPASS_ADMIN_ACCESS_CONTROL, true),
    logLevel: source.LOG_LEVEL ?? source.GLOBAL_LOG_LEVEL?.toLowerCase() ?? 'info',
    version: PARLEY_VERSION,
    python: source.PYTHON || null,
    enablePlugins: bool(source.ENABLE_PLUGINS, true),
    enablePipInstallFrontmatterRequirements: bool(source.ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS, true),
    offlineMode: bool(source.OFFLINE_MODE, false),
    pipOptions: (source.PIP_OPTIONS ?? '').split(/\s+/).filter(Boolean),
    pipPackageIndexOptions: (source.PIP_PACKAGE_INDEX_OPTIONS ?? '').split(/\s+/).filter(Boolean),
    // PLUGIN_POOL_SIZE: the earlier name of PLUGIN_POOL_MAX.
    pluginPoolMax: int(source.PLUGIN_POOL_MAX ?? source.PLUGIN_POOL_SIZE, 8),
    pluginUserConcurrency: int(source.PLUGIN_USER_CONCURRENCY, 2),
    pluginSandbox: pluginSandbox(source.PLUGIN_SANDBOX),
    pluginUser: source.PLUGIN_USER || null,
    pluginGroup: source.PLUGIN_GROUP || null,
    pluginVenvDir: source.PLUGIN_VENV_DIR ? path.resolve(source.PLUGIN_VENV_DIR) : null,
    pluginCallTimeoutSeconds: int(source.PLUGIN_CALL_TIMEOUT, 60),
    pluginMemoryLimitMb: int(source.PLUGIN_MEMORY_LIMIT_MB, 1024),
    raw: { ...source },
  };
}
