import { describe, expect, it } from 'vitest';
import { fakeEmbeddingEngine, fakeRelevance } from '../helpers/fake-embeddings.js';
import { type ApiClient, dialect } from '../helpers/server.js';
import type { Account } from '../helpers/users.js';
import { useServer } from '../helpers/world.js';
import { PASSAGES, QUESTIONS } from './corpus.js';

/** Retrieval quality and ranking over HTTP: the shipped corpus, lexical, by vectors, hybrid, reranked. */

async function indexCorpus(api: ApiClient, admin: Account, collection: string): Promise<void> {
  for (const [name, content] of Object.entries(PASSAGES)) {
    const res = await api.post('/api/v1/retrieval/process/text', { name, content, collection_name: collection }, { token: admin.token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
}

async function ask(api: ApiClient, admin: Account, collection: string, query: string, extra: Record<string, unknown> = {}) {
  const res = await api.post('/api/v1/retrieval/query/collection', { collection_names: [collection], query, ...extra }, { token: admin.token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { distances: number[][]; documents: string[][]; metadatas: Record<string, unknown>[][] };
}

/** The share of questions whose passage is among the answers (TOP_K, 3 by default). */
async function recall(api: ApiClient, admin: Account, collection: string, extra: Record<string, unknown> = {}): Promise<{ hits: number; misses: string[] }> {
  const misses: string[] = [];
  for (const { question, expected } of QUESTIONS) {
    const result = await ask(api, admin, collection, question, extra);
    if (!result.metadatas[0]!.some((m) => m.name === expected)) misses.push(`${question} → ${result.metadatas[0]!.map((m) => m.name).join(', ')}`);
  }
  return { hits: QUESTIONS.length - misses.length, misses };
}

describe('retrieval without an embedding engine (lexical)', () => {
  const world = useServer({ admin: 'Lexical Admin' });

  it('finds the one passage of a store that holds only it (every word is then in "over half" the chunks)', async () => {
    const content = 'Reactor manual. Page two: the launch code is 4217. Never share it.';
    expect((await world.api.post('/api/v1/retrieval/process/text', { name: 'manual', content, collection_name: 'alone' }, { token: world.admin.token })).status).toBe(200);
    const found = await ask(world.api, world.admin, 'alone', 'What is the launch code in the manual?');
    expect(found.documents[0]).toEqual([content]);
  });

  it('says so in the config, and finds every question’s passage in the top 3 by BM25', async () => {
    const config = await world.api.get('/api/v1/retrieval/config', { token: world.admin.token });
    expect(config.body).toMatchObject({ status: true, RAG_EMBEDDING_ENGINE: '', TOP_K: 3 });
    await indexCorpus(world.api, world.admin, 'corpus');
    const { misses } = await recall(world.api, world.admin, 'corpus');
    expect(misses).toEqual([]);
  });

  it('answers best first, at most TOP_K, scores between 0 and 1, the metadata with each', async () => {
    const result = await ask(world.api, world.admin, 'corpus', 'gravitational pull of the Moon on ocean tides', { k: 5 });
    expect(result.documents[0]!.length).toBeLessThanOrEqual(5);
    expect(result.metadatas[0]![0]).toMatchObject({ name: 'tides', start_index: 0, embedding_config: { engine: '' } });
    const scores = result.distances[0]!;
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    for (const score of scores) expect(score > 0 && score < 1).toBe(true);
  });

  it('finds nothing for words no passage has, and treats query syntax as words', async () => {
    expect((await ask(world.api, world.admin, 'corpus', 'zyxwv qwertyuiop')).documents).toEqual([[]]);
    const tricky = await ask(world.api, world.admin, 'corpus', 'tides" OR NEAR(* -) AND {col}: "moon');
    expect(tricky.metadatas[0]![0]!.name).toBe('tides');
  });
});

describe('lexical ranking: titles, headings, question words, repeated texts', () => {
  const world = useServer({ admin: 'Ranking Admin' });
  const index = async (collection: string, name: string, content: string) =>
    expect((await world.api.post('/api/v1/retrieval/process/text', { name, content, collection_name: collection }, { token: world.admin.token })).status).toBe(200);
  const names = async (collection: string, query: string, k = 3) => (await ask(world.api, world.admin, collection, query, { k })).metadatas[0]!.map((m) => m.name);
  const filler = (topic: string, n: number) => Array.from({ length: n }, (_, i) => `${topic} note ${i}: boilers, radiators, valves and pipes are checked every spring by the caretaker.`).join('\n\n');

  it('finds a chunk by its document’s name and by the Markdown headings above it, though its text has neither', async () => {
    const body = Array.from({ length: 12 }, (_, i) => `Step ${i}: pour the white vinegar in, wait ten minutes, rinse twice with cold water and wipe the base.`).join(' ');
    await index('manuals', 'Kettle Handbook.md', `# Kettle\n\n## Descaling\n\n${body}\n\n## Warranty\n\nTwo years from purchase.`);
    await index('manuals', 'Heating Log.md', filler('heating', 6));
    const chunks = await world.server.parley.services.retrieval.documents('manuals');
    const later = chunks.filter((c) => c.metadata.name === 'Kettle Handbook.md' && !/descal|kettle/i.test(c.text));
    expect(later.length).toBeGreaterThan(0);
    // Only the heading and the file name say "descaling" and "kettle": the chunks under them come first.
    const found = await ask(world.api, world.admin, 'manuals', 'kettle descaling', { k: 3 });
    expect(found.metadatas[0]!.every((m) => m.name === 'Kettle Handbook.md')).toBe(true);
    expect(found.documents[0]!.some((text) => later.some((chunk) => chunk.text === text && !chunk.text.includes('Warranty')))).toBe(true);
    // The name without its extension: "md" is no word of the title.
    expect(await names('manuals', 'handbook')).toEqual(expect.arrayContaining(['Kettle Handbook.md']));
  });

  it('ranks by the words a question asks about, not by its function words', async () => {
    await index('chatty', 'faq', 'What is it that you do when it is how it is? It is what it is, and that is how we do it when we can.');
    await index('chatty', 'capacitor', 'Reset: hold the front button of the flux capacitor for five seconds until the lamp blinks.');
    await index('chatty', 'heating', filler('heating', 4));
    expect((await names('chatty', 'How do I reset the capacitor when it is what it is?', 1))).toEqual(['capacitor']);
    // A question of function words only still matches by them (on SQLite: PostgreSQL's 'english'
    // text search configuration leaves them out of its index).
    if (dialect === 'sqlite') expect(await names('chatty', 'what is it', 1)).toEqual(['faq']);
  });

  it('finds a word a line break split with a hyphen, as justified PDFs have them, and keeps the text as extracted', async () => {
    const broken = 'The radio link failed: its transmis-\nsion stopped at dawn, and the relay was re-\nstarted twice.';
    await index('hyphens', 'report', broken);
    await index('hyphens', 'heating', filler('heating', 3));
    const found = await ask(world.api, world.admin, 'hyphens', 'transmission', { k: 1 });
    expect(found.documents[0]).toEqual([broken]);
    expect((await ask(world.api, world.admin, 'hyphens', 'restarted', { k: 1 })).documents[0]).toEqual([broken]);
  });

  it('ranks a chunk with a word in the form asked above chunks with only other words of its stem', async () => {
    await index('forms', 'sessions', 'The interactive debugger keeps interactive sessions: interactive mode shows an interactive prompt per command.');
    await index('forms', 'interact', 'The interact command starts an interpreter holding the names of the current scope.');
    await index('forms', 'heating', filler('heating', 4));
    expect(await names('forms', 'interact command', 1)).toEqual(['interact']);
    // The stem still finds the other forms.
    expect(await names('forms', 'interactively', 1)).toEqual(['sessions']);
  });

  it('answers k distinct chunks when a text is in a collection twice', async () => {
    const passages = ['Otters hold hands while sleeping.', 'Otters keep a favourite stone.', 'Otters groom their fur for hours.'];
    for (const [i, text] of passages.entries()) await index('otters', `otter-${i}`, text);
    await index('otters', 'otter-0-copy', passages[0]!);
    const found = await ask(world.api, world.admin, 'otters', 'otters', { k: 3 });
    expect(new Set(found.documents[0])).toEqual(new Set(passages));
  });
});

describe('retrieval with an embedding engine', () => {
  const world = useServer({ fakes: fakeEmbeddingEngine('hash-embed-a'), admin: 'Vector Admin' });
  const admin = () => world.admin;

  it('finds every question’s passage in the top 3 by vectors', async () => {
    await indexCorpus(world.api, admin(), 'corpus');
    // Each passage was embedded once, in the OpenAI format, with the configured model.
    const embedded = world.embeddings.requests.filter((r) => r.path === '/embeddings');
    expect(embedded.length).toBe(Object.keys(PASSAGES).length);
    expect(embedded[0]!.body).toMatchObject({ model: 'hash-embed-a', input: [expect.any(String)] });
    expect(embedded[0]!.headers.authorization).toBe('Bearer sk-embed');
    const { misses } = await recall(world.api, admin(), 'corpus');
    expect(misses).toEqual([]);
  });

  it('finds them with hybrid search too, scores being the cosine similarity (0..1)', async () => {
    const on = await world.api.post('/api/v1/retrieval/config/update', { ENABLE_RAG_HYBRID_SEARCH: true, HYBRID_BM25_WEIGHT: 0.5 }, { token: admin().token });
    expect(on.body).toMatchObject({ ENABLE_RAG_HYBRID_SEARCH: true, HYBRID_BM25_WEIGHT: 0.5 });
    const { misses } = await recall(world.api, admin(), 'corpus');
    expect(misses).toEqual([]);
    const result = await ask(world.api, admin(), 'corpus', 'the waggle dance of honeybees');
    for (const score of result.distances[0]!) expect(score >= 0 && score <= 1).toBe(true);
    expect(result.metadatas[0]![0]!.name).toBe('honeybees');
  });

  it('fuses by weight: BM25 alone (weight 1) or vectors alone (weight 0) rank as their own search does', async () => {
    const question = 'sunlight into electricity';
    const lexicalOnly = await ask(world.api, admin(), 'corpus', question, { hybrid_bm25_weight: 1, k: 3, k_reranker: 3 });
    const vectorOnly = await ask(world.api, admin(), 'corpus', question, { hybrid_bm25_weight: 0, k: 3, k_reranker: 3 });
    expect(lexicalOnly.metadatas[0]![0]!.name).toBe('solar');
    expect(vectorOnly.metadatas[0]![0]!.name).toBe('solar');
    // A passage sharing only "sunlight" is found by both, below the one sharing every word.
    for (const result of [lexicalOnly, vectorOnly]) expect(result.metadatas[0]!.map((m) => m.name)).not.toContain('sleep');
  });

  it('applies the relevance threshold (r) of hybrid search', async () => {
    const all = await ask(world.api, admin(), 'corpus', 'wind turbine blades', { k: 10, k_reranker: 10 });
    expect(all.documents[0]!.length).toBeGreaterThan(1);
    const strict = await ask(world.api, admin(), 'corpus', 'wind turbine blades', { k: 10, k_reranker: 10, r: 0.3 });
    expect(strict.metadatas[0]!.map((m) => m.name)).toEqual(['windturbine']);
    for (const score of strict.distances[0]!) expect(score).toBeGreaterThanOrEqual(0.3);
  });

  it('reranks through the external reranker: its order and its scores', async () => {
    const set = await world.api.post(
      '/api/v1/retrieval/config/update',
      { RAG_RERANKING_ENGINE: 'external', RAG_EXTERNAL_RERANKER_URL: `${world.embeddings.url}/rerank`, RAG_EXTERNAL_RERANKER_API_KEY: 'rr-key', RAG_RERANKING_MODEL: 'fake-rerank' },
      { token: admin().token },
    );
    expect(set.status).toBe(200);
    try {
      const query = 'honey bees dance flowers hive';
      const result = await ask(world.api, admin(), 'corpus', query, { k: 3, k_reranker: 3 });
      const call = world.embeddings.requests.filter((r) => r.path === '/rerank').at(-1)!;
      expect(call.body).toMatchObject({ model: 'fake-rerank', query, top_n: call.body.documents.length });
      expect(call.headers.authorization).toBe('Bearer rr-key');
      expect(result.distances[0]).toEqual(result.documents[0]!.map((document) => fakeRelevance(query, document)));
      expect(result.metadatas[0]![0]!.name).toBe('honeybees');
    } finally {
      await world.api.post('/api/v1/retrieval/config/update', { RAG_RERANKING_ENGINE: '' }, { token: admin().token });
    }
  });

  it('never compares vectors of two models: after a model change, old chunks are found again only once reindexed', async () => {
    await world.api.post('/api/v1/retrieval/config/update', { ENABLE_RAG_HYBRID_SEARCH: false }, { token: admin().token });
    await world.api.post('/api/v1/retrieval/process/text', { name: 'kiwi', content: 'Kiwi birds of New Zealand cannot fly.', collection_name: 'models' }, { token: admin().token });
    expect((await ask(world.api, admin(), 'models', 'kiwi birds fly')).metadatas[0]!.map((m) => m.name)).toEqual(['kiwi']);

    const change = await world.api.post(
      '/api/v1/retrieval/embedding/update',
      { RAG_EMBEDDING_ENGINE: 'openai', RAG_EMBEDDING_MODEL: 'hash-embed-b', openai_config: { url: world.embeddings.url, key: 'sk-embed' } },
      { token: admin().token },
    );
    expect(change.body).toMatchObject({ status: true, RAG_EMBEDDING_ENGINE: 'openai', RAG_EMBEDDING_MODEL: 'hash-embed-b' });
    // Model B's query vector is never scored against model A's vectors (same dimensions, unrelated spaces).
    expect((await ask(world.api, admin(), 'models', 'kiwi birds fly')).documents).toEqual([[]]);

    await world.api.post('/api/v1/retrieval/process/text', { name: 'kiwi', content: 'Kiwi birds of New Zealand cannot fly.', collection_name: 'models' }, { token: admin().token });
    const after = await ask(world.api, admin(), 'models', 'kiwi birds fly');
    expect(after.metadatas[0]!.map((m) => m.name)).toEqual(['kiwi']);
    expect(after.metadatas[0]![0]).toMatchObject({ embedding_config: { engine: 'openai', model: 'hash-embed-b' } });
    expect(after.distances[0]![0]).toBeGreaterThan(0.5);
  });
});
