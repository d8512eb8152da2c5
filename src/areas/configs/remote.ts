/**
 * The few calls the configs area makes to servers an admin is configuring
 * (tool servers, terminal orchestrators, MCP servers). Every call runs under one
 * deadline so that an unreachable or silent server turns into the reference's
 * error answer instead of a hanging request.
 */
export interface RemoteCall {
  method?: string;
  headers?: Record<string, string>;
  json?: unknown;
  signal: AbortSignal;
}

export async function callRemote(url: string, call: RemoteCall): Promise<Response> {
  const headers: Record<string, string> = { ...call.headers };
  let body: string | undefined;
  if (call.json !== undefined && call.json !== null) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(call.json);
  }
  return fetch(url, { method: call.method ?? 'GET', headers, body, signal: call.signal, redirect: 'follow' });
}

/** The body as JSON, or the text when it is not JSON. */
export async function bodyOf(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export interface ToolSpec {
  name: string;
  description: string | null;
  parameters: unknown;
}

interface JsonRpcMessage {
  id?: number | string | null;
  result?: Record<string, unknown>;
  error?: { message?: string };
}

/** Reads an SSE body until the JSON-RPC answer with `id` arrives (the stream may stay open). */
async function answerFromEventStream(response: Response, id: number): Promise<JsonRpcMessage | null> {
  if (!response.body) return null;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (value) buffer += decoder.decode(value, { stream: true });
      let boundary = buffer.search(/\r?\n\r?\n/);
      while (boundary >= 0) {
        const event = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary).replace(/^\r?\n\r?\n/, '');
        const data = event
          .split(/\r?\n/)
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n');
        if (data) {
          const message = JSON.parse(data) as JsonRpcMessage;
          if (message.id === id) return message;
        }
        boundary = buffer.search(/\r?\n\r?\n/);
      }
      if (done) return null;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/**
 * Lists the tools of an MCP server over the streamable HTTP transport
 * (initialize, initialized, tools/list), as the reference's MCP client does to
 * verify a connection. Specs come back in the reference's `{name, description,
 * parameters}` form.
 */
export async function listMcpToolSpecs(url: string, headers: Record<string, string>, signal: AbortSignal): Promise<ToolSpec[]> {
  let sessionId: string | null = null;
  let nextId = 1;

  const send = async (method: string, params: Record<string, unknown>, notification = false) => {
    const id = nextId++;
    const response = await callRemote(url, {
      method: 'POST',
      headers: {
        accept: 'application/json, text/event-stream',
        ...headers,
        ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
      },
      json: notification ? { jsonrpc: '2.0', method, params } : { jsonrpc: '2.0', id, method, params },
      signal,
    });
    if (!response.ok) throw new Error(`MCP ${method} answered HTTP ${response.status}`);
    sessionId ??= response.headers.get('mcp-session-id');
    if (notification) {
      await response.body?.cancel();
      return {};
    }
    const message = (response.headers.get('content-type') ?? '').includes('text/event-stream')
      ? await answerFromEventStream(response, id)
      : ([await bodyOf(response)].flat() as JsonRpcMessage[]).find((m) => m?.id === id) ?? null;
    if (!message) throw new Error(`MCP ${method} gave no answer`);
    if (message.error) throw new Error(message.error.message ?? `MCP ${method} failed`);
    return message.result ?? {};
  };

  try {
    await send('initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'Parley', version: '1' } });
    await send('notifications/initialized', {}, true);
    const specs: ToolSpec[] = [];
    let cursor: unknown;
    do {
      const result = await send('tools/list', cursor ? { cursor } : {});
      for (const tool of (result.tools as Record<string, unknown>[] | undefined) ?? []) {
        specs.push({ name: String(tool.name), description: (tool.description as string | undefined) ?? null, parameters: tool.inputSchema });
      }
      cursor = result.nextCursor;
    } while (cursor);
    return specs;
  } finally {
    // Ends the server-side session; a failure here does not change the answer.
    if (sessionId) {
      callRemote(url, { method: 'DELETE', headers: { ...headers, 'mcp-session-id': sessionId }, signal })
        .then((r) => r.body?.cancel())
        .catch(() => undefined);
    }
  }
}

/** RFC 8414 / OpenID discovery locations for a server, in the reference's order. */
export function wellKnownUrls(serverUrl: string): string[] {
  const parsed = new URL(serverUrl);
  const base = parsed.origin;
  const urls: string[] = [];
  if (parsed.pathname && parsed.pathname !== '/') {
    const path = parsed.pathname.replace(/\/+$/, '');
    urls.push(
      `${base}/.well-known/oauth-authorization-server${path}`,
      `${base}/.well-known/openid-configuration${path}`,
      `${base}${path}/.well-known/openid-configuration`,
    );
  }
  urls.push(`${base}/.well-known/oauth-authorization-server`, `${base}/.well-known/openid-configuration`);
  return urls;
}
