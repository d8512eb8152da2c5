import type { FastifyBaseLogger } from 'fastify';
import type { SettingsStore } from '../../config/settings.js';
import { GuardedFetch } from '../http/guarded-fetch.js';
import { urlPolicyFromEnv } from '../http/url-guard.js';
import { type MessageContext, noticeBody, receiverKindOf, type UserNotice } from './formats.js';

/** How long a notice may take to post. */
const TIMEOUT_MS = 10_000;
/** Answers of receivers are not read past this. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** A user as the notifier needs them: their settings hold the webhook URL. */
export interface NotifiedUser {
  id: string;
  settings: Record<string, unknown> | null;
}

/**
 * Notices to a user's own webhook (Settings › Notifications › Webhook URL, `ui.notifications.webhook_url`
 * in their settings) when the administrator turned on ENABLE_USER_WEBHOOKS (`ui.enable_user_webhooks`),
 * as the reference's post_webhook: an answer ready while they were away, a channel message,
 * a calendar alert. Shaped as event deliveries are for Slack, Google Chat, Discord and Teams
 * (formats.ts), else the notice's fields as JSON. The URL passes the webhook URL guard at
 * every post (EVENT_WEBHOOK_ALLOW_LOCAL, EVENT_WEBHOOK_FILTER_LIST, else the reference's web-fetch
 * variables), redirects are not followed, and a post is best effort, as the reference's: a
 * failure is logged, never retried, and never fails what caused it.
 */
export class UserWebhooks {
  private readonly fetcher: GuardedFetch;

  constructor(
    private readonly settings: SettingsStore,
    raw: Record<string, string | undefined>,
    private readonly context: MessageContext,
    private readonly log: FastifyBaseLogger,
  ) {
    this.fetcher = new GuardedFetch(urlPolicyFromEnv(raw));
  }

  /** Whether the administrator turned user webhooks on. */
  enabled(): boolean {
    return Boolean(this.settings.get<boolean>('ui.enable_user_webhooks'));
  }

  /** The user's webhook URL, when user webhooks are on and they set one. */
  urlOf(user: NotifiedUser): string | null {
    if (!this.enabled()) return null;
    const ui = user.settings?.ui as { notifications?: { webhook_url?: unknown } } | undefined;
    const url = ui?.notifications?.webhook_url;
    return typeof url === 'string' && url.trim() !== '' ? url.trim() : null;
  }

  /** Posts the notice to the user's webhook, if they have one; resolves once it was tried. */
  async notify(user: NotifiedUser, notice: UserNotice): Promise<void> {
    const url = this.urlOf(user);
    if (!url) return;
    try {
      const answer = await this.fetcher.get(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: noticeBody(receiverKindOf(url), notice, this.context),
        signal: AbortSignal.timeout(TIMEOUT_MS),
        maxBytes: MAX_ANSWER_BYTES,
        maxRedirects: 0,
      });
      if (answer.status >= 400) this.log.warn({ user: user.id, status: answer.status, action: notice.data.action }, 'a user webhook refused a notice');
    } catch (err) {
      this.log.warn({ err, user: user.id, action: notice.data.action }, 'a notice to a user webhook failed');
    }
  }

  close(): Promise<void> {
    return this.fetcher.close();
  }
}
