import { createReadStream } from 'node:fs';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { IdParams } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import { FileContentQuery, FileModel } from './schemas.js';
import type { FilesService } from './service.js';

/**
 * `/api/v1/files`: a stored file's record and bytes (routers/files.py), enough
 * for files plugins store to show in chats. Uploads through HTTP, lists and
 * processing come with the files issue.
 */
async function filesRoutes(app: App, ctx: AreaContext<{ files: FilesService }>): Promise<void> {
  const { files } = ctx.services;
  const { auth } = ctx;
  const tags = ['files'];

  app.get('/:id', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: FileModel } } }, (request) =>
    files.require(request.user!, request.params.id),
  );

  app.get('/:id/content', { onRequest: auth.verified, schema: { tags, params: IdParams, querystring: FileContentQuery } }, async (request, reply) => {
    const file = await files.content(request.user!, request.params.id);
    const encoded = encodeURIComponent(file.name);
    let contentType = file.contentType;
    // As the reference: PDFs and plain text show in the browser, everything else downloads unless asked otherwise.
    if (request.query.attachment) {
      reply.header('content-disposition', `attachment; filename*=UTF-8''${encoded}`);
    } else if (contentType === 'application/pdf' || file.name.toLowerCase().endsWith('.pdf')) {
      reply.header('content-disposition', `inline; filename*=UTF-8''${encoded}`);
      contentType = 'application/pdf';
    } else if (contentType !== 'text/plain') {
      reply.header('content-disposition', `attachment; filename*=UTF-8''${encoded}`);
    }
    return reply.type(contentType ?? 'application/octet-stream').send(createReadStream(file.path));
  });
}

export const filesArea = defineArea('/api/v1/files', filesRoutes);
