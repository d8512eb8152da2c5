import { type UrlPolicy, webFetchPolicyFromEnv } from '../../core/http/url-guard.js';
import { bool, int } from '../../config/env.js';

/** Process settings of the tools area, read once from the environment (names as the reference's where it has them). */
export interface ToolsOptions {
  /** ENABLE_VALVE_ENCRYPTION: valves stored as Fernet tokens (default false). */
  valveEncryption: boolean;
  loadUrl: {
    /** Which addresses `POST /load/url` may fetch from: the reference's web-fetch rules. */
    policy: UrlPolicy;
    /** AIOHTTP_CLIENT_TIMEOUT seconds (Parley bounds the unset case to 30 s). */
    timeoutMs: number;
    /** TOOL_LOAD_URL_MAX_BYTES: the largest tool source accepted (default 2 MiB). */
    maxBytes: number;
  };
}

export function toolsOptionsFromEnv(raw: Record<string, string | undefined>): ToolsOptions {
  const timeoutSeconds = int(raw.AIOHTTP_CLIENT_TIMEOUT, 30);
  return {
    valveEncryption: bool(raw.ENABLE_VALVE_ENCRYPTION, false),
    loadUrl: {
      policy: webFetchPolicyFromEnv(raw),
      timeoutMs: (timeoutSeconds > 0 ? timeoutSeconds : 30) * 1000,
      maxBytes: Math.max(1, int(raw.TOOL_LOAD_URL_MAX_BYTES, 2 * 1024 * 1024)),
    },
  };
}
