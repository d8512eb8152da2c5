import { hostAllowed } from '../../http/url-guard.js';

/** One search result (retrieval/web/main.py SearchResult). */
export interface WebSearchResult {
  link: string;
  title: string | null;
  snippet: string | null;
}

export type Json = Record<string, unknown>;

/** The objects of a JSON list (provider answers are read defensively). */
export const objects = (value: unknown): Json[] =>
  Array.isArray(value) ? value.filter((item): item is Json => item !== null && typeof item === 'object' && !Array.isArray(item)) : [];

export const field = (value: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((at, key) => (at !== null && typeof at === 'object' ? (at as Json)[key] : undefined), value);

export const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** Sorts by a numeric field, as the reference's `sorted(..., key=...)`. */
export const sortedBy = (items: Json[], key: string, descending = false) =>
  [...items].sort((a, b) => ((Number(a[key]) || 0) - (Number(b[key]) || 0)) * (descending ? -1 : 1));

/**
 * get_filtered_results: keeps the results whose host passes WEB_SEARCH_DOMAIN_FILTER_LIST
 * (`!host` blocks, plain entries allow; subdomains match). The reference also
 * matches the host's resolved addresses; Parley matches the host name only.
 */
export function filterByDomain(items: Json[], filterList: readonly string[]): Json[] {
  if (filterList.length === 0) return items;
  return items.filter((item) => {
    const url = str(item.url) || str(item.link) || str(item.href) || '';
    try {
      const { protocol, hostname } = new URL(url);
      return (protocol === 'http:' || protocol === 'https:') && hostname !== '' && hostAllowed(hostname, filterList);
    } catch {
      return false;
    }
  });
}

export const result = (link: unknown, title: unknown, snippet: unknown): WebSearchResult => ({ link: str(link) ?? '', title: str(title), snippet: str(snippet) });
