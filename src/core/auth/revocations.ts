import type { ChangeFeed } from '../changes.js';
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';

/** The expiry kept for a token that has none: the year 9999. */
const NEVER = 253_402_300_799;

/**
 * Session tokens ended by sign-out before they expire. The reference can only
 * do this with Redis, and then asks Redis on every request; here the list is
 * stored, held in memory by every instance (a lookup per request costs
 * nothing), and re-read on a change notice.
 */
export class RevokedTokens {
  private revoked = new Set<string>();
  /** Per user: tokens issued at or before this time (epoch seconds) are refused (back-channel logout, SCIM de-provisioning). */
  private cutoffs = new Map<string, number>();
  /** Counts revocations made here, so a reload that raced one reads again. */
  private revocations = 0;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly changes: ChangeFeed,
  ) {
    changes.onRemote('revocations', () => {
      this.load().catch(() => undefined);
    });
  }

  /** A reload of the list that has not begun reading yet: requests arriving meanwhile share it. */
  private nextLoad: Promise<void> | null = null;

  has(jti: string): boolean {
    return this.revoked.has(jti);
  }

  /**
   * Whether a token the user was issued at `issuedAt` was ended with all the user's sessions
   * (a token without an issue time is, once any cutoff exists).
   */
  endedWithUser(userId: string, issuedAt: number | undefined): boolean {
    const cutoff = this.cutoffs.get(userId);
    return cutoff !== undefined && (issuedAt === undefined || issuedAt <= cutoff);
  }

  /**
   * Whether the list in memory may miss a sign-out made on another instance: Redis is configured
   * but its notices are not heard. A session is then checked against the database (fail closed).
   */
  uncertain(): boolean {
    return this.changes.deaf;
  }

  /** When `uncertain`: reads the list again, with every revocation committed before this call. */
  async refresh(): Promise<void> {
    if (!this.uncertain()) return;
    this.nextLoad ??= Promise.resolve().then(() => {
      this.nextLoad = null;
      return this.load();
    });
    await this.nextLoad;
  }

  /** Reads the tokens that are revoked and not yet expired (the others are rejected anyway). */
  async load(): Promise<void> {
    for (;;) {
      const revocations = this.revocations;
      const rows = await this.db.selectFrom('revoked_token').select('jti').where('expires_at', '>', this.clock.now()).execute();
      const cutoffs = await this.db.selectFrom('user_session_cutoff').selectAll().execute();
      if (revocations !== this.revocations) continue;
      this.revoked = new Set(rows.map((row) => row.jti));
      this.cutoffs = new Map(cutoffs.map((row) => [row.user_id, Number(row.revoked_at)]));
      return;
    }
  }

  /**
   * Ends a session: its token is refused from now on, here and, once told, on
   * every instance. A token without expiry stays revoked for good.
   */
  async revoke(jti: string, expiresAt: number | null): Promise<void> {
    const now = this.clock.now();
    if (expiresAt !== null && expiresAt <= now) return;
    await this.db.insertInto('revoked_token').values({ jti, expires_at: expiresAt ?? NEVER }).onConflict((oc) => oc.column('jti').doNothing()).execute();
    await this.db.deleteFrom('revoked_token').where('expires_at', '<=', now).execute();
    this.revocations += 1;
    this.revoked.add(jti);
    this.changes.announce('revocations');
  }

  /** Ends every session of a user: tokens issued until now are refused, here and, once told, everywhere. */
  async revokeUserSessions(userId: string): Promise<void> {
    const now = this.clock.now();
    await this.db
      .insertInto('user_session_cutoff')
      .values({ user_id: userId, revoked_at: now })
      .onConflict((oc) => oc.column('user_id').doUpdateSet({ revoked_at: now }))
      .execute();
    this.revocations += 1;
    this.cutoffs.set(userId, now);
    this.changes.announce('revocations');
  }
}
