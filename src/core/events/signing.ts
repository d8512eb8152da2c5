import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signatures (events.md §9a): `webhook-signature` holds
 * space-separated `v1,<base64 HMAC-SHA256>` entries over `id.timestamp.body`,
 * keyed with the base64-decoded part of a `whsec_` secret. During a secret
 * rotation both the new and the previous secret sign, so receivers can switch
 * without losing a delivery.
 */
const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

const keys = new Map<string, Buffer>();

function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size > 1000) keys.clear();
    key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
    keys.set(secret, key);
  }
  return key;
}

export function signatureOf(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const digest = createHmac('sha256', keyOf(secret)).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${digest}`;
}

/** The three Standard Webhooks headers for one attempt. */
export function signedHeaders(secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signatureOf(s, messageId, timestampSeconds, body)).join(' '),
  };
}
