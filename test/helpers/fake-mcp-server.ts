import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { listenLocally } from './server.js';

/**
 * An MCP server over streamable HTTP, built with the SDK's McpServer and
 * StreamableHTTPServerTransport (stateless: a server per request): `add` answers
 * JSON text, `describe` text and an image, and `hang` never answers. Every HTTP
 * request's headers are recorded, and the calls that were cancelled are counted.
 */
export interface FakeMcpServer {
  url: string;
  headers: IncomingHttpHeaders[];
  calls: { name: string; args: unknown }[];
  cancelled: number;
  close(): Promise<void>;
}

export async function startFakeMcpServer(): Promise<FakeMcpServer> {
  const fake: Omit<FakeMcpServer, 'url' | 'close'> = { headers: [], calls: [], cancelled: 0 };
  const build = () => {
    const mcp = new McpServer({ name: 'fake-mcp', version: '1.0.0' });
    mcp.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => {
      fake.calls.push({ name: 'add', args: { a, b } });
      return { content: [{ type: 'text', text: JSON.stringify({ sum: a + b }) }] };
    });
    mcp.registerTool('describe', { description: 'Describes a thing', inputSchema: { thing: z.string() } }, async ({ thing }) => {
      fake.calls.push({ name: 'describe', args: { thing } });
      return { content: [{ type: 'text', text: `A ${thing}.` }, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }] };
    });
    mcp.registerTool('hang', { description: 'Never answers' }, async (extra) => {
      fake.calls.push({ name: 'hang', args: {} });
      await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve()));
      fake.cancelled++;
      return { content: [] };
    });
    return mcp;
  };
  const server: Server = createServer(async (req, res) => {
    fake.headers.push(req.headers);
    const mcp = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  const url = `${await listenLocally(server)}/mcp`;
  return Object.assign(fake as FakeMcpServer, {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
