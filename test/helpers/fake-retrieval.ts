import type { IndexOptions, Retrieval, RetrievalDocument, RetrievedChunk } from '../../src/core/retrieval/retrieval.js';

/**
 * An in-memory retrieval store for area tests: each document is one chunk, and a
 * query scores a chunk by the query words it contains. It records what was indexed,
 * so tests can check which chunks a collection holds.
 */
export class MemoryRetrieval implements Retrieval {
  readonly collections = new Map<string, RetrievalDocument[]>();
  /** Set to make the next index calls fail, as an embedding upstream that is down. */
  failWith: string | null = null;

  async index(collection: string, documents: RetrievalDocument[], options: IndexOptions = {}): Promise<{ chunks: number }> {
    if (this.failWith) throw new Error(this.failWith);
    let stored = this.collections.get(collection) ?? [];
    if (options.replaceFileId) stored = stored.filter((d) => d.metadata.file_id !== options.replaceFileId);
    this.collections.set(collection, [...stored, ...documents]);
    return { chunks: documents.length };
  }

  async removeFile(collection: string, fileId: string): Promise<void> {
    const stored = this.collections.get(collection);
    if (stored) this.collections.set(collection, stored.filter((d) => d.metadata.file_id !== fileId));
  }

  async dropCollections(collections: string[]): Promise<void> {
    for (const name of collections) this.collections.delete(name);
  }

  async documents(collection: string): Promise<RetrievalDocument[]> {
    return this.collections.get(collection) ?? [];
  }

  async query(collections: string[], queries: string[], options: { k?: number } = {}): Promise<RetrievedChunk[]> {
    const words = queries.flatMap((q) => q.toLowerCase().split(/\W+/).filter(Boolean));
    const found: RetrievedChunk[] = [];
    for (const collection of collections) {
      for (const doc of this.collections.get(collection) ?? []) {
        const text = doc.text.toLowerCase();
        const score = words.filter((w) => text.includes(w)).length / Math.max(1, words.length);
        if (score > 0) found.push({ collection, text: doc.text, metadata: doc.metadata, score });
      }
    }
    return found.sort((a, b) => b.score - a.score).slice(0, options.k ?? 5);
  }
}
