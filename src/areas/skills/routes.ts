import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { JsonObject } from '../../core/http/schema.js';
import type { App } from '../../core/http/server.js';

/**
 * Skills are not stored by Parley yet, so the list is empty. The web frontend reads
 * it whenever a chat is opened or started and treats a failure as "the chat could
 * not be loaded" (it goes back to `/`).
 */
async function skillsRoutes(app: App, ctx: AreaContext): Promise<void> {
  app.get('/', { onRequest: ctx.auth.verified, schema: { tags: ['skills'], response: { 200: Type.Array(JsonObject()) } } }, async () => []);
}

export const skillsArea = defineArea('/api/v1/skills', skillsRoutes);
