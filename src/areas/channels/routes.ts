import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { JsonObject, Nullable } from '../../core/http/schema.js';
import {
  ActiveMemberForm,
  AddMembersForm,
  ChannelForm,
  ChannelFull,
  ChannelListItem,
  ChannelModel,
  ChannelParams,
  CreateChannelForm,
  MemberList,
  MemberModel,
  MembersQuery,
  MessageForm,
  MessageListItem,
  MessageModel,
  MessagePageQuery,
  MessageParams,
  MessageResponse,
  PinForm,
  PinnedMessage,
  PinnedQuery,
  ReactionForm,
  RemoveMembersForm,
  UserParams,
  WebhookForm,
  WebhookMessageForm,
  WebhookModel,
  WebhookParams,
  WebhookPostParams,
  WebhookPostResponse,
} from './schemas.js';
import type { ChannelsService } from './service.js';

/** `/api/v1/channels` (routers/channels.py); the live side is on the socket (realtime.ts). */
async function channelsRoutes(app: App, ctx: AreaContext<{ channels: ChannelsService }>): Promise<void> {
  const { channels } = ctx.services;
  const { auth } = ctx;
  const tags = ['channels'];
  const verified = { onRequest: auth.verified };
  const byId = { tags, params: ChannelParams };
  const byMessage = { tags, params: MessageParams };
  const byWebhook = { tags, params: WebhookParams };

  app.get('/', { ...verified, schema: { tags, response: { 200: Type.Array(ChannelListItem) } } }, (request) => channels.list(request.user!));

  app.get('/list', { ...verified, schema: { tags, response: { 200: Type.Array(ChannelModel) } } }, (request) => channels.listAll(request.user!));

  app.get('/users/:user_id', { ...verified, schema: { tags, params: UserParams, response: { 200: ChannelModel } } }, (request) =>
    channels.directWith(request.user!, request.params.user_id),
  );

  app.post('/create', { ...verified, schema: { tags, body: CreateChannelForm, response: { 200: ChannelModel } } }, (request) => channels.create(request.user!, request.body));

  app.get('/:id', { ...verified, schema: { ...byId, response: { 200: ChannelFull } } }, (request) => channels.get(request.user!, request.params.id));

  app.get('/:id/members', { ...verified, schema: { ...byId, querystring: MembersQuery, response: { 200: MemberList } } }, (request) =>
    channels.members(request.user!, request.params.id, request.query),
  );

  app.post('/:id/members/active', { ...verified, schema: { ...byId, body: ActiveMemberForm, response: { 200: Type.Boolean() } } }, (request) =>
    channels.setActive(request.user!, request.params.id, request.body.is_active),
  );

  app.post('/:id/update/members/add', { ...verified, schema: { ...byId, body: AddMembersForm, response: { 200: Type.Array(MemberModel) } } }, (request) =>
    channels.addMembers(request.user!, request.params.id, request.body.user_ids ?? [], request.body.group_ids ?? []),
  );

  app.post('/:id/update/members/remove', { ...verified, schema: { ...byId, body: RemoveMembersForm, response: { 200: Type.Integer() } } }, (request) =>
    channels.removeMembers(request.user!, request.params.id, request.body.user_ids ?? []),
  );

  app.post('/:id/update', { ...verified, schema: { ...byId, body: ChannelForm, response: { 200: ChannelModel } } }, (request) =>
    channels.update(request.user!, request.params.id, request.body),
  );

  app.delete('/:id/delete', { ...verified, schema: { ...byId, response: { 200: Type.Boolean() } } }, (request) => channels.delete(request.user!, request.params.id));

  // ---- messages ----

  app.get('/:id/messages', { ...verified, schema: { ...byId, querystring: MessagePageQuery, response: { 200: Type.Array(MessageListItem) } } }, (request) =>
    channels.messages(request.user!, request.params.id, request.query.skip ?? 0, request.query.limit ?? 50),
  );

  app.get('/:id/messages/pinned', { ...verified, schema: { ...byId, querystring: PinnedQuery, response: { 200: Type.Array(PinnedMessage) } } }, (request) =>
    channels.pinned(request.user!, request.params.id, request.query.page ?? 1),
  );

  app.post('/:id/messages/post', { ...verified, schema: { ...byId, body: MessageForm, response: { 200: MessageModel } } }, (request) =>
    channels.post(request.user!, request.params.id, request.body),
  );

  app.get('/:id/messages/:message_id', { ...verified, schema: { ...byMessage, response: { 200: MessageResponse } } }, (request) =>
    channels.message(request.user!, request.params.id, request.params.message_id),
  );

  app.get('/:id/messages/:message_id/data', { ...verified, schema: { ...byMessage, response: { 200: Nullable(JsonObject()) } } }, (request) =>
    channels.messageData(request.user!, request.params.id, request.params.message_id),
  );

  app.post('/:id/messages/:message_id/pin', { ...verified, schema: { ...byMessage, body: PinForm, response: { 200: MessageListItem } } }, (request) =>
    channels.pin(request.user!, request.params.id, request.params.message_id, request.body.is_pinned),
  );

  app.get(
    '/:id/messages/:message_id/thread',
    { ...verified, schema: { ...byMessage, querystring: MessagePageQuery, response: { 200: Type.Array(MessageListItem) } } },
    (request) => channels.thread(request.user!, request.params.id, request.params.message_id, request.query.skip ?? 0, request.query.limit ?? 50),
  );

  app.post('/:id/messages/:message_id/update', { ...verified, schema: { ...byMessage, body: MessageForm, response: { 200: MessageModel } } }, (request) =>
    channels.updateMessage(request.user!, request.params.id, request.params.message_id, request.body),
  );

  app.post('/:id/messages/:message_id/reactions/add', { ...verified, schema: { ...byMessage, body: ReactionForm, response: { 200: Type.Boolean() } } }, (request) =>
    channels.react(request.user!, request.params.id, request.params.message_id, request.body.name, true),
  );

  app.post('/:id/messages/:message_id/reactions/remove', { ...verified, schema: { ...byMessage, body: ReactionForm, response: { 200: Type.Boolean() } } }, (request) =>
    channels.react(request.user!, request.params.id, request.params.message_id, request.body.name, false),
  );

  app.delete('/:id/messages/:message_id/delete', { ...verified, schema: { ...byMessage, response: { 200: Type.Boolean() } } }, (request) =>
    channels.deleteMessage(request.user!, request.params.id, request.params.message_id),
  );

  // ---- webhooks ----

  app.get('/webhooks/:webhook_id/profile/image', { ...verified, schema: { tags, params: Type.Object({ webhook_id: Type.String() }) } }, async (request, reply) => {
    const image = await channels.webhookImage(request.params.webhook_id);
    if (image.kind === 'redirect') return reply.code(302).header('location', image.location).send();
    if (image.uploaded) reply.header('content-disposition', 'inline').header('x-content-type-options', 'nosniff');
    return reply.type(image.contentType).send(image.body);
  });

  app.get('/:id/webhooks', { ...verified, schema: { ...byId, response: { 200: Type.Array(WebhookModel) } } }, (request) => channels.webhooks(request.user!, request.params.id));

  app.post('/:id/webhooks/create', { ...verified, schema: { ...byId, body: WebhookForm, response: { 200: WebhookModel } } }, (request) =>
    channels.createWebhook(request.user!, request.params.id, request.body),
  );

  app.post('/:id/webhooks/:webhook_id/update', { ...verified, schema: { ...byWebhook, body: WebhookForm, response: { 200: WebhookModel } } }, (request) =>
    channels.updateWebhook(request.user!, request.params.id, request.params.webhook_id, request.body),
  );

  app.delete('/:id/webhooks/:webhook_id/delete', { ...verified, schema: { ...byWebhook, response: { 200: Type.Boolean() } } }, (request) =>
    channels.deleteWebhook(request.user!, request.params.id, request.params.webhook_id),
  );

  // No session: the token in the path is the credential.
  app.post('/webhooks/:webhook_id/:token', { schema: { tags, params: WebhookPostParams, body: WebhookMessageForm, response: { 200: WebhookPostResponse } } }, (request) =>
    channels.postByWebhook(request.params.webhook_id, request.params.token, request.body.content),
  );
}

export const channelsArea = defineArea('/api/v1/channels', channelsRoutes);
