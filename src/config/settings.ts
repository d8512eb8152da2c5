import { isDeepStrictEqual } from 'node:util';
import type { ChangeFeed } from '../core/changes.js';
import { afterCommit, type Db } from '../core/db/database.js';
import { fromJson, toJson } from '../core/db/json.js';

/**
 * The persistent config store: one row per dotted key with a JSON value, seeded
 * from the environment on first start and then owned by the database (the
 * reference's PersistentConfig). Values are cached in memory so reads on hot
 * paths cost nothing; writes go to the database first, then the cache, and
 * other instances re-read on the change notice.
 *
 * Each area declares the keys it reads with `defineSetting`, next to its code.
 */
export interface SettingDefinition<T = unknown> {
  key: string;
  /** Environment variable that seeds the value (the reference's name). */
  env?: string;
  default: T;
  parse?: (raw: string) => T;
  /** Computes the first value from several environment variables (e.g. the USER_PERMISSIONS_* family); wins over `env`. */
  seed?: (env: Record<string, string | undefined>) => T;
  /** The variables `seed` reads, when not just `env` (named when a stored value shadows them). */
  seedFrom?: readonly string[];
  /**
   * The rules of a value, as the route writing the key checks them: an import and the
   * routes that validate through the store are held to them. An error message or null.
   */
  check?: SettingCheck;
}

/** A setting's check; it may read the process environment (e.g. the webhook URL policy) and wait (e.g. on DNS). */
export type SettingCheck = (value: unknown, env: Record<string, string | undefined>) => string | null | Promise<string | null>;

const definitions = new Map<string, SettingDefinition>();

export function defineSetting<T>(definition: SettingDefinition<T>): SettingDefinition<T> {
  definitions.set(definition.key, definition as SettingDefinition);
  return definition;
}

export const parsers = {
  bool: (raw: string) => raw.trim().toLowerCase() === 'true',
  int: (raw: string) => Number.parseInt(raw, 10),
  string: (raw: string) => raw,
  json: (raw: string) => JSON.parse(raw) as unknown,
  list: (raw: string) =>
    raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  /** JSON-valued variables fall back to the default when they do not parse or `accept` refuses them, as the reference logs and moves on. */
  jsonOr:
    <T>(fallback: T, accept: (v: unknown) => boolean) =>
    (raw: string): T => {
      try {
        const value = JSON.parse(raw) as unknown;
        return accept(value) ? (value as T) : fallback;
      } catch {
        return fallback;
      }
    },
};

