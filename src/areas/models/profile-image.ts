import path from 'node:path/posix';
import type { ProfileImagePolicy } from '../users/settings.js';

/**
 * What `GET /api/v1/models/model/profile/image` answers for a stored image URL
 * (routers/models.get_model_profile_image): external images are redirected to
 * (unless forwarding is off), uploaded raster data URIs are served, same-origin
 * `/static/...` paths are redirected to, and everything else falls back to the
 * favicon.
 */
export type ModelImage = { kind: 'redirect'; location: string } | { kind: 'image'; contentType: string; body: Buffer; etag: string | null };

export const FALLBACK_IMAGE = '/static/favicon.png';

/** A same-origin static path safe to redirect to, or null (traversal, encodings, other places). */
export function safeStaticPath(url: string): string | null {
  let target = url.split('?')[0].split('#')[0].trim();
  for (let i = 0; i < 2; i++) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(target);
    } catch {
      return null;
    }
    if (decoded === target) break;
    target = decoded;
  }
  try {
    if (decodeURIComponent(target) !== target) return null;
  } catch {
    return null;
  }
  if (target.includes('\0') || target.includes('\\') || !target.startsWith('/')) return null;
  const normalized = path.normalize(target);
  if (normalized === '/' || normalized === '.') return null;
  if (normalized === '/static') return '/static/';
  return normalized.startsWith('/static/') ? normalized : null;
}

export function resolveModelImage(url: string | null | undefined, updatedAt: number | null, policy: ProfileImagePolicy): ModelImage {
  const fallback: ModelImage = { kind: 'redirect', location: FALLBACK_IMAGE };
  if (!url) return fallback;
  if (url.startsWith('http')) return policy.forwardUrls ? { kind: 'redirect', location: url } : fallback;
  if (url.startsWith('data:image')) {
    const comma = url.indexOf(',');
    if (comma < 0) return fallback;
    const contentType = url.slice('data:'.length, comma).split(';')[0].toLowerCase();
    if (!policy.allowedMimeTypes.has(contentType)) return fallback;
    return { kind: 'image', contentType, body: Buffer.from(url.slice(comma + 1), 'base64'), etag: updatedAt ? `"${updatedAt}"` : null };
  }
  const safe = safeStaticPath(url);
  return safe ? { kind: 'redirect', location: safe } : fallback;
}
