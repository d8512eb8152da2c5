import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildParley } from '../app.js';
import { readEnv } from '../config/env.js';
import { backup } from './backup.js';
import { CommandError } from './command-error.js';
import { importOpenWebui } from './openwebui/import.js';
import { openSource } from './openwebui/source.js';

/**
 * `parley <command>`, the package's binary: scripts/parley.mjs calls `runCommand` of this
 * file's bundle, dist/parley-cli.js. Settings come from the environment as for the server (DATA_DIR,
 * DATABASE_URL, ...); `--data-dir` sets DATA_DIR.
 */
const USAGE = `usage:
  parley                                   start the server (as npm start)
  parley import-openwebui <webui.db | postgres://…> [--data-dir DIR] [--uploads DIR] [--dry-run]
                                           copy an Open WebUI 0.6–0.10 install into Parley (docs/migrating-from-open-webui.md)
  parley backup <dest> [--data-dir DIR]    a consistent copy of an embedded install, while it runs (docs/backup.md)`;

const print = (line: string) => process.stdout.write(`${line}\n`);

async function importCommand(args: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: { 'data-dir': { type: 'string' }, uploads: { type: 'string' }, 'dry-run': { type: 'boolean', default: false } },
  });
  if (positionals.length !== 1) throw new CommandError(USAGE);
  const env = readEnv({ ...process.env, ...(values['data-dir'] ? { DATA_DIR: values['data-dir'] } : {}) });
  const source = await openSource(positionals[0]!);
  try {
    const parley = await buildParley({ env, logLevel: 'warn' });
    try {
      const uploads = values.uploads ? path.resolve(values.uploads) : undefined;
      const report = await importOpenWebui(source, parley, { dryRun: values['dry-run'], uploads, log: print });
      const refused = report.tables.reduce((n, t) => n + t.unconvertible.length, 0);
      const missing = report.tables.filter((t) => t.verified !== null && t.verified < t.source - t.unconvertible.length);
      print(
        `${report.dryRun ? 'dry run' : 'import'} done in ${report.seconds.toFixed(1)} s: ${report.tables.reduce((n, t) => n + t.written, 0)} rows ${report.dryRun ? 'to write' : 'written'}, ` +
          `${report.messages} chat messages, ${refused} rows not convertible, ${report.notCarriedOver.reduce((n, t) => n + t.rows, 0)} rows of tables not carried over`,
      );
      const files = report.tables.find((t) => t.table === 'file');
      if (files && files.written > 0 && !report.dryRun) {
        print(`${files.written} files queued for extraction and indexing: Parley processes them as it runs (GET /api/v1/files/{id}/process/status)`);
      }
      return missing.length > 0 ? 1 : 0;
    } finally {
      await parley.close();
    }
  } finally {
    await source.close();
  }
}

async function backupCommand(args: string[]): Promise<number> {
  const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { 'data-dir': { type: 'string' } } });
  if (positionals.length !== 1) throw new CommandError(USAGE);
  const dataDir = path.resolve(values['data-dir'] ?? process.env.DATA_DIR ?? './data');
  await backup({ dataDir, databaseUrl: process.env.DATABASE_URL || null, destination: path.resolve(positionals[0]!), log: print });
  return 0;
}

/** Runs one command; the exit status is returned, not applied, so tests can call it. */
export async function runCommand(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  try {
    if (command === 'import-openwebui') return await importCommand(args);
    if (command === 'backup') return await backupCommand(args);
    if (command === undefined || command === 'help' || command === '--help') {
      print(USAGE);
      return 0;
    }
    throw new CommandError(`unknown command ${command}\n${USAGE}`);
  } catch (error) {
    if (error instanceof CommandError || (error as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      process.stderr.write(`parley: ${(error as Error).message}\n`);
      return 2;
    }
    throw error;
  }
}

