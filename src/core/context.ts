import type { FastifyBaseLogger } from 'fastify';
import type { Env } from '../config/env.js';
import type { SettingsStore } from '../config/settings.js';
import type { AuthGuard } from './auth/guard.js';
import type { RevokedTokens } from './auth/revocations.js';
import type { TokenService } from './auth/tokens.js';
import type { ChangeFeed } from './changes.js';
import type { Clock } from './clock.js';
import type { DatabaseHandle, Db } from './db/database.js';
import type { EventBus } from './events/publish.js';
import type { UserWebhooks } from './events/user-webhooks.js';
import type { Scheduler } from './scheduler/scheduler.js';

/** The shared machinery every area's service is built from (see app.ts). */
export interface Core {
  env: Env;
  database: DatabaseHandle;
  db: Db;
  settings: SettingsStore;
  events: EventBus;
  clock: Clock;
  log: FastifyBaseLogger;
  tokens: TokenService;
  /** Sessions ended by sign-out (TokenService refuses their tokens). */
  revokedTokens: RevokedTokens;
  /** Change notices between the in-memory caches of this and other instances. */
  changes: ChangeFeed;
  /** Due work in the database, run once across instances (automations, alerts; docs/scheduler.md). */
  scheduler: Scheduler;
  /** Notices to users' own webhooks (ENABLE_USER_WEBHOOKS): answers, channel messages, alerts while they are away. */
  userWebhooks: UserWebhooks;
}

/**
 * What an area's routes receive: the core, the auth hooks, and the services the area calls.
 * Each area names those services in `S`, so its dependencies show in its own files; app.ts
 * builds them all and the compiler checks that they satisfy every area listed.
 */
export interface AreaContext<S extends object = object> {
  core: Core;
  auth: AuthGuard;
  services: S;
}
