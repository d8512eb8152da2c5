import type { FastifyRequest } from 'fastify';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import { TOKEN_COOKIE } from '../../core/auth/guard.js';
import type { UserRecord } from '../../core/auth/user.js';
import { clearCookie } from '../../core/http/cookies.js';
import { HttpError } from '../../core/http/errors.js';
import type { App } from '../../core/http/server.js';
import {
  AppConfigResponse,
  ChangelogResponse,
  HealthResponse,
  ManifestResponse,
  UsageResponse,
  VersionResponse,
  VersionUpdatesResponse,
} from './schemas.js';
import { SystemService, type SystemServices } from './service.js';

/**
 * The credential `/api/config` looks at: the Authorization header's second word
 * (any scheme, as the reference splits it), else the `token` cookie.
 */
function configCredential(request: FastifyRequest): { token: string; fromCookie: boolean } | null {
  const parts = request.headers.authorization?.split(' ');
  if (parts?.length === 2 && parts[1]) return { token: parts[1], fromCookie: false };
  const cookie = request.cookies.token;
  return cookie ? { token: cookie, fromCookie: true } : null;
}

/** App-level routes outside `/api/v1`: health, version, changelog, config, usage, manifest, OpenSearch. */
async function systemRoutes(app: App, ctx: AreaContext<SystemServices>): Promise<void> {
  const system = new SystemService(ctx.core, ctx.services);
  const tags = ['system'];

  app.get('/health', { schema: { tags, response: { 200: HealthResponse } } }, async () => ({ status: true }));
  app.get('/ready', { schema: { tags, response: { 200: HealthResponse } } }, async () => system.readiness());
  app.get('/health/db', { schema: { tags, response: { 200: HealthResponse } } }, async () => {
    await system.pingDatabase();
    return { status: true };
  });

  app.get('/api/version', { schema: { tags, response: { 200: VersionResponse } } }, async () => system.version());
  app.get('/api/version/updates', { onRequest: ctx.auth.verified, schema: { tags, response: { 200: VersionUpdatesResponse } } }, async () =>
    system.versionUpdates(),
  );
  app.get('/api/changelog', { schema: { tags, response: { 200: ChangelogResponse } } }, async () => system.changelog());

  app.get('/api/config', { schema: { tags, response: { 200: AppConfigResponse } } }, async (request, reply) => {
    const credential = configCredential(request);
    let user: UserRecord | null;
    try {
      user = await system.configUser(credential?.token ?? null);
    } catch (error) {
      // A stale session cookie would otherwise keep the frontend on its error page.
      if (error instanceof HttpError && error.statusCode === 401 && credential?.fromCookie) clearCookie(reply, TOKEN_COOKIE);
      throw error;
    }
    return system.appConfig(user);
  });

  app.get('/api/usage', { onRequest: ctx.auth.verified, schema: { tags, response: { 200: UsageResponse } } }, async (request) =>
    system.usage(request.user as UserRecord),
  );

  app.get('/manifest.json', { schema: { tags, response: { 200: ManifestResponse } } }, async () => system.manifest());
  app.get('/opensearch.xml', { schema: { tags } }, async (_request, reply) => reply.type('application/xml').send(system.opensearch()));
}

export const systemArea = defineArea(null, systemRoutes);
