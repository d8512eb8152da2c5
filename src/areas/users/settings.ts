import { bool } from '../../config/env.js';
import { checks, defineSetting, parsers } from '../../config/settings.js';

/** Whether users may set a status (emoji, message); the admin config's ENABLE_USER_STATUS. */
export const ENABLE_USER_STATUS = defineSetting({
  key: 'users.enable_status',
  env: 'ENABLE_USER_STATUS',
  default: true,
  parse: parsers.bool,
  check: checks.bool,
});

/**
 * Process-level rules for profile images (environment only, as in the reference):
 * which data-URI image types are served and stored, the largest data URI accepted,
 * and whether http(s) images are answered with a redirect or with the default avatar.
 */
export interface ProfileImagePolicy {
  allowedMimeTypes: Set<string>;
  maxDataUriSize: number | null;
  forwardUrls: boolean;
}

export function profileImagePolicy(raw: Record<string, string | undefined>): ProfileImagePolicy {
  const types = (raw.PROFILE_IMAGE_ALLOWED_MIME_TYPES ?? 'image/png,image/jpeg,image/gif,image/webp')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);
  const maxSize = Number.parseInt(raw.PROFILE_IMAGE_MAX_DATA_URI_SIZE?.trim() ?? '', 10);
  return {
    allowedMimeTypes: new Set(types),
    maxDataUriSize: Number.isFinite(maxSize) && maxSize > 0 ? maxSize : null,
    forwardUrls: bool(raw.ENABLE_PROFILE_IMAGE_URL_FORWARDING, true),
  };
}
