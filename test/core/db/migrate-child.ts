// Run by migration-lock.test.ts in a process of its own: migrates the SQLite database of DATA_DIR.
import { migrate, openDatabase } from '../../../src/core/db/database.js';

const database = openDatabase({ databaseUrl: null, dataDir: process.env.DATA_DIR! });
await migrate(database.db);
await database.close();
process.stdout.write('migrated\n');
