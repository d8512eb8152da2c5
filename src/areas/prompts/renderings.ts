import type { PromptRow } from '../../core/db/tables.js';
import type { PromptHead } from './store.js';

/** A picker entry as UTF-8 JSON up to its grants: `{"id":…,…,"updated_at":…,"access_grants":`. */
export interface PromptRendering {
  id: string;
  version: string;
  owner: string;
  head: Buffer;
}

/**
 * Renderings of the prompts listed lately, by id. A listing reads only ids and
 * row versions; the rest (most of the bytes) is read and serialised again only
 * for prompts whose version changed, here or on another instance.
 */
export class PromptRenderings {
  private readonly entries = new Map<string, PromptRendering>();

  /** The renderings of `heads` in their order, loading the missing and outdated ones with one `load` call. */
  async of(heads: PromptHead[], load: (ids: string[]) => Promise<PromptRow[]>): Promise<PromptRendering[]> {
    const stale = heads.filter((head) => this.entries.get(head.id)?.version !== head.version).map((head) => head.id);
    if (stale.length > 0) for (const row of await load(stale)) this.entries.set(row.id, render(row));
    // A prompt deleted between the two reads has no rendering: it is left out.
    return heads.flatMap((head) => this.entries.get(head.id) ?? []);
  }

  /** After a listing of every active prompt: forget the others (deleted or disabled, here or elsewhere). */
  retain(heads: PromptHead[]): void {
    if (this.entries.size <= heads.length) return;
    const present = new Set(heads.map((head) => head.id));
    for (const id of this.entries.keys()) if (!present.has(id)) this.entries.delete(id);
  }

  forget(id: string): void {
    this.entries.delete(id);
  }
}

/** PromptModel's keys in order; the JSON columns are stored JSON text (written by the store), spliced in as they are. */
function render(row: PromptRow): PromptRendering {
  const text =
    `{"id":${JSON.stringify(row.id)},"command":${JSON.stringify(row.command)},"user_id":${JSON.stringify(row.user_id)},` +
    `"name":${JSON.stringify(row.name)},"content":${JSON.stringify(row.content)},"data":${row.data ?? 'null'},"meta":${row.meta ?? 'null'},` +
    `"tags":${row.tags ?? '[]'},"is_active":true,"version_id":${JSON.stringify(row.version_id)},` +
    `"created_at":${Number(row.created_at)},"updated_at":${Number(row.updated_at)},"access_grants":`;
  return { id: row.id, version: row.version, owner: row.user_id, head: Buffer.from(text) };
}
