import { checks, defineSetting, parsers } from '../../config/settings.js';
import { normalizeEventFilters, normalizeTargets, WebhookRuleError } from '../../core/events/filters.js';
import { UrlGuard, UrlRefusedError, urlPolicyFromEnv } from '../../core/http/url-guard.js';
import { schemaProblem } from '../../core/http/validation.js';
import { EventWebhookForm } from './schemas.js';

type Env = Record<string, string | undefined>;

/** The webhook routes' URL check (allow-list, EVENT_WEBHOOK_ALLOW_LOCAL, filter list, DNS) as a problem message. */
async function urlProblem(url: string, guard: UrlGuard): Promise<string | null> {
  try {
    await guard.check(url);
    return null;
  } catch (error) {
    if (error instanceof UrlRefusedError) return `url ${JSON.stringify(url)} is not an allowed webhook target (${error.message})`;
    throw error;
  }
}

const webhookFormProblem = schemaProblem(EventWebhookForm);

/** What POST /api/events/webhooks checks of a webhook: the form, the URL, the event filters and the targets. */
async function webhookProblem(entry: unknown, guard: UrlGuard): Promise<string | null> {
  const shape = webhookFormProblem(entry);
  if (shape) return shape;
  const { url, events, targets } = entry as EventWebhookForm;
  try {
    normalizeEventFilters(events);
    normalizeTargets(targets);
  } catch (error) {
    if (error instanceof WebhookRuleError) return error.message;
    throw error;
  }
  return url.trim() ? urlProblem(url.trim(), guard) : null;
}

const guardFor = (env: Env) => new UrlGuard(urlPolicyFromEnv(env));

/**
 * The legacy single webhook (`WEBHOOK_URL`), migrated once into the webhook with id
 * 'default' (events.md §5); its URL is held to the webhook routes' rules.
 */
export const LEGACY_WEBHOOK_URL = defineSetting({
  key: 'webhook_url',
  env: 'WEBHOOK_URL',
  default: '',
  check: async (value, env) => {
    if (typeof value !== 'string') return checks.string(value);
    return value.trim() ? urlProblem(value.trim(), guardFor(env)) : null;
  },
});

/**
 * The webhook list where the interface (§2.5) and config export expect it. The
 * `event_webhook` table is the source of truth; this key mirrors it (without
 * secrets) after every change, and an imported value is applied to the table,
 * every entry checked as the webhook routes check one.
 */
export const EVENT_WEBHOOKS = defineSetting<unknown[]>({
  key: 'events.webhooks',
  default: [],
  parse: parsers.json as (raw: string) => unknown[],
  check: async (value, env) => {
    if (!Array.isArray(value)) return checks.list(value);
    const guard = guardFor(env);
    for (const [index, entry] of value.entries()) {
      const problem = await webhookProblem(entry, guard);
      if (problem) return `item ${index} ${problem}`;
    }
    return null;
  },
});
