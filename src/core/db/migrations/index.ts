import type { Migration, MigrationProvider } from 'kysely';
import * as foundation from './0001_foundation.js';
import * as events from './0002_events.js';
import * as models from './0003_models.js';
import * as chats from './0004_chats.js';
import * as tools from './0005_tools.js';
import * as files from './0006_files.js';
import * as revokedTokens from './0007_revoked_tokens.js';
import * as prompts from './0008_prompts.js';
import * as fileJobs from './0009_file_jobs.js';
import * as retrieval from './0010_retrieval.js';
import * as knowledge from './0011_knowledge.js';
import * as notes from './0012_notes.js';
import * as memories from './0013_memories.js';
import * as functions from './0014_functions.js';
import * as skills from './0015_skills.js';
import * as channels from './0016_channels.js';
import * as scheduler from './0017_scheduler.js';
import * as calendar from './0018_calendar.js';
import * as evaluations from './0019_evaluations.js';
import * as userSessionCutoffs from './0020_user_session_cutoffs.js';
import * as retrievalTitles from './0021_retrieval_titles.js';

/** Migrations in code, applied in name order at start-up. Append; never edit a released one. */
const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_events': events,
  '0003_models': models,
  '0004_chats': chats,
  '0005_tools': tools,
  '0006_files': files,
  '0007_revoked_tokens': revokedTokens,
  '0008_prompts': prompts,
  '0009_file_jobs': fileJobs,
  '0010_retrieval': retrieval,
  '0011_knowledge': knowledge,
  '0012_notes': notes,
  '0013_memories': memories,
  '0014_functions': functions,
  '0015_skills': skills,
  '0016_channels': channels,
  '0017_scheduler': scheduler,
  '0018_calendar': calendar,
  '0019_evaluations': evaluations,
  '0020_user_session_cutoffs': userSessionCutoffs,
  '0021_retrieval_titles': retrievalTitles,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
