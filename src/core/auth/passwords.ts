import bcrypt from 'bcrypt';

/**
 * bcrypt, as the reference stores passwords, so hashes from an existing Open WebUI
 * database verify. bcrypt reads at most 72 bytes; longer passwords are refused
 * rather than silently truncated.
 */
const ROUNDS = 12;

export const passwordTooLong = (password: string) => Buffer.byteLength(password, 'utf8') > 72;

export function hashPassword(password: string): Promise<string> {
  return bcrypt.hash(password, ROUNDS);
}

export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  if (!hash || passwordTooLong(password)) return false;
  try {
    return await bcrypt.compare(password, hash);
  } catch {
    return false;
  }
}
