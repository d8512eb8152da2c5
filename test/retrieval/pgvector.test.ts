import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { up as retrievalTables } from '../../src/core/db/migrations/0010_retrieval.js';
import { up as retrievalTitles } from '../../src/core/db/migrations/0021_retrieval_titles.js';
import { PostgresChunkStore } from '../../src/core/retrieval/postgres-store.js';
import { startPglite, type TestPglite } from '../helpers/pglite.js';

/**
 * The pgvector branch of the PostgreSQL chunk store, against PGlite with pgvector (CI's
 * PostgreSQL has no `vector` extension): an HNSW index per vector space, cosine queries, k
 * results whatever the table holds, and never a vector of another model.
 */
const MODEL_A = 'openai\nmodel-a';
const MODEL_B = 'openai\nmodel-b';
const DIMENSIONS = 8;

function vectorOf(seed: number, dimensions = DIMENSIONS): Float32Array {
  let state = seed * 7919 + 1;
  return Float32Array.from({ length: dimensions }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32 - 0.5;
  });
}
const chunksNamed = (names: string[]) => names.map((text) => ({ text, metadata: { name: text }, fileId: text, title: '' }));

describe('the PostgreSQL chunk store with pgvector', () => {
  let pg: TestPglite;
  let store: PostgresChunkStore;

  beforeAll(async () => {
    pg = await startPglite();
    await retrievalTables(pg.db as never);
    await retrievalTitles(pg.db as never);
    store = new PostgresChunkStore(pg.db);
    expect(await store.start()).toEqual({ pgvector: true });
  }, 120_000);
  afterAll(async () => {
    await pg?.close();
  });

  it('answers k nearest by cosine similarity as the table fills, through an HNSW index per vector space', async () => {
    let count = 0;
    for (const batch of [1, 2, 4, 40, 200]) {
      const names = Array.from({ length: batch }, (_, i) => `a-${count + i}`);
      await store.insert('kb', chunksNamed(names), { space: MODEL_A, vectors: names.map((_, i) => vectorOf(count + i)) });
      count += batch;
      const target = count - 1;
      const found = await store.nearest('kb', MODEL_A, vectorOf(target), 5);
      expect(found).toHaveLength(Math.min(5, count));
      expect(found[0]).toMatchObject({ text: `a-${target}`, collection: 'kb' });
      expect(found[0]!.score).toBeCloseTo(1, 5);
      expect(found.map((c) => c.score)).toEqual([...found.map((c) => c.score)].sort((a, b) => b - a));
    }
    const indexes = await sql<{ indexdef: string }>`SELECT indexdef FROM pg_indexes WHERE tablename = 'retrieval_vector' AND indexdef LIKE '%hnsw%'`.execute(pg.db);
    expect(indexes.rows).toHaveLength(1);
    expect(indexes.rows[0]!.indexdef).toContain('vector_cosine_ops');
  });

  it('answers k results from a small collection beside a large one, also when the planner takes the index', async () => {
    await store.insert('small', chunksNamed(['s-0', 's-1', 's-2', 's-3', 's-4', 's-5']), { space: MODEL_A, vectors: [0, 1, 2, 3, 4, 5].map((i) => vectorOf(10_000 + i)) });
    for (const seqscan of ['on', 'off']) {
      await sql`SET enable_seqscan = ${sql.raw(seqscan)}`.execute(pg.db);
      const found = await store.nearest('small', MODEL_A, vectorOf(10_002), 5);
      expect(found.map((c) => c.collection)).toEqual(['small', 'small', 'small', 'small', 'small']);
      expect(found[0]!.text).toBe('s-2');
    }
    await sql`SET enable_seqscan = on`.execute(pg.db);
  });

  it('never compares vectors of two models, nor of two dimension counts', async () => {
    const names = ['b-0', 'b-1', 'b-2'];
    await store.insert('kb', chunksNamed(names), { space: MODEL_B, vectors: names.map((_, i) => vectorOf(i)) });
    await store.insert('kb', chunksNamed(['wide-0']), { space: MODEL_A, vectors: [vectorOf(0, 16)] });
    // Model B's vectors equal some of model A's: each model's search finds its own chunks only.
    const byB = await store.nearest('kb', MODEL_B, vectorOf(1), 10);
    expect(byB.map((c) => c.text).sort()).toEqual(names);
    const byA = await store.nearest('kb', MODEL_A, vectorOf(1), 10);
    expect(byA).toHaveLength(10);
    for (const chunk of byA) expect(chunk.text).toMatch(/^a-/);
    expect((await store.nearest('kb', MODEL_A, vectorOf(0, 16), 5)).map((c) => c.text)).toEqual(['wide-0']);
    expect((await store.vectorsOf(byB.map((c) => c.id), MODEL_A)).size).toBe(0);
    const indexes = await sql<{ indexname: string }>`SELECT indexname FROM pg_indexes WHERE tablename = 'retrieval_vector' AND indexdef LIKE '%hnsw%'`.execute(pg.db);
    expect(indexes.rows).toHaveLength(3);
    // Removing a file removes its vectors with its chunk.
    await store.removeFile('kb', 'b-1');
    expect((await store.nearest('kb', MODEL_B, vectorOf(1), 10)).map((c) => c.text).sort()).toEqual(['b-0', 'b-2']);
  });
});
