import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { IdParams } from '../../core/http/schema.js';
import { callContext } from '../../core/upstream/relay.js';
import {
  ChatAccessGrantsForm,
  ChatConfigForm,
  ChatConfigResponse,
  ChatFolderIdForm,
  ChatForm,
  ChatIdParams,
  ChatListQuery,
  ChatResponse,
  ChatStatsExport,
  ChatStatsExportList,
  ChatTitleIdResponse,
  ChatUsageStatsList,
  ChatsImportForm,
  CloneForm,
  CompactChatForm,
  CompactResponse,
  EventForm,
  FilteredListQuery,
  FolderChatsQuery,
  FolderIdParams,
  ForkForm,
  MessageForm,
  MessageParams,
  ReadResponse,
  SearchQuery,
  ShareGrantResponse,
  ShareIdParams,
  SharedChatResponse,
  StatsExportQuery,
  TagFilterForm,
  TagForm,
  TagModel,
  UnreadResponse,
  UsageStatsQuery,
  UserIdParams,
} from './schemas.js';
import type { ChatsService } from './service.js';

const TitleList = Type.Array(ChatTitleIdResponse);
const NDJSON = 'application/x-ndjson';

/** `/api/v1/chats`: stored conversations, their lists, tags, sharing and statistics. */
async function chatsRoutes(app: App, ctx: AreaContext<{ chats: ChatsService }>): Promise<void> {
  const { chats } = ctx.services;
  const { auth } = ctx;
  const tags = ['chats'];

  for (const url of ['/', '/list']) {
    app.get(url, { onRequest: auth.verified, schema: { tags, querystring: ChatListQuery, response: { 200: TitleList } } }, (request) =>
      chats.list(request.user!, request.query),
    );
  }

  app.post('/read', { onRequest: auth.verified, schema: { tags, response: { 200: ReadResponse } } }, (request) => chats.markAllRead(request.user!));

  app.get('/stats/usage', { onRequest: auth.verified, schema: { tags, querystring: UsageStatsQuery, response: { 200: ChatUsageStatsList } } }, (request) =>
    chats.usage(request.user!, request.query.items_per_page, request.query.page),
  );

  app.get('/stats/export', { onRequest: auth.verified, schema: { tags, querystring: StatsExportQuery, response: { 200: ChatStatsExportList } } }, async (request, reply) => {
    const { updated_at, page, stream } = request.query;
    if (!stream) return chats.statsExport(request.user!, updated_at, page);
    const lines = chats.statsExportStream(request.user!, updated_at);
    return reply
      .type(NDJSON)
      .header('content-disposition', `attachment; filename=chat-stats-export-${request.user!.id}.jsonl`)
      .send(Readable.from(lines) as never);
  });

  app.get('/stats/export/:chat_id', { onRequest: auth.verified, schema: { tags, params: ChatIdParams, response: { 200: ChatStatsExport } } }, (request) =>
    chats.chatStatsExport(request.user!, request.params.chat_id),
  );

  app.delete('/', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Boolean() } } }, (request) => chats.deleteAll(request.user!));

  app.get('/list/user/:user_id', { onRequest: auth.admin, schema: { tags, params: UserIdParams, querystring: FilteredListQuery, response: { 200: TitleList } } }, (request) =>
    chats.listOfUser(request.params.user_id, request.query),
  );

  app.post('/new', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: ChatForm, response: { 200: ChatResponse } } }, (request) =>
    chats.create(request.user!, request.body),
  );

  app.post('/import', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, body: ChatsImportForm, response: { 200: Type.Array(ChatResponse) } } }, (request) =>
    chats.import(request.user!, request.body.chats),
  );

  app.get('/config', { onRequest: auth.admin, schema: { tags, response: { 200: ChatConfigResponse } } }, () => chats.config());

  app.post('/config', { onRequest: auth.admin, schema: { tags, body: ChatConfigForm, response: { 200: ChatConfigResponse } } }, (request) =>
    chats.setConfig(request.body),
  );

  app.get('/search', { onRequest: auth.verified, schema: { tags, querystring: SearchQuery, response: { 200: TitleList } } }, (request) =>
    chats.search(request.user!, request.query.text, request.query.page),
  );

  app.get('/folder/:folder_id', { onRequest: auth.verified, schema: { tags, params: FolderIdParams, response: { 200: Type.Array(ChatResponse) } } }, (request) =>
    chats.inFolderTree(request.user!, request.params.folder_id),
  );

  app.get(
    '/folder/:folder_id/list',
    { onRequest: auth.verified, schema: { tags, params: FolderIdParams, querystring: FolderChatsQuery, response: { 200: TitleList } } },
    (request) => chats.folderList(request.user!, request.params.folder_id, request.query),
  );

  app.get('/pinned', { onRequest: auth.verified, schema: { tags, response: { 200: TitleList } } }, (request) => chats.pinned(request.user!));

  app.get('/all', { onRequest: auth.verified, schema: { tags } }, (request, reply) => reply.type(NDJSON).send(Readable.from(chats.exportAll(request.user!))));

  app.get('/all/archived', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(ChatResponse) } } }, (request) =>
    chats.archivedChats(request.user!),
  );

  app.get('/all/tags', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(TagModel) } } }, (request) => chats.allTags(request.user!));

  app.get('/all/db', { onRequest: auth.admin, schema: { tags, response: { 200: Type.Array(ChatResponse) } } }, () => chats.everyChat());

  app.get('/archived', { onRequest: auth.verified, schema: { tags, querystring: FilteredListQuery, response: { 200: TitleList } } }, (request) =>
    chats.archivedList(request.user!, request.query),
  );

  app.get('/archived/count', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Integer() } } }, (request) => chats.archivedCount(request.user!));

  app.post('/archive/all', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Boolean() } } }, (request) =>
    chats.setAllArchived(request.user!, true),
  );

  app.post('/unarchive/all', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Boolean() } } }, (request) =>
    chats.setAllArchived(request.user!, false),
  );

  app.delete('/share/all', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Boolean() } } }, (request) => chats.unshareAll(request.user!));

  app.get('/shared', { onRequest: auth.verified, schema: { tags, querystring: FilteredListQuery, response: { 200: Type.Array(SharedChatResponse) } } }, (request) =>
    chats.sharedList(request.user!, request.query),
  );

  // Open share links are readable without signing in; a pending account counts as none.
  app.get('/share/:share_id', { onRequest: auth.optional, schema: { tags, params: ShareIdParams, response: { 200: ChatResponse } } }, (request) =>
    chats.getShared(request.user, request.params.share_id),
  );

  app.post('/tags', { onRequest: auth.verified, schema: { tags, body: TagFilterForm, response: { 200: TitleList } } }, (request) =>
    chats.byTag(request.user!, request.body.name, request.body.skip ?? 0, request.body.limit ?? 50),
  );

  app.post('/:id/compact', { onRequest: auth.verified, schema: { tags, params: IdParams, body: CompactChatForm, response: { 200: CompactResponse } } }, (request, reply) =>
    chats.compact(request.user!, request.params.id, request.body?.model, callContext(request, reply, { metadata: { chat_id: request.params.id } })),
  );

  app.get('/:id', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: ChatResponse } } }, (request) =>
    chats.get(request.user!, request.params.id),
  );

  app.post('/:id', { onRequest: auth.verified, config: { bodyClass: 'large' }, schema: { tags, params: IdParams, body: ChatForm, response: { 200: ChatResponse } } }, (request) =>
    chats.update(request.user!, request.params.id, request.body),
  );

  app.post('/:id/messages/:message_id', { onRequest: auth.verified, schema: { tags, params: MessageParams, body: MessageForm, response: { 200: ChatResponse } } }, (request) =>
    chats.updateMessage(request.user!, request.params.id, request.params.message_id, request.body.content),
  );

  app.delete('/:id/messages/:message_id', { onRequest: auth.verified, schema: { tags, params: MessageParams, response: { 200: ChatResponse } } }, (request) =>
    chats.deleteMessage(request.user!, request.params.id, request.params.message_id),
  );

  app.post(
    '/:id/messages/:message_id/event',
    { onRequest: auth.verified, schema: { tags, params: MessageParams, body: EventForm, response: { 200: Type.Boolean() } } },
    (request) => chats.messageEvent(request.user!, request.params.id, request.params.message_id, request.body),
  );

  app.delete('/:id', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: Type.Boolean() } } }, (request) =>
    chats.delete(request.user!, request.params.id),
  );

  app.get('/:id/pinned', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: Type.Boolean() } } }, (request) =>
    chats.pinnedStatus(request.user!, request.params.id),
  );

  app.post('/:id/pin', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: ChatResponse } } }, (request) =>
    chats.togglePin(request.user!, request.params.id),
  );

  app.post('/:id/fork', { onRequest: auth.verified, schema: { tags, params: IdParams, body: ForkForm, response: { 200: ChatResponse } } }, (request) =>
    chats.fork(request.user!, request.params.id, request.body?.message_id),
  );

  app.post('/:id/clone', { onRequest: auth.verified, schema: { tags, params: IdParams, body: CloneForm, response: { 200: ChatResponse } } }, (request) =>
    chats.clone(request.user!, request.params.id, request.body.title),
  );

  app.post('/:id/clone/shared', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: ChatResponse } } }, (request) =>
    chats.cloneShared(request.user!, request.params.id),
  );

  app.post('/:id/archive', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: ChatResponse } } }, (request) =>
    chats.toggleArchive(request.user!, request.params.id),
  );

  app.post('/:id/share', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: ChatResponse } } }, (request) =>
    chats.share(request.user!, request.params.id),
  );

  app.delete('/:id/share', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: Type.Boolean() } } }, (request) =>
    chats.unshare(request.user!, request.params.id),
  );

  app.post(
    '/shared/:id/access/update',
    { onRequest: auth.verified, schema: { tags, params: IdParams, body: ChatAccessGrantsForm, response: { 200: ChatResponse } } },
    (request) => chats.updateShareAccess(request.user!, request.params.id, request.body.access_grants),
  );

  app.get('/shared/:id/access', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: Type.Array(ShareGrantResponse) } } }, (request) =>
    chats.shareAccess(request.user!, request.params.id),
  );

  app.post('/:id/unread', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: UnreadResponse } } }, (request) =>
    chats.markUnread(request.user!, request.params.id),
  );

  app.post('/:id/folder', { onRequest: auth.verified, schema: { tags, params: IdParams, body: ChatFolderIdForm, response: { 200: ChatResponse } } }, (request) =>
    chats.moveToFolder(request.user!, request.params.id, request.body.folder_id ?? null),
  );

  app.get('/:id/tags', { onRequest: auth.verified, schema: { tags, params: IdParams, response: { 200: Type.Array(TagModel) } } }, (request) =>
    chats.tagsOf(request.user!, request.params.id),
  );

  app.post('/:id/tags', { onRequest: auth.verified, schema: { tags, params: IdParams, body: TagForm, response: { 200: Type.Array(TagModel) } } }, (request) =>
    chats.addTag(request.user!, request.params.id, request.body.name),
  );

  app.delete('/:id/tags', { onRequest: auth.verified, schema: { tags, params: IdParams, body: TagForm, response: { 200: Type.Array(TagModel) } } }, (request) =>
    chats.removeTag(request.user!, request.params.id, request.body.name),
  );
}

export const chatsArea = defineArea('/api/v1/chats', chatsRoutes);
