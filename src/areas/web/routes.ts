import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { ProcessUrlForm, ProcessUrlQuery, ProcessUrlResponse, SearchForm, WebSearchResponse } from './schemas.js';
import type { WebService } from './service.js';

/** Web and YouTube fetching and web search, under `/api/v1/retrieval` (routers/retrieval.py). */
async function webRoutes(app: App, ctx: AreaContext<{ web: WebService }>): Promise<void> {
  const { web } = ctx.services;
  const { auth } = ctx;
  const tags = ['retrieval'];
  const processUrl = { onRequest: auth.verified, schema: { tags, body: ProcessUrlForm, querystring: ProcessUrlQuery, response: { 200: ProcessUrlResponse } } };

  // The reference serves both paths with one handler: a YouTube address is a transcript either way.
  for (const path of ['/process/web', '/process/youtube']) {
    app.post(path, processUrl, (request) => web.processUrl(request.user!, request.body, request.query.process, request.query.overwrite));
  }

  app.post('/process/web/search', { onRequest: auth.verified, schema: { tags, body: SearchForm, response: { 200: WebSearchResponse } } }, (request) =>
    web.processWebSearch(request.user!, request.body.queries),
  );
}

export const webArea = defineArea('/api/v1/retrieval', webRoutes);
