import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';

/**
 * `/docs`: Swagger UI over `/openapi.json`, the page FastAPI serves for the reference,
 * with Swagger UI's files from the `swagger-ui-dist` package under `/docs/static/`
 * (the reference serves its own copies, never a CDN). Nothing is read before the first
 * visit, so the page costs start-up nothing.
 */
const ASSETS: Record<string, string> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!DOCTYPE html>
<html>
<head>
<link type="text/css" rel="stylesheet" href="/docs/static/swagger-ui.css">
<link rel="shortcut icon" href="/docs/static/favicon-32x32.png">
<title>Parley - Swagger UI</title>
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script>
const ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  layout: 'BaseLayout',
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
</script>
</body>
</html>
`;

export function registerDocs(app: FastifyInstance): void {
  let assetDir: string | undefined;

  app.get('/docs', { schema: { hide: true } }, async (_request, reply) => reply.type('text/html; charset=utf-8').send(PAGE));

  app.get<{ Params: { file: string } }>('/docs/static/:file', { schema: { hide: true } }, async (request, reply) => {
    const type = Object.hasOwn(ASSETS, request.params.file) ? ASSETS[request.params.file] : undefined;
    if (!type) return reply.code(404).send({ detail: 'Not Found' });
    assetDir ??= path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
    const content = await readFile(path.join(assetDir, request.params.file));
    return reply.type(type).header('cache-control', 'public, max-age=86400').send(content);
  });
}
