import authsSession from './auths-session.js';
import chatsList from './chats-list.js';
import toolsList from './tools-list.js';
import version from './version.js';

/**
 * Every scenario the bench loads, in order (setups run in this order on one
 * Parley). A scenario is `{ name, request?, setup?(ctx), rpsRatioTarget? }`:
 * `setup` seeds data through `ctx` (see ../lib/context.js) and returns the
 * request `{ method, path, headers, body }`, overriding the static `request`.
 * The floor's payload is Parley's own answer to that request, taken after setup.
 * `rpsRatioTarget` is the least Parley/floor requests-per-second ratio (default 0.7).
 */
export const scenarios = [version, authsSession, toolsList, chatsList];
