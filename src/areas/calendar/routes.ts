import { Type } from '@sinclair/typebox';
import { defineArea } from '../../core/areas.js';
import type { AreaContext } from '../../core/context.js';
import type { App } from '../../core/http/server.js';
import {
  CalendarEventForm,
  CalendarEventListResponse,
  CalendarEventModel,
  CalendarEventUpdateForm,
  CalendarEventUserResponse,
  CalendarForm,
  CalendarModel,
  CalendarParams,
  CalendarUpdateForm,
  EventParams,
  EventsQuery,
  RSVPForm,
  SearchQuery,
} from './schemas.js';
import type { CalendarService } from './service.js';

const Status = Type.Object({ status: Type.Boolean() });
/** An .ics file's text, as JSON (at most the request body limit). */
const ImportForm = Type.Object({ ics: Type.String({ minLength: 1 }) });

/** `/api/v1/calendars` (routers/calendar.py): the 13 operations; `/events…` before `/{calendar_id}`. */
async function calendarRoutes(app: App, ctx: AreaContext<{ calendar: CalendarService }>): Promise<void> {
  const { calendar } = ctx.services;
  const { auth } = ctx;
  const tags = ['calendars'];

  app.get('/', { onRequest: auth.verified, schema: { tags, response: { 200: Type.Array(CalendarModel) } } }, (request) => calendar.list(request.user!));

  app.post('/create', { onRequest: auth.verified, schema: { tags, body: CalendarForm, response: { 200: CalendarModel } } }, (request) => calendar.create(request.user!, request.body));

  app.get('/events', { onRequest: auth.verified, schema: { tags, querystring: EventsQuery, response: { 200: Type.Array(CalendarEventUserResponse) } } }, (request) =>
    calendar.events(request.user!, request.query),
  );

  app.post('/events/create', { onRequest: auth.verified, schema: { tags, body: CalendarEventForm, response: { 200: CalendarEventModel } } }, (request) =>
    calendar.createEvent(request.user!, request.body),
  );

  app.get('/events/search', { onRequest: auth.verified, schema: { tags, querystring: SearchQuery, response: { 200: CalendarEventListResponse } } }, (request) =>
    calendar.search(request.user!, request.query),
  );

  app.get('/events/:event_id', { onRequest: auth.verified, schema: { tags, params: EventParams, response: { 200: CalendarEventModel } } }, (request) =>
    calendar.getEvent(request.user!, request.params.event_id),
  );

  app.post('/events/:event_id/update', { onRequest: auth.verified, schema: { tags, params: EventParams, body: CalendarEventUpdateForm, response: { 200: CalendarEventModel } } }, (request) =>
    calendar.updateEvent(request.user!, request.params.event_id, request.body),
  );

  app.delete('/events/:event_id/delete', { onRequest: auth.verified, schema: { tags, params: EventParams, response: { 200: Status } } }, (request) =>
    calendar.deleteEvent(request.user!, request.params.event_id),
  );

  app.post('/events/:event_id/rsvp', { onRequest: auth.verified, schema: { tags, params: EventParams, body: RSVPForm, response: { 200: Type.Object({ status: Type.Boolean(), rsvp: Type.String() }) } } }, (request) =>
    calendar.rsvp(request.user!, request.params.event_id, request.body.status),
  );

  // Parley's: a read-only iCalendar feed per calendar (secret URL, no sign-in), and .ics import.
  app.get('/feed/:file', { schema: { tags, params: Type.Object({ file: Type.String() }) } }, async (request, reply) =>
    reply.type('text/calendar; charset=utf-8').send(await calendar.feed(request.params.file)),
  );

  app.post('/:calendar_id/feed', { onRequest: auth.verified, schema: { tags, params: CalendarParams, response: { 200: Type.Object({ token: Type.String(), url: Type.String() }) } } }, (request) =>
    calendar.rotateFeed(request.user!, request.params.calendar_id),
  );

  app.delete('/:calendar_id/feed', { onRequest: auth.verified, schema: { tags, params: CalendarParams, response: { 200: Status } } }, (request) =>
    calendar.revokeFeed(request.user!, request.params.calendar_id),
  );

  app.post('/:calendar_id/import', { onRequest: auth.verified, schema: { tags, params: CalendarParams, body: ImportForm, response: { 200: Type.Object({ imported: Type.Integer(), skipped: Type.Integer() }) } } }, (request) =>
    calendar.importIcs(request.user!, request.params.calendar_id, request.body.ics),
  );

  app.get('/:calendar_id', { onRequest: auth.verified, schema: { tags, params: CalendarParams, response: { 200: CalendarModel } } }, (request) =>
    calendar.get(request.user!, request.params.calendar_id),
  );

  app.post('/:calendar_id/update', { onRequest: auth.verified, schema: { tags, params: CalendarParams, body: CalendarUpdateForm, response: { 200: CalendarModel } } }, (request) =>
    calendar.update(request.user!, request.params.calendar_id, request.body),
  );

  app.delete('/:calendar_id/delete', { onRequest: auth.verified, schema: { tags, params: CalendarParams, response: { 200: Status } } }, (request) =>
    calendar.delete(request.user!, request.params.calendar_id),
  );

  app.post('/:calendar_id/default', { onRequest: auth.verified, schema: { tags, params: CalendarParams, response: { 200: CalendarModel } } }, (request) =>
    calendar.setDefault(request.user!, request.params.calendar_id),
  );
}

export const calendarArea = defineArea('/api/v1/calendars', calendarRoutes);
