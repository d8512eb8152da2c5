import { fromJson } from '../../core/db/json.js';
import { type ToolBody, type ToolHead, type ToolMeta, toToolMeta } from './store.js';

type Json = Record<string, unknown>;

/** What listings show of a tool that changes only with its version: meta and specs, parsed and as JSON text. */
export interface ToolRendering {
  version: string;
  meta: ToolMeta;
  metaJson: string;
  specs: Json[];
  specsJson: string;
}

/**
 * Renderings of the tools listed lately, by id. A listing reads only the small
 * columns; specs and meta (most of the bytes) are read and parsed again only for
 * tools whose version changed, here or on another instance.
 */
export class ToolRenderings {
  private readonly entries = new Map<string, ToolRendering>();

  /** The renderings of `heads`, loading the missing and outdated ones with one `load` call. */
  async of(heads: ToolHead[], load: (ids: string[]) => Promise<ToolBody[]>): Promise<Map<string, ToolRendering>> {
    const stale = heads.filter((head) => this.entries.get(head.id)?.version !== head.version).map((head) => head.id);
    for (const body of await load(stale)) this.entries.set(body.id, render(body));
    return this.entries;
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

function render(body: ToolBody): ToolRendering {
  const meta = toToolMeta(fromJson(body.meta, {}));
  const specs = fromJson<unknown>(body.specs, []);
  const valid = Array.isArray(specs);
  return {
    version: body.version,
    meta,
    metaJson: JSON.stringify(meta),
    specs: valid ? (specs as Json[]) : [],
    // The stored text is already JSON of the list: spliced into responses as it is.
    specsJson: valid ? body.specs : '[]',
  };
}
