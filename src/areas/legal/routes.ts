import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';

/**
 * The reference's frontend build (a fork of Open WebUI) gates the app on
 * `/api/v1/legal/status` and shows a terms page when it fails. Parley has no legal
 * documents for users to accept, so it answers that none are required.
 */
const LegalDoc = Type.Object({
  key: Type.String(),
  title: Type.String(),
  url: Type.String(),
  version: Type.String(),
  required: Type.Boolean(),
});
const LegalStatusResponse = Type.Object({ docs: Type.Array(LegalDoc), needs_accept: Type.Boolean(), server_time: Type.Integer() });
const LegalRequirementsResponse = Type.Object({ docs: Type.Array(LegalDoc), server_time: Type.Integer() });
const AcceptLegalDocsForm = Type.Object({
  keys: Type.Optional(Type.Array(Type.String())),
  method: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
const AcceptLegalDocsResponse = Type.Object({ accepted: Type.Array(Type.Object({}, { additionalProperties: true })), status: LegalStatusResponse });

async function legalRoutes(app: App, ctx: AreaContext): Promise<void> {
  const status = () => ({ docs: [], needs_accept: false, server_time: ctx.core.clock.now() });

  app.get('/status', { onRequest: ctx.auth.current, schema: { tags: ['legal'], response: { 200: LegalStatusResponse } } }, async () => status());

  app.get('/requirements', { schema: { tags: ['legal'], response: { 200: LegalRequirementsResponse } } }, async () => ({
    docs: [],
    server_time: ctx.core.clock.now(),
  }));

  app.post(
    '/accept',
    { onRequest: ctx.auth.current, schema: { tags: ['legal'], body: AcceptLegalDocsForm, response: { 200: AcceptLegalDocsResponse } } },
    async () => ({ accepted: [], status: status() }),
  );
}

export const legalArea = defineArea('/api/v1/legal', legalRoutes);
