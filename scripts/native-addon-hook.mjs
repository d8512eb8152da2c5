import { existsSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * Loaded with `NODE_OPTIONS=--import=<this file>` by scripts/test.sh for its run on the
 * second Node runtime (scripts/other-node.sh): better-sqlite3's native addon in node_modules is
 * compiled for the machine's Node, so a require() of it is sent to the copy compiled for this
 * Node's ABI, when there is one. bcrypt's addon uses Node-API, which every Node accepts.
 */
const binding = new URL(`../.tmp/better-sqlite3-abi${process.versions.modules}/build/Release/better_sqlite3.node`, import.meta.url);

if (existsSync(binding)) {
  if (typeof registerHooks !== 'function') throw new Error(`Node ${process.version} has no module.registerHooks (Node 22.15 or later)`);
  const redirected = pathToFileURL(binding.pathname).href;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context);
      return resolved.url.endsWith('/node_modules/better-sqlite3/build/Release/better_sqlite3.node') ? { ...resolved, url: redirected } : resolved;
    },
  });
}
