import { createServer } from 'node:http';

/**
 * The floor of the upload figure: the cheapest loopback receiver Node offers,
 * a bare `http` server that reads a request's body to its end, keeps nothing,
 * and answers its size as JSON; `/health` for start-up.
 */
const server = createServer((request, response) => {
  let size = 0;
  request.on('data', (chunk) => (size += chunk.length));
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(request.url === '/health' ? '{"status":true}' : JSON.stringify({ size }));
  });
});
server.listen(Number(process.env.PORT), process.env.HOST);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
