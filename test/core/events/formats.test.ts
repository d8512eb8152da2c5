import { describe, expect, it } from 'vitest';
import { deliveryBody, receiverKindOf } from '../../../src/core/events/formats.js';
import { EventBus } from '../../../src/core/events/publish.js';

const bus = new EventBus({ version: '0.11.0', instanceId: 'i', now: () => 1_700_000_000 });
const context = { appName: 'Open WebUI', version: '0.11.0', iconUrl: 'https://openwebui.com/favicon.png' };
const event = bus.build({
  event: 'knowledge.file.added',
  actor: { id: 'u1', name: 'Ada', email: 'ada@example.com', role: 'admin' },
  subjectId: 'f1',
  data: { knowledge_id: 'k1' },
});
const TEXT = 'Knowledge File added (f1)\nA file was added to a knowledge base.\nEvent: knowledge.file.added';

describe('delivery bodies', () => {
  it('recognise receivers by url as the reference does, plus Teams workflow urls', () => {
    expect(receiverKindOf('https://hooks.slack.com/services/T/B/X')).toBe('slack');
    expect(receiverKindOf('https://chat.googleapis.com/v1/spaces/x/messages?key=k')).toBe('google_chat');
    expect(receiverKindOf('https://discord.com/api/webhooks/1/abc')).toBe('discord');
    expect(receiverKindOf('https://contoso.webhook.office.com/webhookb2/x')).toBe('teams_connector');
    expect(receiverKindOf('https://prod-12.westus.logic.azure.com:443/workflows/x/triggers/manual/paths/invoke')).toBe('teams_workflow');
    expect(receiverKindOf('https://default1234.56.environment.api.powerplatform.com:443/powerautomate/automations/direct/workflows/x')).toBe('teams_workflow');
    expect(receiverKindOf('https://example.com/hook')).toBe('generic');
  });

  it('send the event itself to generic receivers, keys in the reference order', () => {
    const body = JSON.parse(deliveryBody('generic', event, context));
    expect(body).toEqual(event);
    expect(Object.keys(body)[0]).toBe('schema');
  });

  it('send text to Slack and Google Chat, content to Discord (cut below 2000 characters)', () => {
    expect(JSON.parse(deliveryBody('slack', event, context))).toEqual({ text: TEXT });
    expect(JSON.parse(deliveryBody('google_chat', event, context))).toEqual({ text: TEXT });
    expect(JSON.parse(deliveryBody('discord', event, context))).toEqual({ content: TEXT });
    const long = bus.build({ event: 'user.created', subjectId: 'x'.repeat(2500) });
    const content = JSON.parse(deliveryBody('discord', { ...long, subject: { type: 'user', id: 'y'.repeat(2500) } }, context)).content as string;
    expect(content.length).toBe(1980 + '... (truncated)'.length);
    expect(content.endsWith('... (truncated)')).toBe(true);
  });

  it('send a MessageCard to Teams connectors and an Adaptive Card to Teams workflows', () => {
    const card = JSON.parse(deliveryBody('teams_connector', event, context));
    expect(card).toMatchObject({ '@type': 'MessageCard', summary: 'Knowledge File added (f1)', themeColor: '0076D7' });
    expect(card.sections[0]).toMatchObject({
      activityTitle: 'Knowledge File added (f1)',
      activitySubtitle: 'Open WebUI (0.11.0) - knowledge.file.added',
      text: 'A file was added to a knowledge base.',
    });
    expect(card.sections[0].facts.slice(0, 3)).toEqual([
      { name: 'description', value: 'A file was added to a knowledge base.' },
      { name: 'event', value: 'knowledge.file.added' },
      { name: 'id', value: 'u1' },
    ]);
    const workflow = JSON.parse(deliveryBody('teams_workflow', event, context));
    expect(workflow.type).toBe('message');
    expect(workflow.attachments[0].contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(workflow.attachments[0].content.type).toBe('AdaptiveCard');
    expect(workflow.attachments[0].content.body[0].text).toBe('Knowledge File added (f1)');
    for (const fact of workflow.attachments[0].content.body[2].facts) expect(typeof fact.value).toBe('string');
  });
});
