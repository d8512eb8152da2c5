import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

type Json = Record<string, unknown>;

/**
 * Valves at rest (the reference's utils/valves.py). With ENABLE_VALVE_ENCRYPTION
 * each stored valves dict is a Fernet token of its JSON, keyed from
 * WEBUI_SECRET_KEY, so the two servers can read each other's databases. Without
 * it dicts are stored as they are; plain dicts are always readable (data saved
 * before the switch was turned on).
 */
export class ValvesCipher {
  private readonly signingKey: Buffer;
  private readonly encryptionKey: Buffer;

  constructor(
    secret: string,
    private readonly enabled: boolean,
    private readonly onUnreadable: (reason: string) => void = () => {},
  ) {
    const key = fernetKey(secret);
    this.signingKey = key.subarray(0, 16);
    this.encryptionKey = key.subarray(16, 32);
  }

  /** What to store for a valves dict: the dict itself, or its token when encryption is on. */
  seal(valves: Json): Json | string {
    return this.enabled ? this.encrypt(JSON.stringify(valves)) : valves;
  }

  /**
   * The dict a stored value holds; null when nothing is stored. An unreadable
   * token (another secret key, damaged data) reads as `{}` (tool defaults), as
   * in the reference, with a warning.
   */
  open(stored: unknown): Json | null {
    if (stored === null || stored === undefined) return null;
    if (isObject(stored)) return stored;
    if (typeof stored !== 'string' || stored === '') return {};
    const text = this.decrypt(stored);
    if (text === null) {
      this.onUnreadable('invalid token');
      return {};
    }
    try {
      const value: unknown = JSON.parse(text);
      return isObject(value) ? value : {};
    } catch {
      this.onUnreadable('invalid JSON');
      return {};
    }
  }

  private encrypt(plaintext: string): string {
    const iv = randomBytes(16);
    const cipher = createCipheriv('aes-128-cbc', this.encryptionKey, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const timestamp = Buffer.alloc(8);
    timestamp.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 1000)));
    const body = Buffer.concat([Buffer.from([0x80]), timestamp, iv, ciphertext]);
    const mac = createHmac('sha256', this.signingKey).update(body).digest();
    return Buffer.concat([body, mac]).toString('base64url') + padding(body.length + mac.length);
  }

  /** The token's plaintext, or null when it is not a valid token under this key (the TTL is not checked). */
  private decrypt(token: string): string | null {
    const data = Buffer.from(token.replace(/=+$/, ''), 'base64url');
    if (data.length < 1 + 8 + 16 + 16 + 32 || data[0] !== 0x80 || (data.length - 57) % 16 !== 0) return null;
    const body = data.subarray(0, data.length - 32);
    const mac = createHmac('sha256', this.signingKey).update(body).digest();
    if (!timingSafeEqual(mac, data.subarray(data.length - 32))) return null;
    try {
      const decipher = createDecipheriv('aes-128-cbc', this.encryptionKey, body.subarray(9, 25));
      return Buffer.concat([decipher.update(body.subarray(25)), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Python's urlsafe_b64encode keeps the `=` padding; Node's base64url drops it. */
const padding = (bytes: number) => '='.repeat((3 - (bytes % 3)) % 3);

/** A 44-character secret is used as the Fernet key itself; any other is hashed into one. */
function fernetKey(secret: string): Buffer {
  if (secret.length === 44) {
    const key = Buffer.from(secret, 'base64url');
    if (key.length === 32) return key;
  }
  return createHash('sha256').update(secret, 'utf8').digest();
}
