import { randomUUID } from 'node:crypto';
import { WebSocket, fetch } from 'undici';
import type { SettingsStore } from '../../config/settings.js';

/**
 * Runs code on a Jupyter server (utils/code_interpreter.py): a kernel is
 * started over the REST API (`POST api/kernels`), the code sent as an
 * `execute_request` on the kernel's websocket, the replies of that request
 * gathered until the kernel is idle again, and the kernel deleted.
 */
export interface JupyterOptions {
  url: string;
  /** `token` (sent as `?token=`) or `password` (the server's login form, then its cookies and XSRF header). */
  auth: 'token' | 'password' | 'none';
  token?: string;
  password?: string;
  timeoutSeconds: number;
  signal?: AbortSignal;
}

/** The connection settings of `code_interpreter.jupyter.*` or `code_execution.jupyter.*`. */
export function jupyterSettings(settings: SettingsStore, scope: 'code_interpreter' | 'code_execution'): JupyterOptions {
  const auth = settings.get<string | null>(`${scope}.jupyter.auth`);
  return {
    url: settings.get<string | null>(`${scope}.jupyter.url`) ?? '',
    auth: auth === 'token' || auth === 'password' ? auth : 'none',
    token: settings.get<string | null>(`${scope}.jupyter.auth_token`) ?? '',
    password: settings.get<string | null>(`${scope}.jupyter.auth_password`) ?? '',
    timeoutSeconds: settings.get<number | null>(`${scope}.jupyter.timeout`) ?? 60,
  };
}

/** What the reference's ResultModel holds: printed text, error text, and the values and images shown. */
export interface JupyterResult {
  stdout: string;
  stderr: string;
  result: string;
}

interface Session {
  base: URL;
  query: URLSearchParams;
  headers: Record<string, string>;
}

export async function runOnJupyter(code: string, options: JupyterOptions): Promise<JupyterResult> {
  const result: JupyterResult = { stdout: '', stderr: '', result: '' };
  const timeoutMs = Math.max(1, options.timeoutSeconds) * 1000;
  let session: Session | null = null;
  let kernelId: string | null = null;
  try {
    session = await signIn(options, timeoutMs);
    const kernel = await request(session, 'POST', 'api/kernels', timeoutMs, options.signal);
    kernelId = String((kernel as { id?: unknown }).id ?? '');
    if (!kernelId) throw new Error('the server started no kernel');
    await execute(session, kernelId, code, timeoutMs, result, options.signal);
  } catch (error) {
    result.stderr = `${result.stderr}${result.stderr ? '\n' : ''}Error: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    if (session && kernelId) await request(session, 'DELETE', `api/kernels/${kernelId}`, timeoutMs).catch(() => undefined);
  }
  return result;
}

async function signIn(options: JupyterOptions, timeoutMs: number): Promise<Session> {
  const base = new URL(options.url.endsWith('/') ? options.url : `${options.url}/`);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error('the Jupyter URL must be http(s)');
  const session: Session = { base, query: new URLSearchParams(), headers: {} };
  if (options.auth === 'token' && options.token) session.query.set('token', options.token);
  if (options.auth === 'password' && options.password) {
    const cookies = new Map<string, string>();
    const keep = (response: { headers: { getSetCookie(): string[] } }) => {
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair.indexOf('=');
        if (at > 0) cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
      }
    };
    const cookieHeader = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const page = await fetch(new URL('login', base), { signal: AbortSignal.timeout(timeoutMs) });
    keep(page);
    await page.arrayBuffer();
    const xsrf = cookies.get('_xsrf');
    if (!xsrf) throw new Error('_xsrf token not found');
    const login = await fetch(new URL('login', base), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(), 'x-xsrftoken': xsrf },
      body: new URLSearchParams({ _xsrf: xsrf, password: options.password }).toString(),
      signal: AbortSignal.timeout(timeoutMs),
    });
    keep(login);
    await login.arrayBuffer();
    if (login.status >= 400) throw new Error(`login failed (${login.status})`);
    session.headers = { cookie: cookieHeader(), 'x-xsrftoken': xsrf };
  }
  return session;
}

async function request(session: Session, method: string, path: string, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
  const url = new URL(path, session.base);
  url.search = session.query.toString();
  const signals = [AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])];
  const response = await fetch(url, { method, headers: session.headers, signal: AbortSignal.any(signals) });
  const text = await response.text();
  if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status}`);
  return text ? (JSON.parse(text) as unknown) : null;
}

/** One execute_request on the kernel's channels; the replies to it are read until the kernel reports idle or the time is up. */
function execute(session: Session, kernelId: string, code: string, timeoutMs: number, result: JupyterResult, signal?: AbortSignal): Promise<void> {
  const url = new URL(`api/kernels/${kernelId}/channels`, session.base);
  url.protocol = session.base.protocol === 'https:' ? 'wss:' : 'ws:';
  url.search = session.query.toString();
  const msgId = randomUUID().replaceAll('-', '');
  const shown: string[] = [];
  return new Promise<void>((resolve) => {
    const socket = new WebSocket(url, { headers: session.headers });
    let timer: NodeJS.Timeout;
    let finished = false;
    const finish = (error?: string) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (error) result.stderr += error;
      result.stdout = result.stdout.trim();
      result.stderr = result.stderr.trim();
      result.result = shown.join('\n').trim();
      socket.close();
      resolve();
    };
    const onAbort = () => finish('\nExecution stopped.');
    // As the reference: the time limit is for each wait on the kernel, not the whole run.
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => finish('\nExecution timed out.'), timeoutMs);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    arm();
    socket.addEventListener('open', () => {
      socket.send(
        JSON.stringify({
          header: { msg_id: msgId, msg_type: 'execute_request', username: 'user', session: randomUUID().replaceAll('-', ''), date: '', version: '5.3' },
          parent_header: {},
          metadata: {},
          content: { code, silent: false, store_history: true, user_expressions: {}, allow_stdin: false, stop_on_error: true },
          channel: 'shell',
        }),
      );
    });
    socket.addEventListener('error', () => finish('\nError: the kernel connection failed'));
    socket.addEventListener('close', () => finish());
    socket.addEventListener('message', (event) => {
      arm();
      let message: { parent_header?: { msg_id?: string }; msg_type?: string; content?: Record<string, unknown> };
      try {
        message = JSON.parse(String(event.data)) as typeof message;
      } catch {
        return;
      }
      if (message.parent_header?.msg_id !== msgId) return;
      const content = message.content ?? {};
      switch (message.msg_type) {
        case 'stream':
          if (content.name === 'stdout') result.stdout += String(content.text ?? '');
          else if (content.name === 'stderr') result.stderr += String(content.text ?? '');
          break;
        case 'execute_result':
        case 'display_data': {
          const data = (content.data ?? {}) as Record<string, unknown>;
          if (typeof data['image/png'] === 'string') shown.push(`data:image/png;base64,${data['image/png']}`);
          else if (typeof data['text/plain'] === 'string') shown.push(data['text/plain']);
          break;
        }
        case 'error':
          result.stderr += (Array.isArray(content.traceback) ? content.traceback : []).join('\n');
          break;
        case 'status':
          if (content.execution_state === 'idle') finish();
          break;
      }
    });
  });
}
