import { pathToFileURL } from 'node:url';
import { ensureBuilt } from './built.mjs';

/**
 * What `npm start` runs: dist/parley.js, built first when it is missing or older
 * than what it is built from (built.mjs). The server runs in this process, with
 * the Node flags `npm start` gives this script.
 */
await import(pathToFileURL(ensureBuilt('parley.js')).href);
