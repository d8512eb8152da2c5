import type { ProfileImagePolicy } from './settings.js';

/**
 * Profile image URLs: what may be stored (the reference's validate_profile_image_url)
 * and what `GET /users/{id}/profile/image` answers for a stored value.
 */

/** The only relative paths the reference itself assigns as images. */
const SAFE_STATIC_PATHS = new Set(['/user.png', '/favicon.png', '/static/favicon.png']);
const PROFILE_IMAGE_ROUTE = /^\/api\/v1\/users\/[^/?#]+\/profile\/image$/;

export const INVALID_PROFILE_IMAGE_URL =
  'Invalid profile image URL: must be a known internal path, an HTTP(S) URL with a host, or a data:image URI (png/jpeg/gif/webp).';

/** Why a URL may not be stored as a profile image, or null when it may. */
export function profileImageUrlProblem(url: string, policy: ProfileImagePolicy): string | null {
  if (!url || SAFE_STATIC_PATHS.has(url) || PROFILE_IMAGE_ROUTE.test(url)) return null;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1].toLowerCase();
  if (scheme === 'http' || scheme === 'https') {
    let host = '';
    try {
      host = new URL(url).hostname;
    } catch {
      host = '';
    }
    return host ? null : 'Invalid profile image URL: HTTP(S) URLs must include a host.';
  }
  const subtypes = [...policy.allowedMimeTypes].map((type) => type.split('/').pop()!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  if (subtypes.length > 0 && new RegExp(`^data:image/(${subtypes.join('|')});base64,`, 'i').test(url)) {
    if (policy.maxDataUriSize !== null && url.length > policy.maxDataUriSize) {
      return `Invalid profile image URL: data URI exceeds the ${policy.maxDataUriSize}-byte limit.`;
    }
    return null;
  }
  return INVALID_PROFILE_IMAGE_URL;
}

/** A neutral 96×96 avatar, served when a user has no image of their own (the reference's static user.png). */
export const DEFAULT_AVATAR_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAGAAAABgCAIAAABt+uBvAAABJUlEQVR42u3awQ3CMAwFUO8/AzcGYCrEgSW4cyiijdPYfdKf4MlREtvxfL1lI4EAECBAgAABAgRIAAECBAgQIECABFBdoNv9AehbZDsXBfrpsohUVNE5yygK6ZxiFIVoTmECtAzQQJ2ZRlFUZ5pR1NWZYwQI0OJAqToTjAABAgSoL9AEnWwjFQQIECBAVwbyFwMESEdRT9pUA9AlgExWzeZtd9gPsmFmRxGQIwbo/4vsQkAeij6r+kF60jOApo1VU5mih06eUbTRSTKKTjoZRtFMZ7hR9NMZaxQtdQYaRVedUUaA8oGW1RliFL11jhsBygQqoXPQCFAaUCGdI0aAAJ0CVE5ntxEgQPOBiursMwIECBAgQIAAAWqhs8NIBQECBAjQwkAfAYCymI5owEgAAAAASUVORK5CYII=',
  'base64',
);

export type ProfileImage =
  | { kind: 'redirect'; location: string }
  | { kind: 'image'; contentType: string; body: Buffer; uploaded: boolean };

const DEFAULT_IMAGE: ProfileImage = { kind: 'image', contentType: 'image/png', body: DEFAULT_AVATAR_PNG, uploaded: false };

/**
 * What the image route answers for a stored URL: external images are redirected to
 * (unless forwarding is off, which keeps clients from contacting other origins),
 * uploaded data URIs are decoded, and everything else is the default avatar.
 */
export function resolveProfileImage(url: string | null, policy: ProfileImagePolicy): ProfileImage {
  if (!url) return DEFAULT_IMAGE;
  if (url.startsWith('http')) return policy.forwardUrls ? { kind: 'redirect', location: url } : DEFAULT_IMAGE;
  if (url.startsWith('data:image')) {
    const comma = url.indexOf(',');
    if (comma < 0) return DEFAULT_IMAGE;
    const contentType = url.slice('data:'.length, comma).split(';')[0].toLowerCase();
    if (!policy.allowedMimeTypes.has(contentType)) return DEFAULT_IMAGE;
    const body = Buffer.from(url.slice(comma + 1), 'base64');
    return body.length > 0 ? { kind: 'image', contentType, body, uploaded: true } : DEFAULT_IMAGE;
  }
  return DEFAULT_IMAGE;
}
