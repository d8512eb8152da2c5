import type { AreaContext } from './context.js';
import type { App } from './http/server.js';

/**
 * One area of the interface: its routes, where they are mounted, and (in `S`) the services they
 * call. Each area exports its own from its routes.ts; app.ts lists them.
 */
export interface Area<S extends object = object> {
  /** The path every route of the area starts with; null for routes at the root. */
  prefix: string | null;
  routes: (app: App, ctx: AreaContext<S>) => Promise<void>;
}

export function defineArea<S extends object>(prefix: string | null, routes: (app: App, ctx: AreaContext<S>) => Promise<void>): Area<S> {
  return { prefix, routes };
}

/** Mounts every area under its prefix, in the order listed. */
export async function mountAreas<S extends object>(app: App, ctx: AreaContext<S>, areas: readonly Area<S>[]): Promise<void> {
  for (const area of areas) {
    await app.register(async (scope) => area.routes(scope as App, ctx), area.prefix ? { prefix: area.prefix } : {});
  }
}
