import bcrypt from 'bcrypt';

/**
 * bcrypt, as the reference stores passwords, so hashes from an existing Open WebUI
 * database verify. bcrypt reads at most 72 bytes; longer passwords are refused
 * rather than silently truncated. Argon2 hashes (the reference's
 * `PASSWORD_HASH_ALGORITHM=argon2`, carried over by `parley import-openwebui`)
 * verify too, as the reference tells them apart by their `$argon2` prefix.
 */
const ROUNDS = 12;

export const passwordTooLong = (password: string) => Buffer.byteLength(password, 'utf8') > 72;

export function hashPassword(password: string): Promise<string> {
  return bcrypt.hash(password, ROUNDS);
}

export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  if (!hash) return false;
  try {
    if (hash.startsWith('$argon2')) {
      // Loaded at the first argon2 sign-in: most installs never hold such a hash.
      const argon2 = await import('argon2');
      return await argon2.verify(hash, password);
    }
    if (passwordTooLong(password)) return false;
    return await bcrypt.compare(password, hash);
  } catch {
    return false;
  }
}
