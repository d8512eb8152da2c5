import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import { ChatResponse } from '../chats/schemas.js';
import {
  NoteAccessGrantsForm,
  NoteForm,
  NoteItemResponse,
  NoteListQuery,
  NoteListResponse,
  NoteModel,
  NoteParams,
  NoteResponse,
  NoteSearchQuery,
} from './schemas.js';
import type { NotesService } from './service.js';

/** `/api/v1/notes` (routers/notes.py); the collaborative document is on the socket (collaboration.ts). */
async function notesRoutes(app: App, ctx: AreaContext<{ notes: NotesService }>): Promise<void> {
  const { notes } = ctx.services;
  const { auth } = ctx;
  const tags = ['notes'];
  const byId = { tags, params: NoteParams };

  app.get('/', { onRequest: auth.verified, schema: { tags, querystring: NoteListQuery, response: { 200: Type.Array(NoteItemResponse) } } }, (request) =>
    notes.list(request.user!, request.query.page),
  );

  app.get('/pinned', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(NoteItemResponse) } } }, (request) => notes.pinned(request.user!));

  app.get('/search', { onRequest: auth.verified, schema: { tags, querystring: NoteSearchQuery, response: { 200: NoteListResponse } } }, (request) =>
    notes.search(request.user!, request.query),
  );

  app.post('/create', { onRequest: auth.verified, schema: { tags, body: NoteForm, response: { 200: NoteModel } } }, (request) =>
    notes.create(request.user!, request.body),
  );

  app.get('/:id', { onRequest: auth.verified, schema: { ...byId, response: { 200: NoteResponse } } }, (request) => notes.get(request.user!, request.params.id));

  app.post('/:id/update', { onRequest: auth.verified, schema: { ...byId, body: NoteForm, response: { 200: NoteModel } } }, (request) =>
    notes.update(request.user!, request.params.id, request.body),
  );

  app.post('/:id/access/update', { onRequest: auth.verified, schema: { ...byId, body: NoteAccessGrantsForm, response: { 200: NoteModel } } }, (request) =>
    notes.updateAccess(request.user!, request.params.id, request.body.access_grants),
  );

  app.post('/:id/pin', { onRequest: auth.verified, schema: { ...byId, response: { 200: NoteModel } } }, (request) => notes.togglePin(request.user!, request.params.id));

  app.get('/:id/chat', { onRequest: auth.verified, schema: { ...byId, response: { 200: ChatResponse } } }, (request) => notes.chat(request.user!, request.params.id));

  app.get('/:id/chats', { onRequest: auth.verified, schema: { ...byId, response: { 200: Type.Array(ChatResponse) } } }, (request) =>
    notes.chatsOf(request.user!, request.params.id),
  );

  app.post('/:id/chat', { onRequest: auth.verified, schema: { ...byId, response: { 200: ChatResponse } } }, (request) => notes.newChat(request.user!, request.params.id));

  app.delete('/:id/delete', { onRequest: auth.verified, schema: { ...byId, response: { 200: Type.Boolean() } } }, (request) =>
    notes.delete(request.user!, request.params.id),
  );
}

export const notesArea = defineArea('/api/v1/notes', notesRoutes);
