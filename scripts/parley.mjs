#!/usr/bin/env node
import { pathToFileURL } from 'node:url';
import { ensureBuilt } from './built.mjs';

/**
 * The package's binary, `parley` (`npx parley …` in a checkout): with no command it
 * starts the server as `npm start` does; otherwise it runs the command from
 * dist/parley-cli.js (src/cli/main.ts), built first when needed.
 */
const [command] = process.argv.slice(2);
if (command === undefined || command === 'serve') {
  await import('./start.mjs');
} else {
  const { runCommand } = await import(pathToFileURL(ensureBuilt('parley-cli.js')).href);
  process.exitCode = await runCommand(process.argv.slice(2));
}
