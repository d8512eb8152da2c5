import type { LocalStorage } from './local.js';
import { S3Storage, readS3Options } from './s3.js';
import type { Storage } from './storage.js';

/** The storage STORAGE_PROVIDER names: `local` (the default) or `s3`; anything else stops the start. */
export function createStorage(raw: Record<string, string | undefined>, local: LocalStorage): Storage {
  const provider = (raw.STORAGE_PROVIDER ?? 'local').trim().toLowerCase() || 'local';
  if (provider === 'local') return local;
  if (provider === 's3') return new S3Storage(readS3Options(raw), local);
  throw new Error(`STORAGE_PROVIDER=${provider} is not supported (local or s3)`);
}
