import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

/**
 * The floor: a bare Fastify server (default options, no plugins, no logging)
 * answering one scenario's method and path with the payload Parley returned for
 * it, so the ratio Parley/floor shows what Parley adds on top of Node and Fastify.
 * Argument: a JSON file `{ method, path, status, contentType, json, text }`, or none
 * for a server with `/health` only (start-to-ready and idle memory).
 */
const route = process.argv[2] ? JSON.parse(readFileSync(process.argv[2], 'utf8')) : null;
const app = Fastify();

app.get('/health', async () => ({ status: true }));

if (route) {
  const path = route.path.split('?')[0];
  app.route({
    method: route.method,
    url: path,
    // A JSON answer is returned as an object, so it is serialised per request as a plain route would.
    handler: route.json !== undefined
      ? async (_request, reply) => reply.code(route.status).send(route.json)
      : async (_request, reply) => reply.code(route.status).type(route.contentType).send(route.text),
  });
}

await app.listen({ host: process.env.HOST, port: Number(process.env.PORT) });
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
