import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import SQLite from 'better-sqlite3';
import { row } from '../lib/report.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const USERS = 50;
const CHATS = 5_000;
/** Question and answer pairs per chat: 5,000 chats × 20 messages = 100,000 messages. */
const TURNS = 10;
const T = 1_700_000_000;

/** The tests' Open WebUI schema (test/helpers/openwebui-schema.ts), compiled for the bench. */
async function openWebuiSchema() {
  const { build } = await import('esbuild');
  const outfile = path.join(root, '.tmp', 'bench', 'openwebui-schema.js');
  mkdirSync(path.dirname(outfile), { recursive: true });
  await build({ entryPoints: [path.join(root, 'test/helpers/openwebui-schema.ts')], outfile, bundle: true, platform: 'node', format: 'esm', logLevel: 'warning' });
  return import(pathToFileURL(outfile).href);
}

/** An Open WebUI 0.10.2 database of realistic size: 50 users with a bcrypt hash each, 5,000 chats, 100,000 messages. */
async function sourceDatabase(file) {
  const { SCHEMA, REVISION, chatJson } = await openWebuiSchema();
  const db = new SQLite(file);
  db.exec(SCHEMA['0.10.2']);
  db.prepare('INSERT INTO alembic_version VALUES (?)').run(REVISION['0.10.2']);
  const hash = '$2b$04$0123456789012345678901uGZ8Jj8l0d8mE7nKkqN1b7oC3S4m5mS';
  db.transaction(() => {
    const user = db.prepare('INSERT INTO "user" (id, email, role, name, profile_image_url, last_active_at, updated_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    const auth = db.prepare('INSERT INTO auth (id, email, password, active) VALUES (?, ?, ?, 1)');
    for (let i = 0; i < USERS; i++) {
      user.run(`u-${i}`, `user${i}@example.com`, i === 0 ? 'admin' : 'user', `User ${i}`, '', T, T, T);
      auth.run(`u-${i}`, `user${i}@example.com`, hash);
    }
    const chat = db.prepare('INSERT INTO chat (id, user_id, title, chat, created_at, updated_at, archived, pinned, meta) VALUES (?, ?, ?, ?, ?, ?, 0, 0, ?)');
    for (let i = 0; i < CHATS; i++) {
      const id = `c-${String(i).padStart(5, '0')}`;
      chat.run(id, `u-${i % USERS}`, `Chat ${i}`, JSON.stringify({ ...chatJson(id, `Chat ${i}`, TURNS), id }), T + i, T + i, '{}');
    }
  })();
  db.close();
}

/** `npx parley import-openwebui` as an operator runs it, on a fresh Parley data folder; its own report parsed. */
function runImport(source, dataDir) {
  const started = performance.now();
  const result = spawnSync(process.execPath, [path.join(root, 'scripts', 'parley.mjs'), 'import-openwebui', source, '--data-dir', dataDir], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, WEBUI_SECRET_KEY: 'bench-secret-key' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const wallSeconds = (performance.now() - started) / 1000;
  if (result.status !== 0) throw new Error(`import failed (${result.status}): ${result.stderr || result.stdout}`);
  const done = result.stdout.match(/import done in ([\d.]+) s: (\d+) rows written, (\d+) chat messages/);
  if (!done) throw new Error(`no summary in the import's output: ${result.stdout.slice(-500)}`);
  const chatLine = result.stdout.match(/^chat: .*\(([\d.]+) s\)$/m);
  return { wallSeconds, seconds: Number(done[1]), rows: Number(done[2]), messages: Number(done[3]), chatSeconds: chatLine ? Number(chatLine[1]) : NaN, output: result.stdout };
}

/**
 * Import speed (issue 25; docs/migrating-from-open-webui.md § Speed): an Open WebUI 0.10.2 SQLite
 * database of 50 users, 5,000 chats and 100,000 messages imported into a fresh embedded Parley
 * by the command, in messages per second over the whole run (reading, converting, writing chats
 * with their message and tag rows, and verifying); then the same command again, which finds
 * everything present and writes nothing.
 */
export default {
  name: 'import',
  async measure() {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-import-'));
    try {
      const source = path.join(scratch, 'webui.db');
      await sourceDatabase(source);
      const dataDir = path.join(scratch, 'parley');
      const first = runImport(source, dataDir);
      if (first.messages !== CHATS * TURNS * 2) throw new Error(`imported ${first.messages} messages, expected ${CHATS * TURNS * 2}`);
      const second = runImport(source, dataDir);
      if (second.rows !== 0) throw new Error(`the second run wrote ${second.rows} rows`);
      const rate = first.messages / first.seconds;
      return {
        rows: [
          row({ figure: 'import: messages/s (5,000 chats, 100,000 messages, SQLite to SQLite)', parley: rate, unit: 'rps' }),
          row({ figure: 'import: whole command, first run', parley: first.wallSeconds, unit: 'seconds' }),
          row({ figure: 'import: second run (nothing to write)', parley: second.wallSeconds, unit: 'seconds' }),
        ],
        details: { users: USERS, chats: CHATS, messages: first.messages, first, second: { ...second, output: undefined } },
      };
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  },
};
