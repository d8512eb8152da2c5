import type { Core } from '../context.js';
import type { UpstreamClient } from '../upstream/client.js';
import { readEmbeddingOptions } from './embeddings.js';
import { PostgresChunkStore } from './postgres-store.js';
import { RetrievalService } from './service.js';
import { SqliteChunkStore } from './sqlite-store.js';

/** The retrieval of this deployment: the chunk store of the database's dialect, embeddings through `client`. */
export async function buildRetrieval(core: Core, client: UpstreamClient, defaultTimeoutMs: number): Promise<RetrievalService> {
  let store;
  if (core.database.dialect === 'postgres') {
    const postgres = new PostgresChunkStore(core.db);
    const { pgvector } = await postgres.start();
    core.log.info({ pgvector }, pgvector ? 'Retrieval vectors: pgvector (HNSW)' : 'Retrieval vectors: pgvector is not available; vectors are scored in the process');
    store = postgres;
  } else {
    store = new SqliteChunkStore(core.env.dataDir);
  }
  return new RetrievalService(core.settings, client, store, readEmbeddingOptions(core.env.raw, defaultTimeoutMs));
}
