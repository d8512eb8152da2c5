import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { CreateImageForm, EditImageBody, ImageList, ImageModelList, ImagesConfig } from './schemas.js';
import type { ImagesService } from './service.js';

/** `/api/v1/images` (routers/images.py). */
async function imagesRoutes(app: App, ctx: AreaContext<{ images: ImagesService }>): Promise<void> {
  const { images } = ctx.services;
  const { auth } = ctx;
  const tags = ['images'];

  app.get('/config', { onRequest: auth.admin, schema: { tags, response: { 200: ImagesConfig } } }, () => images.config());
  app.post('/config/update', { onRequest: auth.admin, schema: { tags, body: ImagesConfig, response: { 200: ImagesConfig } } }, (request) =>
    images.updateConfig(request.user!, request.body),
  );
  app.get('/config/url/verify', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Boolean() } } }, () => images.verifyUrl());
  app.get('/models', { onRequest: auth.verified, schema: { tags, response: { 200: ImageModelList } } }, () => images.models());
  app.post('/generations', { onRequest: auth.verified, schema: { tags, body: CreateImageForm, response: { 200: ImageList } } }, (request) =>
    images.generate(request.user!, request.body),
  );
  // The images to edit may come as data URIs.
  app.post('/edit', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: EditImageBody, response: { 200: ImageList } } }, (request) =>
    images.edit(request.user!, 'form_data' in request.body ? request.body.form_data : request.body),
  );
}

export const imagesArea = defineArea('/api/v1/images', imagesRoutes);
