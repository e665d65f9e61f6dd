import { Type } from '@sinclair/typebox';
import { Body, FirmSlug, Id } from '../../schemas/common.js';
import { TOOL_NAMES } from '../../../core/domain/appointments/agent-tools.js';

// Availability and booking through the firm's booking provider, and the same two steps as Retell
// custom functions (docs/appointments.md#agent-tools).

const DateOnly = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', maxLength: 10, description: 'YYYY-MM-DD' });
const TimeZone = Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone' });

export const AvailabilityQuery = Type.Object(
  {
    firmSlug: FirmSlug,
    start: DateOnly,
    end: Type.String({ ...DateOnly, description: 'YYYY-MM-DD, included; at most 14 days from start' }),
    timeZone: Type.Optional({
      ...TimeZone,
      description:
        "IANA time zone the days are in, and the slots' offsets; absent: the firm's settings.timezone",
    }),
  },
  { additionalProperties: false },
);

export const AvailabilityResponse = Type.Object({
  slots: Type.Array(
    Type.Object({ start: Type.String({ description: 'ISO 8601 with the offset of timeZone' }) }),
  ),
});

export const CreateAppointmentBody = Body({
  firmSlug: FirmSlug,
  start: Type.String({ format: 'date-time', maxLength: 64, description: 'A slot start from availability' }),
  attendee: Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 200 }),
      email: Type.String({ format: 'email', maxLength: 320 }),
      timeZone: TimeZone,
      phone: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    },
    { additionalProperties: false },
  ),
  notes: Type.Optional(Type.String({ maxLength: 5000 })),
  lead_id: Type.Optional(Id),
});

export const AppointmentResponse = Type.Object({
  booking_uid: Type.String(),
  start: Type.String(),
  end: Type.String(),
  status: Type.Union([Type.Literal('booked'), Type.Literal('requested')], {
    description:
      "requested: the event type needs the host to confirm (Cal.com's pending); it is not booked yet",
  }),
});

export const ToolParams = Type.Object({
  firm: FirmSlug,
  name: Type.Union(
    TOOL_NAMES.map((n) => Type.Literal(n)),
    { description: 'check_availability or book_appointment' },
  ),
});

/**
 * Retell's custom-function request in either payload mode: `{name, call, args}` (the default), or
 * the args alone ("Payload: args only"), told apart by `call` (api/routes/appointments/tool-request.ts).
 */
export const ToolBody = Type.Record(Type.String(), Type.Unknown(), {
  maxProperties: 60,
  description:
    '{name, call, args} as Retell sends a custom function by default, or the args alone ("Payload: args only": ' +
    'then the call is named by ?call_id= or the X-Retell-Call-Id header)',
});

export const ToolQuery = Type.Object(
  {
    call_id: Type.Optional(
      Type.String({
        maxLength: 300,
        description:
          "Retell's call id, for a function whose payload is its args only: call_id={{call_id}} in the function URL",
      }),
    ),
  },
  { additionalProperties: true },
);

const Spoken = Type.Object({
  start: Type.String({ description: 'ISO 8601, to book with' }),
  spoken: Type.String({ description: 'The time as a person says it, in the time zone' }),
});

export const ToolResponse = Type.Object({
  message: Type.String({ description: 'What the agent says, in plain words' }),
  time_zone: Type.Optional(Type.String()),
  slots: Type.Optional(Type.Array(Spoken)),
  booked: Type.Optional(
    Type.Boolean({
      description: 'True only for a confirmed booking; a request the firm must confirm is false',
    }),
  ),
  status: Type.Optional(
    Type.Union([Type.Literal('booked'), Type.Literal('requested'), Type.Literal('rescheduled')], {
      description: 'requested: the firm confirms the time later; rescheduled: the call’s booking was moved',
    }),
  ),
  reason: Type.Optional(
    Type.Union(
      [
        Type.Literal('slot_taken'),
        Type.Literal('too_soon_or_far'),
        Type.Literal('phone_required'),
        Type.Literal('booking_limit_reached'),
        Type.Literal('cannot_move'),
      ],
      { description: 'Why nothing was booked, when the calendar refused' },
    ),
  ),
  booking_uid: Type.Optional(Type.String()),
  start: Type.Optional(Type.String()),
  spoken: Type.Optional(Type.String()),
  alternatives: Type.Optional(Type.Array(Spoken)),
});
