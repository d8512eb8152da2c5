/**
 * What a scenario's `setup(ctx)` receives: a small API client on the running
 * Parley and helpers to seed data before any timing starts.
 */
export function createContext(url) {
  async function call(method, path, body, { token, headers } = {}) {
    const response = await fetch(url + path, {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...headers,
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
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

  let admin = null;

  return {
    url,
    /** Raw calls: `{ status, body, headers }` whatever the status. */
    call,
    get: (path, options) => expectOk('GET', path, undefined, options),
    post: (path, body, options) => expectOk('POST', path, body, options),
    put: (path, body, options) => expectOk('PUT', path, body, options),
    delete: (path, options) => expectOk('DELETE', path, undefined, options),

    /** The first account (an admin), signed up once per run and shared by every scenario. */
    admin() {
      admin ??= (async () => {
        const form = { name: 'Bench Admin', email: 'admin@bench.local', password: 'Bench-password-1', profile_image_url: '' };
        const session = await expectOk('POST', '/api/v1/auths/signup', form);
        return { ...session, email: form.email, password: form.password };
      })();
      return admin;
    },

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
