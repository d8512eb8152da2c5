const MEMORIES = 10_000;
const PER_REQUEST = 100;

const TOPICS = ['cooking', 'hiking', 'music', 'travel', 'work', 'family', 'books', 'garden', 'fitness', 'cars'];

/** A memory as people keep them: a sentence filed under a topic path. */
function memory(i) {
  const topic = TOPICS[i % TOPICS.length];
  return { action: 'add', content: `Fact ${i} about ${topic}: prefers option ${i % 97} and mentioned item ${i * 7} last week`, path: `${topic}/${i % 13}` };
}

/**
 * Memory lookup (issue 19): `POST /api/v1/memories/query` ranks one user's
 * 10,000 memories by relevance through the retrieval store (BM25 here: no
 * embedding engine is configured), the query the chat's memory context makes
 * on every turn with memory on.
 */
export default {
  name: `POST /api/v1/memories/query (${MEMORIES.toLocaleString('en-US')} memories)`,
  async setup(ctx) {
    const admin = await ctx.admin();
    await ctx.repeat(
      MEMORIES / PER_REQUEST,
      (batch) => ctx.post('/api/v1/memories/update', { operations: Array.from({ length: PER_REQUEST }, (_, j) => memory(batch * PER_REQUEST + j)) }, { token: admin.token }),
      { concurrency: 4 },
    );
    return {
      method: 'POST',
      path: '/api/v1/memories/query',
      headers: { authorization: `Bearer ${admin.token}` },
      body: { content: 'what does the user prefer about hiking?', k: 3 },
    };
  },
};
