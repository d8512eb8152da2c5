import { readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../../core/http/server.js';

/**
 * Serves a built Open WebUI frontend (FRONTEND_BUILD_DIR) the way the reference's
 * SPA mount does: exact files from the build, `index.html` for `/` and for every
 * other GET/HEAD path the server does not know, except paths ending in `.js` (a
 * stale chunk must fail loudly so the app reloads). Unknown API paths never reach
 * this (they answer JSON 404, see core/http/server.ts).
 *
 * Each top-level entry of the build gets its own route (`/favicon.png`,
 * `/_app/*`, `/static/*`, ...) instead of one catch-all, so API paths keep their
 * 404/405 answers and the dynamic `/manifest.json` and `/opensearch.xml` win.
 */
export interface Frontend {
  routes(app: App): Promise<void>;
  fallback(request: FastifyRequest, reply: FastifyReply): Promise<boolean>;
}

/** The SPA shell and the version file the app polls must always be fetched fresh. */
const NO_CACHE = 'no-cache, no-store, must-revalidate';
/** Hashed chunks never change under one name. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Mounts that are plain file servers in the reference: a missing file there is a 404, not the app. */
const NO_FALLBACK_PREFIXES = ['/static/', '/pyodide/'];

function headersFor(urlPath: string): Record<string, string> {
  const headers: Record<string, string> = {};
  if (urlPath === '/index.html' || urlPath === '/_app/version.json') headers['cache-control'] = NO_CACHE;
  else if (urlPath.startsWith('/_app/immutable/')) headers['cache-control'] = IMMUTABLE;
  if (/\.m?js$/.test(urlPath)) headers['content-type'] = 'text/javascript; charset=utf-8';
  if (urlPath.startsWith('/pyodide/')) headers['access-control-allow-origin'] = '*';
  return headers;
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

export function createFrontend(dir: string | null): Frontend | null {
  if (!dir || !isDirectory(dir)) return null;
  const root = path.resolve(dir);
  const indexFile = path.join(root, 'index.html');

  async function sendIndex(reply: FastifyReply): Promise<boolean> {
    let html: Buffer;
    try {
      html = await readFile(indexFile);
    } catch {
      return false;
    }
    await reply.code(200).header('cache-control', NO_CACHE).type('text/html; charset=utf-8').send(html);
    return true;
  }

  return {
    async routes(app: App) {
      // Loaded only when there is a frontend to serve (start-up time).
      const { default: fastifyStatic } = await import('@fastify/static');
      await app.register(fastifyStatic, { root, serve: false, index: false });
      app.addHook('onSend', async (request, reply, payload) => {
        if (reply.statusCode < 400) reply.headers(headersFor(request.url.split('?')[0]));
        return payload;
      });

      for (const entry of readdirSync(root, { withFileTypes: true })) {
        const name = entry.name;
        if (entry.isDirectory()) {
          const url = `/${name}/*`;
          if (app.hasRoute({ method: 'GET', url })) continue;
          app.get(url, { schema: { hide: true } }, async (request, reply) => {
            const rest = (request.params as { '*': string })['*'];
            // Directories have no listing; like unknown files they fall through to the app shell.
            if (rest === '' || rest.endsWith('/') || rest.split('/').includes('..')) return reply.callNotFound();
            return reply.sendFile(`${name}/${rest}`);
          });
        } else if (entry.isFile()) {
          const url = `/${name}`;
          // Routes the server already answers (the dynamic manifest and OpenSearch description) win.
          if (app.hasRoute({ method: 'GET', url })) continue;
          app.get(url, { schema: { hide: true } }, async (_request, reply) => reply.sendFile(name));
        }
      }
    },

    async fallback(request, reply) {
      let urlPath: string;
      try {
        urlPath = decodeURIComponent(request.url.split('?')[0]);
      } catch {
        return false;
      }
      if (urlPath.endsWith('.js')) return false;
      if (NO_FALLBACK_PREFIXES.some((prefix) => urlPath.startsWith(prefix))) return false;
      return sendIndex(reply);
    },
  };
}
