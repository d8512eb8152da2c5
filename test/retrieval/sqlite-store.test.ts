import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignIndex } from '../../src/core/retrieval/sign-index.js';
import { SqliteChunkStore } from '../../src/core/retrieval/sqlite-store.js';

/**
 * The embedded store's shortcuts for large collections (its sign bits kept in memory, the
 * collection tag left out of the lexical query): the same answers as the plain path, and
 * writes after the first search seen by the next one.
 */
const SPACE = 'openai\nfake';
const DIMENSIONS = 64;

function randomVector(seed: number): Float32Array {
  let state = seed;
  return Float32Array.from({ length: DIMENSIONS }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32 - 0.5;
  });
}

describe('the embedded chunk store', () => {
  let dataDir: string;
  let store: SqliteChunkStore;

  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'parley-sqlite-store-'));
    store = new SqliteChunkStore(dataDir);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('finds a large collection’s nearest chunks, never another collection’s, and follows later writes', async () => {
    // 600 chunks: more than the candidates a vector search ranks exactly.
    const big = Array.from({ length: 600 }, (_, i) => ({ text: `big chunk ${i}`, metadata: {}, fileId: `big-${i % 60}`, title: '' }));
    await store.insert('big', big, { space: SPACE, vectors: big.map((_, i) => randomVector(i + 1)) });
    const small = [{ text: 'small chunk', metadata: {}, fileId: 'small', title: '' }];
    await store.insert('small', small, { space: SPACE, vectors: [randomVector(7)] });

    const first = await store.nearest('big', SPACE, randomVector(8), 3);
    expect(first[0]).toMatchObject({ text: 'big chunk 7', collection: 'big' });
    expect(first[0]!.score).toBeCloseTo(1, 5);
    expect(first).toHaveLength(3);
    // The same vector in the small collection is not the big one's.
    expect((await store.nearest('small', SPACE, randomVector(7), 3)).map((c) => c.text)).toEqual(['small chunk']);

    // Removed after the first search: never found again; added after it: found.
    await store.removeFile('big', 'big-7');
    expect((await store.nearest('big', SPACE, randomVector(8), 3)).map((c) => c.text)).not.toContain('big chunk 7');
    await store.insert('big', [{ text: 'late chunk', metadata: {}, fileId: 'late', title: '' }], { space: SPACE, vectors: [randomVector(999)] });
    expect((await store.nearest('big', SPACE, randomVector(999), 1)).map((c) => c.text)).toEqual(['late chunk']);

    await store.drop(['big']);
    expect(await store.nearest('big', SPACE, randomVector(999), 3)).toEqual([]);
  });

  it('follows writes another process made to the same file (a second instance on one data folder)', async () => {
    const other = new SqliteChunkStore(dataDir);
    try {
      const shared = Array.from({ length: 400 }, (_, i) => ({ text: `shared chunk ${i}`, metadata: {}, fileId: `shared-${i % 40}`, title: '' }));
      await store.insert('shared', shared, { space: SPACE, vectors: shared.map((_, i) => randomVector(i + 5000)) });
      // This store's sign bits and word counts are now kept in memory...
      expect((await store.nearest('shared', SPACE, randomVector(5003), 1)).map((c) => c.text)).toEqual(['shared chunk 3']);
      expect(await store.lexical('shared', 'zebra', 3)).toEqual([]);
      // ...then the other one writes: seen at the next search, and its removals too.
      await other.insert('shared', [{ text: 'zebra crossing', metadata: {}, fileId: 'zebra', title: '' }], { space: SPACE, vectors: [randomVector(4242)] });
      expect((await store.nearest('shared', SPACE, randomVector(4242), 1)).map((c) => c.text)).toEqual(['zebra crossing']);
      expect((await store.lexical('shared', 'zebra', 3)).map((c) => c.text)).toEqual(['zebra crossing']);
      await other.removeFile('shared', 'zebra');
      expect((await store.nearest('shared', SPACE, randomVector(4242), 1)).map((c) => c.text)).not.toContain('zebra crossing');
    } finally {
      await other.close();
    }
  });

  it('ranks a collection that is most of the store by its own chunks, even when another collection’s rank higher', async () => {
    await store.clear();
    const filler = Array.from({ length: 200 }, (_, i) => ({ text: `ordinary text number ${i} about gardens and rivers`, metadata: {}, fileId: 'filler', title: '' }));
    const zebras = Array.from({ length: 4 }, (_, i) => ({ text: `a zebra ${i} among gardens, rivers, hills and many other words of the field`, metadata: {}, fileId: 'zebras', title: '' }));
    await store.insert('large', [...filler, ...zebras], null);
    // A small collection whose chunks say "zebra" more often: store-wide, they rank first.
    await store.insert('other', Array.from({ length: 30 }, (_, i) => ({ text: `zebra zebra ${i}`, metadata: {}, fileId: 'other', title: '' })), null);
    const found = await store.lexical('large', 'zebra', 3);
    expect(found).toHaveLength(3);
    for (const chunk of found) expect(chunk).toMatchObject({ collection: 'large', text: expect.stringContaining('zebra') });
    const other = await store.lexical('other', 'zebra gardens', 3);
    expect(other.map((c) => c.collection)).toEqual(['other', 'other', 'other']);
  });

  it('matches only the rarest word when every word is in over half the chunks', async () => {
    await store.clear();
    const short = Array.from({ length: 3 }, (_, i) => ({ text: `alpha ${i}`, metadata: {}, fileId: 'short', title: '' }));
    const long = Array.from({ length: 7 }, (_, i) => ({ text: `alpha beta and a few more words to make it longer ${i}`, metadata: {}, fileId: 'long', title: '' }));
    await store.insert('words', [...short, ...long], null);
    // Both words counted once against the "over half" cap, then again to find the rarer one.
    for (let i = 0; i < 2; i++) {
      const found = await store.lexical('words', 'alpha beta', 3);
      expect(found).toHaveLength(3);
      for (const chunk of found) expect(chunk.text).toContain('beta');
    }
  });

  it('picks candidates by weighted signs in a collection of thousands, by Hamming distance in a larger one', () => {
    for (const size of [5_000, 25_000]) {
      const index = new SignIndex(DIMENSIONS);
      for (let id = 1; id <= size; id++) {
        const bits = new Uint8Array(DIMENSIONS / 8);
        randomVector(id).forEach((value, i) => {
          if (value > 0) bits[i >> 3]! |= 1 << (7 - (i & 7));
        });
        index.add(id, bits);
      }
      const candidates = index.nearest(randomVector(1234), 200);
      expect(candidates.length).toBeGreaterThanOrEqual(200);
      expect(candidates.length).toBeLessThan(400);
      expect(candidates).toContain(1234);
      index.remove(new Set([1234]));
      expect(index.nearest(randomVector(1234), 200)).not.toContain(1234);
    }
  });
});
