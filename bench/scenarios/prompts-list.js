/** A typical `/` command: a template with variables the frontend fills, a couple of tags. */
function prompt(i) {
  return {
    command: `bench-prompt-${i}`,
    name: `Bench prompt ${i}`,
    content: `You are reviewing {{CLIPBOARD}} for {{USER_NAME}} on {{CURRENT_DATE}}.\nList the three most important points of prompt ${i}, then a one-line summary.\n`.repeat(2),
    tags: ['bench', `group-${i % 20}`],
    // Public, so a plain user reads all of them through the access condition.
    access_grants: [{ principal_type: 'user', principal_id: '*', permission: 'read' }],
  };
}

/**
 * The `/` picker (issue 19): the chat input loads every active prompt the user may
 * read with `GET /api/v1/prompts/` when `/` is typed; 10,000 stored, read by a plain user.
 */
export default {
  name: 'GET /api/v1/prompts/ (/ picker, 10,000 prompts)',
  async setup(ctx) {
    const admin = await ctx.admin();
    await ctx.repeat(10_000, (i) => ctx.post('/api/v1/prompts/create', prompt(i), { token: admin.token }), { concurrency: 8 });
    const user = await ctx.post('/api/v1/auths/add', { name: 'Prompt Reader', email: 'prompts@bench.example', password: 'bench-Passw0rd!', role: 'user' }, { token: admin.token });
    return { method: 'GET', path: '/api/v1/prompts/', headers: { authorization: `Bearer ${user.token}` } };
  },
};
