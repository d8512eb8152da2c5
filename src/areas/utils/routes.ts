import { createReadStream } from 'node:fs';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { ChatTitleMessagesForm, CodeForm, FormattedCode, GravatarQuery } from './schemas.js';
import type { UtilsService } from './service.js';

/** `/api/v1/utils` (routers/utils.py); `/code/execute` is served by the code-execution area. */
async function utilsRoutes(app: App, ctx: AreaContext<{ utils: UtilsService }>): Promise<void> {
  const { utils } = ctx.services;
  const { auth } = ctx;
  const tags = ['utils'];

  app.get('/gravatar', { onRequest: auth.verified, schema: { tags, querystring: GravatarQuery } }, (request, reply) =>
    // A bare JSON string, as FastAPI answers a returned str.
    reply.type('application/json').send(JSON.stringify(utils.gravatar(request.query.email))),
  );

  app.post('/code/format', { onRequest: auth.admin, schema: { tags, body: CodeForm, response: { 200: FormattedCode } } }, (request) =>
    utils.formatCode(request.user!, request.body.code),
  );

  app.post('/pdf', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: ChatTitleMessagesForm } }, async (request, reply) => {
    const pdf = await utils.chatPdf(request.body);
    return reply.type('application/pdf').header('content-disposition', 'attachment;filename=chat.pdf').send(pdf);
  });

  app.get('/db/download', { onRequest: auth.admin, schema: { tags } }, async (_request, reply) => {
    const copy = await utils.databaseCopy();
    const stream = createReadStream(copy.file);
    stream.once('close', () => void copy.remove());
    return reply.type('application/octet-stream').header('content-disposition', 'attachment; filename="webui.db"').send(stream);
  });
}

export const utilsArea = defineArea('/api/v1/utils', utilsRoutes);
