import { fromJson } from '../../core/db/json.js';
import { type ToolHead, type ToolListed, type ToolMeta, toToolMeta } from './store.js';

type Json = Record<string, unknown>;

/**
 * What listings show of a tool that changes only with its version, parsed and
 * as UTF-8 JSON fragments of a `GET /` entry, which is
 * `head + access_grants + ',"access_control":' + … + middle + user + tail`.
 */
export interface ToolRendering {
  id: string;
  version: string;
  user_id: string;
  name: string;
  meta: ToolMeta;
  specs: Json[];
  updated_at: number;
  created_at: number;
  /** `{"id":…,"user_id":…,"name":…,"meta":{…},"access_grants":` */
  head: Buffer;
  /** `,"updated_at":…,"created_at":…,"user":` */
  middle: Buffer;
  /** `,"has_user_valves":…,"specs":[…]}` */
  tail: Buffer;
}

/**
 * Renderings of the tools listed lately, by id. A listing reads only ids and
 * versions; the rest (most of the bytes) is read, parsed and serialised again
 * only for tools whose version changed, here or on another instance.
 */
export class ToolRenderings {
  private readonly entries = new Map<string, ToolRendering>();

  /** The renderings of `heads` in their order, loading the missing and outdated ones with one `load` call. */
  async of(heads: ToolHead[], load: (ids: string[]) => Promise<ToolListed[]>): Promise<ToolRendering[]> {
    const stale = heads.filter((head) => this.entries.get(head.id)?.version !== head.version).map((head) => head.id);
    for (const row of await load(stale)) this.entries.set(row.id, render(row));
    // A tool deleted between the two reads has no rendering: it is left out.
    return heads.flatMap((head) => this.entries.get(head.id) ?? []);
  }

  /** After a listing of every tool: forget tools that are gone (deleted here or elsewhere). */
  retain(heads: ToolHead[]): void {
    if (this.entries.size <= heads.length) return;
    const present = new Set(heads.map((head) => head.id));
    for (const id of this.entries.keys()) if (!present.has(id)) this.entries.delete(id);
  }

  forget(id: string): void {
    this.entries.delete(id);
  }
}

function render(row: ToolListed): ToolRendering {
  const meta = toToolMeta(fromJson(row.meta, {}));
  const parsed = fromJson<unknown>(row.specs, []);
  const specs = Array.isArray(parsed) ? (parsed as Json[]) : [];
  return {
    id: row.id,
    version: row.version,
    user_id: row.user_id,
    name: row.name,
    meta,
    specs,
    updated_at: row.updated_at,
    created_at: row.created_at,
    head: Buffer.from(
      `{"id":${JSON.stringify(row.id)},"user_id":${JSON.stringify(row.user_id)},"name":${JSON.stringify(row.name)},"meta":${JSON.stringify(meta)},"access_grants":`,
    ),
    middle: Buffer.from(`,"updated_at":${row.updated_at},"created_at":${row.created_at},"user":`),
    // The stored text is already JSON of the list: spliced in as it is.
    tail: Buffer.from(`,"has_user_valves":${meta.has_user_valves},"specs":${Array.isArray(parsed) ? row.specs : '[]'}}`),
  };
}
