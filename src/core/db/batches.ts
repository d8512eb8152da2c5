/**
 * Ids bound in one `in (...)` list: under SQLite's 32,766 and PostgreSQL's 65,535
 * bound parameters, with room for the rest of the statement.
 */
export const IDS_PER_QUERY = 5000;

/** `items` in slices of at most `size`, in order. */
export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
