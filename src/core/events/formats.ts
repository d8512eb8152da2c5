import type { Env } from '../../config/env.js';
import { EVENT_CATALOG, type EventPayload } from './publish.js';

/**
 * The body each kind of receiver gets (events.md §6): the event JSON for generic
 * receivers; text for Slack, Google Chat and Discord; a MessageCard for legacy
 * Teams connector URLs; an Adaptive Card message for Teams workflow URLs (Power
 * Automate), which the reference sends raw JSON to (its issue #28889).
 */
export type ReceiverKind = 'generic' | 'slack' | 'google_chat' | 'discord' | 'teams_connector' | 'teams_workflow';

const DEFINITIONS = new Map(EVENT_CATALOG.events.map((e) => [e.event, e]));
const DISCORD_LIMIT = 2000;

export function receiverKindOf(url: string): ReceiverKind {
  // The reference's substring tests, kept so the same URLs get the same format.
  if (url.includes('https://hooks.slack.com')) return 'slack';
  if (url.includes('https://chat.googleapis.com')) return 'google_chat';
  if (url.includes('https://discord.com/api/webhooks')) return 'discord';
  if (url.includes('webhook.office.com')) return 'teams_connector';
  let host = '';
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return 'generic';
  }
  if (host.endsWith('.logic.azure.com') || host.endsWith('.api.powerplatform.com')) return 'teams_workflow';
  return 'generic';
}

export interface MessageContext {
  /** The product name as chat apps show it: 'Open WebUI', or a custom name followed by ' (Open WebUI)'. */
  appName: string;
  version: string;
  iconUrl: string;
}

export function messageContextOf(env: Pick<Env, 'webuiName' | 'version' | 'raw'>): MessageContext {
  return {
    appName: env.webuiName === 'Open WebUI' ? 'Open WebUI' : `${env.webuiName} (Open WebUI)`,
    version: env.version,
    iconUrl: env.raw.WEBUI_FAVICON_URL || 'https://openwebui.com/favicon.png',
  };
}

/** The short title of an event: its catalog message, with the subject id when there is one. */
export function eventTitle(event: EventPayload): string {
  const base = event.message ?? DEFINITIONS.get(event.event)?.message ?? event.event;
  return event.subject?.id ? `${base} (${event.subject.id})` : base;
}

function eventText(event: EventPayload): string {
  const title = eventTitle(event);
  const description = DEFINITIONS.get(event.event)?.description;
  const lines = [title];
  if (description && description !== title) lines.push(description);
  lines.push(`Event: ${event.event}`);
  return lines.join('\n');
}

function actorFacts(event: EventPayload): [string, string][] {
  return Object.entries(event.actor ?? {}).map(([key, value]) => [key, String(value)]);
}

/** What a chat app shows of a message, and what a generic receiver gets instead (`raw`). */
interface Message {
  title: string;
  /** The text of Slack, Google Chat and Discord. */
  text: string;
  description: string | null;
  facts: [string, string][];
  /** What follows the product name in a Teams card's subtitle. */
  subtitle: string;
  raw: unknown;
}

function messageBody(kind: ReceiverKind, message: Message, context: MessageContext): string {
  const { title, description } = message;
  switch (kind) {
    case 'slack':
    case 'google_chat':
      return JSON.stringify({ text: message.text });
    case 'discord': {
      const text = message.text;
      return JSON.stringify({ content: text.length < DISCORD_LIMIT ? text : `${text.slice(0, DISCORD_LIMIT - 20)}... (truncated)` });
    }
    case 'teams_connector':
      return JSON.stringify({
        '@type': 'MessageCard',
        '@context': 'http://schema.org/extensions',
        themeColor: '0076D7',
        summary: title,
        sections: [
          {
            activityTitle: title,
            activitySubtitle: `${context.appName} (${context.version}) - ${message.subtitle}`,
            activityImage: context.iconUrl,
            text: description,
            facts: [...(description ? [{ name: 'description', value: description }] : []), ...message.facts.map(([name, value]) => ({ name, value }))],
            markdown: true,
          },
        ],
      });
    case 'teams_workflow':
      return JSON.stringify({
        type: 'message',
        attachments: [
          {
            contentType: 'application/vnd.microsoft.card.adaptive',
            contentUrl: null,
            content: {
              $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
              type: 'AdaptiveCard',
              version: '1.4',
              body: [
                { type: 'TextBlock', text: title, weight: 'Bolder', size: 'Medium', wrap: true },
                ...(description ? [{ type: 'TextBlock', text: description, wrap: true, isSubtle: true }] : []),
                ...(message.facts.length > 0 ? [{ type: 'FactSet', facts: message.facts.map(([name, value]) => ({ title: name, value })) }] : []),
              ],
            },
          },
        ],
      });
    default:
      return JSON.stringify(message.raw);
  }
}

/** The exact bytes posted (and signed) for one event to one receiver. */
export function deliveryBody(kind: ReceiverKind, event: EventPayload, context: MessageContext): string {
  return messageBody(
    kind,
    {
      title: eventTitle(event),
      text: eventText(event),
      description: DEFINITIONS.get(event.event)?.description ?? null,
      facts: [['event', event.event], ...actorFacts(event)],
      // The reference shows the legacy `action` field here, always 'undefined' for events; the event name says more.
      subtitle: event.event,
      raw: event,
    },
    context,
  );
}

/** A notice to a user's own webhook (user-webhooks.ts): its text, and its fields for a generic receiver (the reference's `event_data`). */
export interface UserNotice {
  message: string;
  data: Record<string, unknown> & { action: string };
}

/** The bytes posted for a notice to a user's webhook, shaped for its kind of receiver as events are. */
export function noticeBody(kind: ReceiverKind, notice: UserNotice, context: MessageContext): string {
  return messageBody(kind, { title: notice.message, text: notice.message, description: null, facts: [], subtitle: notice.data.action, raw: notice.data }, context);
}
