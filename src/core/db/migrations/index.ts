import type { Migration, MigrationProvider } from 'kysely';
import * as foundation from './0001_foundation.js';
import * as events from './0002_events.js';
import * as models from './0003_models.js';

/** Migrations in code, applied in name order at start-up. Append; never edit a released one. */
const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_events': events,
  '0003_models': models,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
