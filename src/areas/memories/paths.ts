import { badRequest } from '../../core/http/errors.js';

/**
 * Memory paths and the lookups over a user's memories (utils/memory.py): a path
 * files a memory under slash-separated topics (`work/projects/parley`); lookups
 * rank memories by how close their path is to the one asked about.
 */
export interface MemoryLike {
  id: string;
  type: string;
  path: string | null;
  content: string;
  updated_at: number;
}

export type MemoryTypeFilter = 'user' | 'context' | 'all';

export const MEMORY_ERROR = {
  EMPTY_CONTENT: 'Memory content cannot be empty',
  INVALID_PATH: 'Invalid memory path',
  PATH_REQUIRED: 'Memory path is required',
  NO_UPDATE: 'No memory update provided',
  NO_OPERATIONS: 'No memory operations provided',
  NONE_FOUND: 'No memories found for user',
} as const;

/** The content trimmed; empty is the reference's 400. */
export function cleanContent(content: string | null | undefined): string {
  const value = (content ?? '').trim();
  if (!value) throw badRequest(MEMORY_ERROR.EMPTY_CONTENT);
  return value;
}

/** The path without outer slashes or repeated ones; null when empty; `.`, `..` or control characters are a 400. */
export function cleanPath(path: string | null | undefined): string | null {
  const value = (path ?? '').trim().replace(/^\/+|\/+$/g, '').replace(/\/+/g, '/');
  if (!value) return null;
  // eslint-disable-next-line no-control-regex
  if (value.split('/').some((part) => part === '.' || part === '..') || /[\u0000-\u001f]/.test(value)) throw badRequest(MEMORY_ERROR.INVALID_PATH);
  return value;
}

/** The text indexed for retrieval: the path on its own line, then the content. */
export const indexedText = (content: string, path: string | null) => (path ? `${path}\n${content}` : content);

/** How a memory reads in the system context. */
export const memoryLabel = (memory: MemoryLike) => (memory.path ? `${memory.path}: ${memory.content}` : memory.content);

const parts = (path: string | null) => (path ?? '').split('/').filter(Boolean);
const parentOf = (path: string | null) => {
  const p = parts(path);
  return p.length > 1 ? p.slice(0, -1).join('/') : null;
};

/** How close a memory's path is to the one looked up (lower is closer); null when unrelated. */
function pathRank(memoryPath: string | null, lookup: string | null): [number, number] | null {
  if (!memoryPath || !lookup) return null;
  if (memoryPath === lookup) return [0, 0];
  if (memoryPath.startsWith(`${lookup}/`)) return [1, parts(memoryPath).length - parts(lookup).length];
  if (lookup.startsWith(`${memoryPath}/`)) return [2, parts(lookup).length - parts(memoryPath).length];
  const parent = parentOf(memoryPath);
  if (parent && parent === parentOf(lookup)) return [3, 0];
  const lookupParts = new Set(parts(lookup));
  const shared = parts(memoryPath).filter((p) => lookupParts.has(p)).length;
  if (shared) return [4, -shared];
  if (parts(memoryPath).at(-1) === parts(lookup).at(-1)) return [5, 0];
  return null;
}

const compareTuples = (a: number[], b: number[]) => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
};

const matchesQuery = (memory: MemoryLike, query: string) => {
  const value = query.trim().toLowerCase();
  return !value || memory.content.toLowerCase().includes(value) || (memory.path ?? '').toLowerCase().includes(value);
};
const ofType = (memory: MemoryLike, type: MemoryTypeFilter) => type === 'all' || memory.type === type;
const clamp = (value: number | undefined, fallback: number, max: number) => Math.max(1, Math.min(value || fallback, max));

/** `POST /search` and the context's neighbourhood: by id, type, path closeness and text; closest path, then latest first. */
export function searchMemories<T extends MemoryLike>(memories: T[], options: { query?: string | null; path?: string | null; memoryId?: string | null; type?: MemoryTypeFilter; limit?: number }): T[] {
  let rows = memories.filter((m) => (!options.memoryId || m.id === options.memoryId) && ofType(m, options.type ?? 'all'));
  const lookup = cleanPath(options.path);
  if (lookup) {
    const basename = (parts(lookup).at(-1) ?? lookup).toLowerCase();
    rows = rows.filter((m) => {
      if (pathRank(m.path, lookup)) return true;
      const haystack = `${m.path ?? ''}\n${m.content}`.toLowerCase();
      return haystack.includes(lookup.toLowerCase()) || haystack.includes(basename);
    });
  }
  if (options.query?.trim()) rows = rows.filter((m) => matchesQuery(m, options.query!));
  const key = (m: T) => [...(pathRank(m.path, lookup) ?? [9, 0]), -m.updated_at];
  return rows.sort((a, b) => compareTuples(key(a), key(b))).slice(0, clamp(options.limit, 20, 100));
}

