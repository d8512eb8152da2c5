import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { listenLocally } from '../../helpers/server.js';

/** Small local servers standing in for tool servers, terminal orchestrators and MCP servers. */
export interface FakeServer {
  url: string;
  requests: { method: string; path: string; headers: IncomingMessage['headers']; body: string }[];
  close(): Promise<void>;
}

export type FakeHandler = (
  request: { method: string; path: string; headers: IncomingMessage['headers']; body: string },
  response: ServerResponse,
) => void;

export async function fakeServer(handler: FakeHandler): Promise<FakeServer> {
  const requests: FakeServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const entry = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body };
      requests.push(entry);
      handler(entry, res);
    });
  });
  return {
    url: await listenLocally(server),
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Accepts connections and never answers: a server that hangs. */
export async function silentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return {
    url: await listenLocally(server),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
