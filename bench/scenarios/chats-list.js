/** The sidebar's first page with 10,000 chats stored (issue 7), each with a conversation the list must not read. */
export default {
  name: 'GET /api/v1/chats/?page=1 (10,000 chats)',
  async setup(ctx) {
    const { token } = await ctx.admin();
    const text = 'lorem ipsum dolor sit amet '.repeat(40);
    const chat = (i) => ({
      chat: {
        title: `Chat ${i}`,
        history: {
          currentId: 'a',
          messages: {
            u: { id: 'u', parentId: null, childrenIds: ['a'], role: 'user', content: text, timestamp: 1_700_000_000 + i },
            a: { id: 'a', parentId: 'u', childrenIds: [], role: 'assistant', content: text, timestamp: 1_700_000_001 + i },
          },
        },
      },
      updated_at: 1_700_000_000 + i,
      created_at: 1_700_000_000 + i,
    });
    const batch = 500;
    await ctx.repeat(10_000 / batch, (b) => ctx.post('/api/v1/chats/import', { chats: Array.from({ length: batch }, (_, j) => chat(b * batch + j)) }, { token }), { concurrency: 2 });
    return { method: 'GET', path: '/api/v1/chats/?page=1', headers: { authorization: `Bearer ${token}` } };
  },
};
