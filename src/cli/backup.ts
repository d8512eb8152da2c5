import { cpSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { openDatabase } from '../core/db/database.js';
import { CommandError } from './command-error.js';

export interface BackupOptions {
  /** DATA_DIR of the install (its webui.db, vector_db/retrieval.db, uploads/, .webui_secret_key). */
  dataDir: string;
  databaseUrl: string | null;
  destination: string;
  log?: (line: string) => void;
}

export interface BackupResult {
  files: string[];
  uploads: number;
}

/**
 * `parley backup <dest>`: a consistent copy of an embedded install while it runs
 * (docs/backup.md). The databases are copied with SQLite's online backup, page by
 * page under their own read transactions, so writes by the running server go on;
 * the uploads are copied after the main database, so every file a copied row names
 * is there (a file uploaded meanwhile is copied too, without a row: harmless).
 */
export async function backup(options: BackupOptions): Promise<BackupResult> {
  const log = options.log ?? (() => undefined);
  const { dataDir, destination } = options;
  if (options.databaseUrl && /^postgres(ql)?:\/\//.test(options.databaseUrl)) {
    throw new CommandError('parley backup copies an embedded (SQLite) install; this one uses PostgreSQL (DATABASE_URL): back it up with pg_dump, and copy DATA_DIR/uploads');
  }
  const databaseFile = options.databaseUrl?.startsWith('sqlite:') ? options.databaseUrl.replace(/^sqlite:(\/\/)?/, '') : path.join(dataDir, 'webui.db');
  if (!existsSync(databaseFile)) throw new CommandError(`No Parley database at ${databaseFile} (set DATA_DIR or --data-dir to the install's data folder)`);
  if (existsSync(destination) && (!statSync(destination).isDirectory() || readdirSync(destination).length > 0)) {
    throw new CommandError(`${destination} exists and is not an empty folder: a backup goes into a new folder`);
  }
  mkdirSync(destination, { recursive: true, mode: 0o700 });
  const files: string[] = [];

  const database = openDatabase({ databaseUrl: options.databaseUrl, dataDir });
  try {
    log('backup: webui.db');
    await database.backupTo!(path.join(destination, 'webui.db'));
    files.push('webui.db');
  } finally {
    await database.close();
  }

  const retrieval = path.join(dataDir, 'vector_db', 'retrieval.db');
  if (existsSync(retrieval)) {
    log('backup: vector_db/retrieval.db');
    mkdirSync(path.join(destination, 'vector_db'), { mode: 0o700 });
    // Pages only: the sqlite-vec tables need no extension loaded to be copied.
    const store = new SQLite(retrieval, { readonly: true, fileMustExist: true });
    try {
      await store.backup(path.join(destination, 'vector_db', 'retrieval.db'));
    } finally {
      store.close();
    }
    files.push('vector_db/retrieval.db');
  }

  const secret = path.join(dataDir, '.webui_secret_key');
  if (existsSync(secret)) {
    cpSync(secret, path.join(destination, '.webui_secret_key'), { preserveTimestamps: true });
    files.push('.webui_secret_key');
  }

  let uploads = 0;
  const uploadsDir = path.join(dataDir, 'uploads');
  if (existsSync(uploadsDir)) {
    log('backup: uploads/');
    // A file removed while the folder is read is simply not in the copy.
    cpSync(uploadsDir, path.join(destination, 'uploads'), {
      recursive: true,
      preserveTimestamps: true,
      filter: (source) => {
        const exists = existsSync(source);
        if (exists && statSync(source).isFile()) uploads += 1;
        return exists;
      },
    });
    files.push('uploads/');
  }
  log(`backup: done (${files.join(', ')}; ${uploads} uploaded files) in ${destination}`);
  return { files, uploads };
}
