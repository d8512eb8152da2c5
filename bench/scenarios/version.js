/** The smallest public JSON endpoint: routing, hooks and serialisation, nothing else. */
export default {
  name: 'GET /api/version',
  request: { method: 'GET', path: '/api/version' },
};
