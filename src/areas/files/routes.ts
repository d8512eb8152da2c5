import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { missingFilePart, readMultipart } from '../../core/http/multipart.js';
import { parseRange } from '../../core/http/range.js';
import { IdParams } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import {
  ContentForm,
  FileContentQuery,
  FileDataContent,
  FileIdNameParams,
  FileListQuery,
  FileListResponse,
  FileModel,
  FileModelResponse,
  FileRenameForm,
  FileSearchQuery,
  FileUploadResponse,
  ProcessStatusQuery,
  UploadQuery,
} from './schemas.js';
import type { FileContent, FilesService, ReceivedUpload } from './service.js';

const Message = Type.Object({ message: Type.String() });
/**
 * Sends stored bytes under the headers the caller chose, honouring a single
 * `Range` (206, or 416 when outside the file), so audio and video can seek.
 * `nosniff`: the browser takes the declared type, never guesses HTML.
 */
function sendBytes(request: FastifyRequest, reply: FastifyReply, file: FileContent, contentType: string) {
  reply.header('accept-ranges', 'bytes').header('x-content-type-options', 'nosniff').type(contentType);
  const range = parseRange(request.headers.range, file.size);
  if (range === 'unsatisfiable') return reply.code(416).header('content-range', `bytes */${file.size}`).send();
  if (range === null) return reply.header('content-length', file.size).send(file.open());
  return reply
    .code(206)
    .header('content-range', `bytes ${range.start}-${range.end}/${file.size}`)
    .header('content-length', range.end - range.start + 1)
    .send(file.open(range));
}

const disposition = (kind: 'inline' | 'attachment', name: string) => `${kind}; filename*=UTF-8''${encodeURIComponent(name)}`;

/** An abort signal for a streamed answer: aborted when the client leaves. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => controller.abort());
  return controller.signal;
}

/** `/api/v1/files` (routers/files.py and the 0.11.0 additions: count, rename). See docs/files.md. */
async function filesRoutes(app: App, ctx: AreaContext<{ files: FilesService }>): Promise<void> {
  const { files } = ctx.services;
  const { auth } = ctx;
  const tags = ['files'];

  // Multipart, read as it arrives: the file part goes straight to storage, under FILE_MAX_SIZE.
  app.post(
    '/',
    { onRequest: auth.verified, config: { bodyClass: 'upload' }, schema: { tags, querystring: UploadQuery, response: { 200: FileUploadResponse } } },
    async (request) => {
      const body = request.body instanceof Readable ? request.body : null;
      if (!body) throw missingFilePart();
      const user = request.user!;
      const process = request.query.process;
      let received: ReceivedUpload | null = null;
      try {
        const form = await readMultipart(body, request.headers['content-type'] ?? '', 'file', async (part) => {
          received = await files.receive(user, { filename: part.filename, content: part.content, contentType: part.contentType, process });
          return received;
        });
        if (!form?.file) throw missingFilePart();
        received = null;
        return await files.record(user, form.file, form.fields.metadata);
      } finally {
        // Bytes stored before the rest of the form failed are not kept.
        if (received) await files.discard(received);
      }
    },
  );

  app.get('/', { onRequest: auth.verified, schema: { tags, querystring: FileListQuery, response: { 200: FileListResponse } } }, (request) =>
    files.list(request.user!, request.query.page, request.query.content),
  );

  app.get('/search', { onRequest: auth.verified, schema: { tags, querystring: FileSearchQuery, response: { 200: Type.Array(FileModelResponse) } } }, (request) =>
    files.search(request.user!, request.query.filename, request.query),
  );

  app.get('/count', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Integer() } } }, (request) => files.count(request.user!));

  app.delete('/all', { onRequest: auth.admin, schema: { tags, response: { 200: Message } } }, async (request) => {
    await files.deleteAll(request.user!);
    return { message: 'All files deleted successfully' };
  });

  app.get('/:id', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: FileModel } } }, (request) =>
    files.require(request.user!, request.params.id),
  );

  app.get('/:id/process/status', { onRequest: auth.verified, schema: { tags, params: IdParams, querystring: ProcessStatusQuery } }, async (request, reply) => {
    if (!request.query.stream) return files.processStatus(request.user!, request.params.id);
    const events = files.processStatusEvents(request.user!, request.params.id, clientGone(reply));
    // The first step runs the access check, so a refusal is an ordinary error answer.
    const first = await events.next();
    async function* all() {
      if (!first.done) yield first.value;
      yield* events;
    }
    return reply.type('text/event-stream').header('cache-control', 'no-cache').send(Readable.from(all()));
  });

  app.get('/:id/data/content', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: FileDataContent } } }, (request) =>
    files.dataContent(request.user!, request.params.id),
  );

  app.post(
    '/:id/data/content/update',
    { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, params: IdParams, body: ContentForm, response: { 200: FileDataContent } } },
    (request) => files.updateDataContent(request.user!, request.params.id, request.body.content),
  );

  app.get('/:id/content', { onRequest: auth.verified, schema: { tags, params: IdParams, querystring: FileContentQuery } }, async (request, reply) => {
    const file = await files.content(request.user!, request.params.id);
    let contentType = file.contentType ?? 'application/octet-stream';
    // As the reference: PDFs and plain text show in the browser, everything else downloads unless asked otherwise.
    if (request.query.attachment) {
      reply.header('content-disposition', disposition('attachment', file.name));
    } else if (contentType === 'application/pdf' || file.name.toLowerCase().endsWith('.pdf')) {
      reply.header('content-disposition', disposition('inline', file.name));
      contentType = 'application/pdf';
    } else if (contentType !== 'text/plain') {
      reply.header('content-disposition', disposition('attachment', file.name));
    }
    return sendBytes(request, reply, file, contentType);
  });

  // Only an admin's file, as the reference; sandboxed so its scripts never run as the app's origin.
  app.get('/:id/content/html', { onRequest: auth.verified, schema: { tags, params: IdParams } }, async (request, reply) => {
    const file = await files.htmlContent(request.user!, request.params.id);
    reply.header('content-security-policy', 'sandbox allow-scripts allow-forms allow-popups');
    return sendBytes(request, reply, file, file.contentType ?? 'text/html');
  });

  app.get('/:id/content/:file_name', { onRequest: auth.verified, schema: { tags, params: FileIdNameParams } }, async (request, reply) => {
    const file = await files.content(request.user!, request.params.id);
    reply.header('content-disposition', disposition('attachment', file.name));
    return sendBytes(request, reply, file, file.contentType ?? 'application/octet-stream');
  });

  app.post('/:id/rename', { onRequest: auth.verified, schema: { tags, params: IdParams, body: FileRenameForm, response: { 200: FileModel } } }, (request) =>
    files.rename(request.user!, request.params.id, request.body.filename),
  );

  app.delete('/:id', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: Message } } }, async (request) => {
    await files.delete(request.user!, request.params.id);
    return { message: 'File deleted successfully' };
  });
}

export const filesArea = defineArea('/api/v1/files', filesRoutes);
