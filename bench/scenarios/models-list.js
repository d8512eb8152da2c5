import { MODEL_COUNT_DEFAULT } from '../lib/fake-upstream.js';

/**
 * The model list the web app loads on every page (issue 6), with the provider
 * listing 500 models; the list is fetched into Parley's cache once, before any
 * timing, and kept there (see `ctx.upstream()`).
 */
export default {
  name: `GET /api/models (${MODEL_COUNT_DEFAULT} cached models)`,
  async setup(ctx) {
    const [{ token }] = await Promise.all([ctx.admin(), ctx.upstream()]);
    const { data } = await ctx.get('/api/models', { token });
    if (data.length < MODEL_COUNT_DEFAULT) throw new Error(`the list has ${data.length} models, not ${MODEL_COUNT_DEFAULT}`);
    return { method: 'GET', path: '/api/models', headers: { authorization: `Bearer ${token}` } };
  },
};
