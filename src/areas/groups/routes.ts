import type { AreaContext } from '../../app.js';
import type { App } from '../../core/http/server.js';

/** TO BE COMPLETED. */
export async function groupsRoutes(_app: App, _ctx: AreaContext): Promise<void> {}