export const checks = {
  bool: (v: unknown) => (typeof v === 'boolean' ? null : 'must be a boolean'),
  string: (v: unknown) => (typeof v === 'string' ? null : 'must be a string'),
  nullableString: (v: unknown) => (v === null || typeof v === 'string' ? null : 'must be a string or null'),
  int: (v: unknown) => (Number.isInteger(v) ? null : 'must be an integer'),
  nullableInt: (v: unknown) => (v === null || Number.isInteger(v) ? null : 'must be an integer or null'),
  object: (v: unknown) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? null : 'must be an object'),
  list: (v: unknown) => (Array.isArray(v) ? null : 'must be a list'),
  /** An integer in the range a form clamps to; null too when `nullable`. */
  intWithin:
    (min: number, max = Number.MAX_SAFE_INTEGER, nullable = false) =>
    (v: unknown) =>
      (nullable && v === null) || (Number.isInteger(v) && (v as number) >= min && (v as number) <= max)
        ? null
        : `must be an integer ${max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`}${nullable ? ' or null' : ''}`,
};

/** The environment variables that seed a setting. */
function variablesOf(definition: SettingDefinition): readonly string[] {
  return definition.seedFrom ?? (definition.env ? [definition.env] : []);
}

/** A persistent setting whose stored value is used instead of the environment's. */
export interface ShadowedSetting {
  key: string;
  /** The variables that are set (and would give another value). */
  variables: string[];
}

export class SettingsStore {
  private values = new Map<string, unknown>();
  private defaults = new Map<string, unknown>();
  private shadowedAtLoad: ShadowedSetting[] = [];

  /** Counts writes applied here, so a reload that raced one reads again. */
  private writes = 0;

  constructor(
    private readonly db: Db,
    private readonly env: Record<string, string | undefined>,
    private readonly persistent: boolean,
    private readonly changes: ChangeFeed,
  ) {
    changes.onRemote('settings', () => {
      this.reload().catch(() => undefined);
    });
  }

  private defaultOf(definition: SettingDefinition): unknown {
    if (definition.seed) return definition.seed(this.env);
    const raw = definition.env ? this.env[definition.env] : undefined;
    if (raw === undefined || raw === '') return definition.default;
    try {
      return (definition.parse ?? parsers.string)(raw);
    } catch {
      return definition.default;
    }
  }

  /** Seeds keys the database does not hold yet, then loads every row into the cache. */
  async load(now: number): Promise<void> {
    for (const definition of definitions.values()) this.defaults.set(definition.key, this.defaultOf(definition));
    if (!this.persistent) {
      this.values = new Map(this.defaults);
      return;
    }
    const rows = await this.db.selectFrom('config').select(['key', 'value']).execute();
    const stored = new Set(rows.map((r) => r.key));
    const missing = [...this.defaults].filter(([key]) => !stored.has(key));
    if (missing.length > 0) {
      await this.db
        .insertInto('config')
        .values(missing.map(([key, value]) => ({ key, value: toJson(value) ?? 'null', updated_at: now })))
        .onConflict((oc) => oc.column('key').doNothing())
        .execute();
    }
    await this.reload();
    this.shadowedAtLoad = this.findShadowed(new Set(rows.map((r) => r.key)));
  }

  /**
   * Settings whose environment variables are set but whose stored value differs, as found by
   * `load()`: the operator changed the environment after the first start and it has no effect.
   */
  shadowed(): readonly ShadowedSetting[] {
    return this.shadowedAtLoad;
  }

  private findShadowed(stored: Set<string>): ShadowedSetting[] {
    const shadowed: ShadowedSetting[] = [];
    for (const definition of definitions.values()) {
      if (!stored.has(definition.key)) continue;
      const variables = variablesOf(definition).filter((name) => this.env[name] !== undefined && this.env[name] !== '');
      if (variables.length === 0) continue;
      if (!isDeepStrictEqual(this.defaults.get(definition.key), this.values.get(definition.key))) shadowed.push({ key: definition.key, variables });
    }
    return shadowed;
  }

  /** Re-reads the database (another instance may have written). */
  async reload(): Promise<void> {
    if (!this.persistent) return;
    for (;;) {
      const writes = this.writes;
      const rows = await this.db.selectFrom('config').select(['key', 'value']).execute();
      // A write applied meanwhile may be newer than these rows: read again.
      if (writes !== this.writes) continue;
      const values = new Map(this.defaults);
      for (const row of rows) values.set(row.key, fromJson(row.value, null));
      this.values = values;
      return;
    }
  }

  /** A declared setting's value before any write (its environment's or its default), or undefined for an undeclared key. */
  seededValue(key: string): unknown {
    return this.defaults.get(key);
  }

  get<T>(setting: SettingDefinition<T> | string): T {
    const key = typeof setting === 'string' ? setting : setting.key;
    return (this.values.has(key) ? this.values.get(key) : this.defaults.get(key)) as T;
  }

  all(): Record<string, unknown> {
    return Object.fromEntries(this.values);
  }

  namespace(namespace: string): Record<string, unknown> {
    return Object.fromEntries([...this.values].filter(([key]) => key.startsWith(`${namespace}.`)));
  }

  /** Problems with values for known keys, as `key: problem`; unknown keys are accepted as the reference does. */
  async validate(updates: Record<string, unknown>): Promise<string[]> {
    const problems = await Promise.all(
      Object.entries(updates).map(async ([key, value]) => {
        const problem = await definitions.get(key)?.check?.(value, this.env);
        return problem ? `${key}: ${problem}` : null;
      }),
    );
    return problems.filter((problem): problem is string => problem !== null);
  }

  /**
   * An admin's change of several settings: checked against their rules first (`refused(problems)`
   * is thrown when any fails, nothing written), then written with `alongside` (the change's event)
   * in one transaction. If that fails the values are read again, so the ones in memory never run
   * ahead of the database.
   */
  async update(updates: Record<string, unknown>, now: number, options: { refused: (problems: string[]) => Error; alongside?: (trx: Db) => Promise<unknown> }): Promise<void> {
    const problems = await this.validate(updates);
    if (problems.length > 0) throw options.refused(problems);
    try {
      await this.db.transaction().execute(async (trx) => {
        await this.set(updates, now, trx);
        await options.alongside?.(trx);
      });
    } catch (error) {
      await this.reload();
      throw error;
    }
  }

  /**
   * Writes every key in one transaction, or in the caller's: then the values
   * here change at once (so the rest of that transaction reads them) and a
   * caller whose transaction fails must `reload()`. Other instances are told
   * once the write commits.
   */
  async set(updates: Record<string, unknown>, now: number, db: Db = this.db): Promise<void> {
    const entries = Object.entries(updates);
    if (entries.length === 0) return;
    if (this.persistent) {
      const write = async (trx: Db) => {
        for (const [key, value] of entries) {
          const encoded = toJson(value) ?? 'null';
          await trx
            .insertInto('config')
            .values({ key, value: encoded, updated_at: now })
            .onConflict((oc) => oc.column('key').doUpdateSet({ value: encoded, updated_at: now }))
            .execute();
        }
      };
      if (db === this.db) await this.db.transaction().execute(write);
      else await write(db);
    }
    this.writes += 1;
    for (const [key, value] of entries) this.values.set(key, value);
    if (this.persistent) afterCommit(db, () => this.changes.announce('settings'));
  }
}
