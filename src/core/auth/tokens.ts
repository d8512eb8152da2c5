import { randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import type { Clock } from '../clock.js';
import type { RevokedTokens } from './revocations.js';

/** `JWT_EXPIRES_IN` syntax of the reference: '4w', '1h30m', '500ms'; '-1' or '0' means no expiry. */
export function parseDuration(duration: string): number | null {
  if (duration === '-1' || duration === '0') return null;
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
  const matches = [...duration.matchAll(/(-?\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)];
  if (matches.length === 0) throw new Error('Invalid duration string');
  return matches.reduce((total, [, n, unit]) => total + Number(n) * units[unit], 0);
}

export type TokenCheck = { claims: TokenClaims } | { refused: 'invalid' | 'revoked' };

export interface TokenClaims {
  id: string;
  jti?: string;
  iat?: number;
  exp?: number;
}

/** Verified tokens kept so a session's every request does not re-check its signature. */
const VERIFIED_CACHE_SIZE = 10_000;

/** Session tokens: HS256 JWTs carrying the user id, as the reference issues them. */
export class TokenService {
  private readonly key: Uint8Array;
  private readonly verified = new Map<string, TokenClaims>();

  constructor(
    secret: string,
    private readonly clock: Clock,
    private readonly revoked: Pick<RevokedTokens, 'has' | 'endedWithUser' | 'uncertain' | 'refresh'>,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  /** Returns the token and its expiry in epoch seconds (null when it never expires). */
  async issue(userId: string, expiresInSeconds: number | null, nowSeconds: number): Promise<{ token: string; expiresAt: number | null }> {
    const jwt = new SignJWT({ id: userId }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setJti(randomUUID()).setIssuedAt(nowSeconds);
    const expiresAt = expiresInSeconds === null ? null : Math.floor(nowSeconds + expiresInSeconds);
    if (expiresAt !== null) jwt.setExpirationTime(expiresAt);
    return { token: await jwt.sign(this.key), expiresAt };
  }

  /** The claims of a valid token, or null for anything else (bad signature, expired, revoked, malformed). */
  async verify(token: string): Promise<TokenClaims | null> {
    const checked = await this.check(token);
    return 'claims' in checked ? checked.claims : null;
  }

  /** Like `verify`, telling a signed-out session apart (the reference's answer differs for it). */
  async check(token: string): Promise<TokenCheck> {
    const known = this.checkKnown(token);
    if (known) return known;
    const claims = await this.checkSignature(token);
    await this.revoked.refresh();
    return this.judge(claims);
  }

  /**
   * `check` without waiting, for a token whose signature was verified before (most requests);
   * undefined for a token not seen yet. Expiry and sign-out are checked on every use.
   */
  checkKnown(token: string): TokenCheck | undefined {
    const known = this.verified.get(token);
    // Sign-outs elsewhere may be unheard (Redis away): `check` reads them from the database first.
    if (!known || this.revoked.uncertain()) return undefined;
    if (known.exp !== undefined && known.exp <= this.clock.now()) {
      this.verified.delete(token);
      return { refused: 'invalid' };
    }
    return this.judge(known);
  }

  private judge(claims: TokenClaims | null): TokenCheck {
    if (!claims) return { refused: 'invalid' };
    if (claims.jti !== undefined && this.revoked.has(claims.jti)) return { refused: 'revoked' };
    if (this.revoked.endedWithUser(claims.id, claims.iat)) return { refused: 'revoked' };
    return { claims };
  }

  private async checkSignature(token: string): Promise<TokenClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], currentDate: new Date(this.clock.nowMs()) });
      if (typeof payload.id !== 'string') return null;
      const claims = payload as unknown as TokenClaims;
      if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.clear();
      this.verified.set(token, claims);
      return claims;
    } catch {
      return null;
    }
  }
}
