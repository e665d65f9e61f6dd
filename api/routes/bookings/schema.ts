import { Type, type TSchema } from '@sinclair/typebox';
import { BOOKING_TRIGGERS } from '../../../jobs/bookings.js';
import { FirmSlug } from '../../schemas/common.js';

// Cal.com's webhook envelope `{triggerEvent, createdAt, payload}`. Unknown fields are accepted
// everywhere (senders add fields over time). Only the booking triggers need a booking: their
// payload must name its uid and a startTime with a time zone (`...Z` or `...+00:00`).

// Fields a sender may leave null; a person without a usable address gets no reminder.
const OrNull = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));

const Person = Type.Object(
  {
    email: OrNull(Type.String({ maxLength: 320 })),
    name: OrNull(Type.String({ maxLength: 1000 })),
    timeZone: OrNull(Type.String({ maxLength: 100, description: 'IANA time zone' })),
  },
  { additionalProperties: true },
);

const BookingUid = Type.String({ minLength: 1, maxLength: 200, description: "Cal.com's booking uid" });

export const BookingPayload = Type.Object(
  {
    uid: BookingUid,
    startTime: Type.String({ format: 'date-time', maxLength: 64 }),
    endTime: Type.Optional(Type.String({ format: 'date-time', maxLength: 64 })),
    title: OrNull(Type.String({ maxLength: 5000 })),
    location: OrNull(Type.String({ maxLength: 5000 })),
    rescheduleUid: Type.Optional(
      Type.Union([BookingUid, Type.Null()], {
        description: 'BOOKING_RESCHEDULED: the uid of the booking this one replaces',
      }),
    ),
    rescheduleStartTime: OrNull(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description: "BOOKING_RESCHEDULED: the replaced booking's start",
      }),
    ),
    rescheduleEndTime: OrNull(
      Type.String({
        format: 'date-time',
        maxLength: 64,
        description: "BOOKING_RESCHEDULED: the replaced booking's end",
      }),
    ),
    attendees: Type.Optional(Type.Array(Person, { maxItems: 100 })),
    organizer: Type.Optional(Person),
  },
  { additionalProperties: true },
);

export const BookingWebhookBody = Type.Object(
  {
    triggerEvent: Type.String({
      minLength: 1,
      maxLength: 100,
      description: `${BOOKING_TRIGGERS.join(', ')} change reminders; other triggers (PING, MEETING_ENDED, ...) are acknowledged and ignored`,
    }),
    createdAt: Type.Optional(Type.String({ maxLength: 64, description: 'When Cal.com made the event' })),
    // Cal.com always sends one; a trigger that is ignored (a PING) is acknowledged without it.
    payload: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  {
    additionalProperties: true,
    // A booking trigger needs a booking (JSON Schema's if/then: one schema validates and documents it).
    if: { properties: { triggerEvent: { enum: [...BOOKING_TRIGGERS] } }, required: ['triggerEvent'] },
    then: { properties: { payload: BookingPayload }, required: ['payload'] },
  },
);

export const FirmParams = Type.Object({ firm: FirmSlug });

export const BookingWebhookResponse = Type.Object({ received: Type.Literal(true) });

export const RemindersQuery = Type.Object({ bookingUid: BookingUid });

export const ReminderList = Type.Array(
  Type.Object({
    booking_uid: Type.String(),
    due_at: Type.String({ format: 'date-time' }),
    channel: Type.Literal('email'),
    to: Type.String(),
    status: Type.Union([
      Type.Literal('scheduled'),
      Type.Literal('sent'),
      Type.Literal('cancelled'),
      Type.Literal('failed'),
    ]),
  }),
);
