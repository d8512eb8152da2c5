import { checks, defineSetting, parsers } from '../../config/settings.js';

/** The legacy single webhook (`WEBHOOK_URL`), migrated once into the webhook with id 'default' (events.md §5). */
export const LEGACY_WEBHOOK_URL = defineSetting({
  key: 'webhook_url',
  env: 'WEBHOOK_URL',
  default: '',
  check: checks.string,
});

/**
 * The webhook list where the interface (§2.5) and config export expect it. The
 * `event_webhook` table is the source of truth; this key mirrors it (without
 * secrets) after every change, and an imported value is applied to the table.
 */
export const EVENT_WEBHOOKS = defineSetting<unknown[]>({
  key: 'events.webhooks',
  default: [],
  parse: parsers.json as (raw: string) => unknown[],
  check: checks.list,
});
