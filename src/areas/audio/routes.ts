import { Readable } from 'node:stream';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { missingFilePart, readMultipart } from '../../core/http/multipart.js';
import { JsonObject } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';
import { AudioConfigForm, AudioConfigResponse, ModelsResponse, TranscriptionResponse, VoicesResponse } from './schemas.js';
import type { AudioService, ReceivedRecording } from './service.js';

/** `/api/v1/audio` (routers/audio.py). See docs/audio.md. */
async function audioRoutes(app: App, ctx: AreaContext<{ audio: AudioService }>): Promise<void> {
  const { audio } = ctx.services;
  const { auth } = ctx;
  const tags = ['audio'];

  app.get('/config', { onRequest: auth.admin, schema: { tags, response: { 200: AudioConfigResponse } } }, () => audio.config());
  app.post('/config/update', { onRequest: auth.admin, schema: { tags, body: AudioConfigForm, response: { 200: AudioConfigResponse } } }, (request) =>
    audio.updateConfig(request.user!, request.body),
  );

  // Multipart, read as it arrives: the type and extension are checked before a byte is kept, the size by FILE_MAX_SIZE.
  app.post('/transcriptions', { onRequest: auth.verified, config: { bodyClass: 'upload' }, schema: { tags, response: { 200: TranscriptionResponse } } }, async (request) => {
    const user = request.user!;
    await audio.authorizeTranscription(user);
    const body = request.body instanceof Readable ? request.body : null;
    if (!body) throw missingFilePart();
    let received: ReceivedRecording | null = null;
    try {
      const form = await readMultipart(body, request.headers['content-type'] ?? '', 'file', async (part) => {
        received = await audio.receiveRecording(part.filename, part.contentType, part.content);
        return received;
      });
      if (!form?.file) throw missingFilePart();
      received = null;
      return await audio.transcribeRecording(user, form.file, form.fields.language ?? null);
    } finally {
      // A recording received before the rest of the form failed is not kept.
      if (received) await audio.discardRecording(received);
    }
  });

  app.post('/speech', { onRequest: auth.verified, schema: { tags, body: JsonObject() } }, async (request, reply) =>
    reply.type('audio/mpeg').send(await audio.speech(request.user!, request.body as Record<string, unknown>)),
  );

  app.get('/models', { onRequest: auth.verified, schema: { tags, response: { 200: ModelsResponse } } }, () => audio.models());
  app.get('/voices', { onRequest: auth.verified, schema: { tags, response: { 200: VoicesResponse } } }, () => audio.voices());
}

export const audioArea = defineArea('/api/v1/audio', audioRoutes);
