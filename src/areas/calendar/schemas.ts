import { type Static, Type } from '@sinclair/typebox';
import { AccessGrantSchema } from '../../core/access/grants.js';
import { JsonObject, Maybe, Nullable } from '../../core/http/schema.js';

/** Calendars (models/calendar.py); timestamps in nanoseconds. */

export const CalendarModel = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  name: Type.String(),
  color: Nullable(Type.String()),
  is_default: Type.Boolean(),
  is_system: Type.Boolean(),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  access_grants: Type.Array(AccessGrantSchema),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});

const Grants = Maybe(Type.Array(Type.Unknown()));

export const CalendarForm = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 500 }),
  color: Maybe(Type.String({ maxLength: 100 })),
  data: Maybe(JsonObject()),
  meta: Maybe(JsonObject()),
  access_grants: Grants,
});
export type CalendarForm = Static<typeof CalendarForm>;

export const CalendarUpdateForm = Type.Partial(CalendarForm);
export type CalendarUpdateForm = Static<typeof CalendarUpdateForm>;

export const AttendeeModel = Type.Object({
  id: Type.String(),
  event_id: Type.String(),
  user_id: Type.String(),
  status: Type.String(),
  meta: Nullable(JsonObject()),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});

const EventUser = Nullable(Type.Object({ id: Type.String(), name: Type.String(), email: Type.String(), role: Type.String() }));

const eventFields = {
  id: Type.String(),
  calendar_id: Type.String(),
  user_id: Type.String(),
  title: Type.String(),
  description: Nullable(Type.String()),
  start_at: Type.Integer(),
  end_at: Nullable(Type.Integer()),
  all_day: Type.Boolean(),
  rrule: Nullable(Type.String()),
  color: Nullable(Type.String()),
  location: Nullable(Type.String()),
  data: Nullable(JsonObject()),
  meta: Nullable(JsonObject()),
  is_cancelled: Type.Boolean(),
  attendees: Type.Array(AttendeeModel),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
};
export const CalendarEventModel = Type.Object(eventFields);

/** A listed event: one occurrence of a recurring one carries `instance_id` (`<id>_<start_at>`). */
export const CalendarEventUserResponse = Type.Object({ ...eventFields, user: Maybe(EventUser), instance_id: Type.Optional(Type.String()) });
export const CalendarEventListResponse = Type.Object({ items: Type.Array(CalendarEventUserResponse), total: Type.Integer() });

const Attendees = Maybe(Type.Array(Type.Object({ user_id: Type.String(), status: Type.Optional(Type.String()) }, { additionalProperties: true }), { maxItems: 500 }));

export const CalendarEventForm = Type.Object({
  calendar_id: Type.String(),
  title: Type.String({ minLength: 1, maxLength: 1000 }),
  description: Maybe(Type.String({ maxLength: 100_000 })),
  start_at: Type.Integer({ minimum: 0 }),
  end_at: Maybe(Type.Integer({ minimum: 0 })),
  all_day: Type.Optional(Type.Boolean()),
  rrule: Maybe(Type.String({ maxLength: 5000 })),
  color: Maybe(Type.String({ maxLength: 100 })),
  location: Maybe(Type.String({ maxLength: 1000 })),
  data: Maybe(JsonObject()),
  meta: Maybe(JsonObject()),
  attendees: Attendees,
});
export type CalendarEventForm = Static<typeof CalendarEventForm>;

export const CalendarEventUpdateForm = Type.Object({
  ...Type.Partial(Type.Omit(CalendarEventForm, ['attendees'])).properties,
  is_cancelled: Maybe(Type.Boolean()),
  attendees: Attendees,
});
export type CalendarEventUpdateForm = Static<typeof CalendarEventUpdateForm>;

export const RSVPForm = Type.Object({ status: Type.String() });

export const EventsQuery = Type.Object({ start: Type.String(), end: Type.String(), calendar_ids: Type.Optional(Type.String()) });
export type EventsQuery = Static<typeof EventsQuery>;

export const SearchQuery = Type.Object({
  query: Type.Optional(Type.String()),
  skip: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 30 })),
});
export type SearchQuery = Static<typeof SearchQuery>;

export const CalendarParams = Type.Object({ calendar_id: Type.String() });
export const EventParams = Type.Object({ event_id: Type.String() });