export interface PathGroup {
  path: string | null;
  type: string;
  count: number;
  updated_at: number;
  children: string[];
}

/** `POST /paths`: memories grouped by path and type, with each path's direct children, latest change first. */
export function listPathGroups(memories: MemoryLike[], options: { query?: string | null; type: MemoryTypeFilter; limit?: number }): { paths: PathGroup[]; count: number } {
  const groups = new Map<string, PathGroup>();
  for (const m of memories) {
    if (!ofType(m, options.type) || !matchesQuery(m, options.query ?? '')) continue;
    const key = JSON.stringify([m.path, m.type]);
    const group = groups.get(key) ?? { path: m.path, type: m.type, count: 0, updated_at: 0, children: [] };
    group.count += 1;
    group.updated_at = Math.max(group.updated_at, m.updated_at);
    groups.set(key, group);
  }
  const paths = [...groups.values()].map((g) => g.path).filter((p): p is string => !!p);
  for (const group of groups.values()) {
    if (!group.path) continue;
    const prefix = `${group.path}/`;
    const children: string[] = [];
    for (const candidate of paths) {
      if (!candidate.startsWith(prefix)) continue;
      const child = `${prefix}${candidate.slice(prefix.length).split('/')[0]}`;
      if (!children.includes(child)) children.push(child);
    }
    group.children = children.slice(0, 20);
  }
  const sorted = [...groups.values()].sort((a, b) => b.updated_at - a.updated_at);
  return { paths: sorted.slice(0, clamp(options.limit, 100, 500)), count: sorted.length };
}

/** `POST /path`: the memories at a path, its stored parents and (optionally) below it, with its children paths. */
export function readPath<T extends MemoryLike>(memories: T[], options: { path: string; type: MemoryTypeFilter; includeChildren: boolean; limit?: number }) {
  const lookup = cleanPath(options.path);
  if (!lookup) throw badRequest(MEMORY_ERROR.PATH_REQUIRED);
  const rows = memories.filter((m) => ofType(m, options.type));
  const stored = new Set(rows.map((m) => m.path).filter(Boolean));
  const lookupParts = parts(lookup);
  const parents = lookupParts
    .slice(1)
    .map((_, i) => lookupParts.slice(0, i + 1).join('/'))
    .filter((p) => stored.has(p));
  const children = [...new Set(rows.filter((m) => m.path?.startsWith(`${lookup}/`)).map((m) => `${lookup}/${m.path!.slice(lookup.length + 1).split('/')[0]}`))].sort();
  const below = (m: T) => !!m.path && m.path.startsWith(`${lookup}/`);
  const selected = rows.filter((m) => m.path === lookup || (m.path !== null && parents.includes(m.path)) || (options.includeChildren && below(m)));
  const key = (m: T) => (m.path === lookup ? [0, 0, -m.updated_at] : below(m) ? [1, parts(m.path).length, -m.updated_at] : [2, -parts(m.path).length, -m.updated_at]);
  return {
    path: lookup,
    parents,
    children: children.slice(0, 50),
    memories: selected.sort((a, b) => compareTuples(key(a), key(b))).slice(0, clamp(options.limit, 50, 100)),
  };
}

/** Paths of the user's memories the text mentions (whole path, last part, or a part of three letters or more). */
export function pathHints(query: string, memories: MemoryLike[], limit = 6): string[] {
  const lowered = query.toLowerCase();
  if (!lowered) return [];
  const hints: string[] = [];
  for (const m of memories) {
    if (!m.path || hints.includes(m.path)) continue;
    const p = parts(m.path);
    const last = p.at(-1) ?? m.path;
    if (lowered.includes(m.path.toLowerCase()) || lowered.includes(last.toLowerCase()) || p.some((part) => part.length >= 3 && lowered.includes(part.toLowerCase()))) hints.push(m.path);
    if (hints.length >= limit) break;
  }
  return hints;
}
