/** JSON columns are TEXT on both dialects; these are the only encoders the stores use. */
export function toJson(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

export function fromJson<T>(text: string | null | undefined, fallback: T): T {
  if (text === null || text === undefined || text === '') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** SQLite returns 0/1 where PostgreSQL returns booleans. */
export function toBool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't';
}
