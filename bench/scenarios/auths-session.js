/** The signed-in user's session: token check and user lookup on every request. */
export default {
  name: 'GET /api/v1/auths/ (signed in)',
  // Issue 2's target: within 1.5× of a bare Fastify route returning the same JSON.
  rpsRatioTarget: 1 / 1.5,
  async setup(ctx) {
    const { token } = await ctx.admin();
    return { method: 'GET', path: '/api/v1/auths/', headers: { authorization: `Bearer ${token}` } };
  },
};
