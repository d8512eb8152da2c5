/**
 * What a scenario's `setup(ctx)` and `measure(ctx)` receive: a small API client
 * on the running Parley, the Parley process itself (`ctx.parley`: `url`, `pid`,
 * `dataDir`, `memory()`, `cpuSeconds()`), helpers to seed data before any timing starts, and
 * the fake model provider (`ctx.upstream()`). `startUpstream()` starts the
 * provider's process (run.js owns the processes it starts).
 */
const STALE_CONNECTION = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

export function createContext(parley, { startUpstream }) {
  const url = parley.url;

  async function call(method, path, body, { token, headers } = {}) {
    const send = () =>
      fetch(url + path, {
        method,
        headers: {
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...headers,
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
    // A kept-alive connection the server closed while a scenario seeded for long (analytics) fails
    // before the request is sent: sent again once, on a new connection.
    const response = await send().catch((error) => {
      if (!STALE_CONNECTION.has(error?.cause?.code)) throw error;
      return send();
    });
    const text = await response.text();
    let json;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, body: json ?? text, headers: response.headers };
  }

  /** Like `call`, but a non-2xx answer is an error (setup must not silently seed nothing). */
  async function expectOk(method, path, body, options) {
    const result = await call(method, path, body, options);
    if (result.status < 200 || result.status > 299) {
      throw new Error(`${method} ${path} answered ${result.status}: ${JSON.stringify(result.body).slice(0, 300)}`);
    }
    return result.body;
  }

  let adminSession = null;
  function admin() {
    adminSession ??= (async () => {
      const form = { name: 'Bench Admin', email: 'admin@bench.local', password: 'Bench-password-1', profile_image_url: '' };
      const session = await expectOk('POST', '/api/v1/auths/signup', form);
      return { ...session, email: form.email, password: form.password };
    })();
    return adminSession;
  }

  let connected = null;
  function upstream() {
    connected ??= (async () => {
      const [server, { token }] = await Promise.all([startUpstream(), admin()]);
      const base = `${server.url}/v1`;
      const openai = { ENABLE_OPENAI_API: true, OPENAI_API_BASE_URLS: [base], OPENAI_API_KEYS: ['sk-bench'], OPENAI_API_CONFIGS: {} };
      await expectOk('POST', '/openai/config/update', openai, { token });
      await expectOk('POST', '/ollama/config/update', { ENABLE_OLLAMA_API: false, OLLAMA_BASE_URLS: [], OLLAMA_API_CONFIGS: {} }, { token });
      await expectOk('POST', '/api/v1/configs/connections', { ENABLE_DIRECT_CONNECTIONS: false, ENABLE_BASE_MODELS_CACHE: true }, { token });
      return { url: base };
    })();
    return connected;
  }

  return {
    url,
    parley,
    /** Raw calls: `{ status, body, headers }` whatever the status. */
    call,
    get: (path, options) => expectOk('GET', path, undefined, options),
    post: (path, body, options) => expectOk('POST', path, body, options),
    put: (path, body, options) => expectOk('PUT', path, body, options),
    delete: (path, options) => expectOk('DELETE', path, undefined, options),

    /** The first account (an admin), signed up once per run and shared by every scenario. */
    admin,

    /**
     * The fake OpenAI-style provider (./fake-upstream.js), started once per run and
     * made Parley's only connection through the admin API: OpenAI on with this one
     * URL, Ollama off, and the provider's model list kept until refreshed
     * (`ENABLE_BASE_MODELS_CACHE`) instead of fetched again every second
     * (`MODELS_CACHE_TTL`'s default), so that timed requests are served from the
     * cache. Resolves to `{ url }`, the provider's OpenAI base URL (`.../v1`).
     */
    upstream,

    /** Runs `task(i)` for i in 0..count-1, `concurrency` at a time (for seeding many records). */
    async repeat(count, task, { concurrency = 8 } = {}) {
      let next = 0;
      const lane = async () => {
        while (next < count) await task(next++);
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
    },
  };
}
