import { randomInt } from 'node:crypto';

// Cal.com's webhook bodies as its sender builds them (calcom/cal.com:
// packages/features/webhooks/lib/sendPayload.ts wraps a CalendarEvent, the fields
// BookingPayloadBuilder / EventPayloadType give it, in {triggerEvent, createdAt, payload}).
// The seat events follow handleSeats.ts (a new seat is a BOOKING_CREATED of the same booking:
// same uid, same start, the new attendee, attendeeSeatId) and cancelAttendeeSeat.ts (a seat
// cancel is a BOOKING_CANCELLED of that booking naming only the leaver). A video meeting has
// location "integrations:daily" (an app, not a place), the join link in metadata.videoCallUrl
// and the room in videoCallData. The "Ping test" button sends a PING, signed
// "no-secret-provided" when the webhook has no secret. Only the fields are Cal.com's; the
// values are invented.

export interface CalPerson {
  name: string;
  email: string;
  timeZone: string;
}

/** An attendee as CalendarEvent carries one. */
export interface CalAttendee extends CalPerson {
  firstName: string;
  lastName: string;
  phoneNumber: string | null;
  language: { locale: string };
  utcOffset: number;
}

/** The payload of a booking trigger: Cal.com's CalendarEvent plus the EventTypeInfo fields. */
export interface CalBookingPayload {
  type: string;
  title: string;
  description: string | null;
  additionalNotes: string | null;
  customInputs: Record<string, unknown>;
  startTime: string;
  endTime: string;
  organizer: {
    id: number;
    name: string;
    email: string;
    username: string;
    timeZone: string;
    language: { locale: string };
    timeFormat: string;
    utcOffset: number;
  };
  responses: Record<string, { label: string; value: unknown }>;
  userFieldsResponses: Record<string, unknown>;
  attendees: CalAttendee[];
  location: string | null;
  destinationCalendar: null;
  hideCalendarNotes: boolean;
  requiresConfirmation: boolean | null;
  eventTypeId: number;
  seatsShowAttendees: boolean | null;
  seatsPerTimeSlot: number | null;
  seatsShowAvailabilityCount: boolean | null;
  schedulingType: string | null;
  iCalUID: string;
  iCalSequence: number;
  uid: string;
  bookingId: number;
  eventTitle: string;
  eventDescription: string | null;
  price: number;
  currency: string;
  length: number;
  status: 'ACCEPTED' | 'CANCELLED' | 'PENDING' | 'REJECTED';
  metadata: { videoCallUrl?: string };
  videoCallData?: { type: string; id: string; password: string; url: string };
  appsStatus?: unknown[];
  /** Seated events: the seat this event is about. */
  attendeeSeatId?: string;
  rescheduleUid?: string;
  rescheduleStartTime?: string;
  rescheduleEndTime?: string;
  rescheduledBy?: string;
  cancellationReason?: string;
  cancelledBy?: string;
}

export interface CalEnvelope<P> {
  triggerEvent: string;
  createdAt: string;
  payload: P;
}

const HOUR = 3600_000;
/** Cal.com's times: UTC, whole seconds, "Z". */
export const calTime = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The firm's lawyer who owns the event types, as every booking names them. */
export const CAL_ORGANIZER: CalBookingPayload['organizer'] = {
  id: 7,
  name: 'Alex Counsel',
  email: 'alex@lawfirm.test',
  username: 'alex',
  timeZone: 'America/New_York',
  language: { locale: 'en' },
  timeFormat: 'h:mma',
  utcOffset: -300,
};

export function calAttendee(person: CalPerson): CalAttendee {
  const [firstName = '', ...rest] = person.name.split(' ');
  return {
    ...person,
    firstName,
    lastName: rest.join(' '),
    phoneNumber: null,
    language: { locale: 'en' },
    utcOffset: 0,
  };
}

/** An ordinary booking: one attendee, a place. */
export function calBookingPayload(
  uid: string,
  startMs: number,
  people: CalPerson[],
  fields: Partial<CalBookingPayload> = {},
): CalBookingPayload {
  const first = people[0];
  return {
    type: 'consultation',
    title: `Consultation between Alex Counsel and ${first?.name ?? 'a guest'}`,
    description: null,
    additionalNotes: 'Car accident, rear-ended',
    customInputs: {},
    startTime: calTime(startMs),
    endTime: calTime(startMs + HOUR / 2),
    organizer: CAL_ORGANIZER,
    responses: {
      name: { label: 'your_name', value: first?.name ?? '' },
      email: { label: 'email_address', value: first?.email ?? '' },
    },
    userFieldsResponses: {},
    attendees: people.map(calAttendee),
    location: '12 Main St, Suite 400',
    destinationCalendar: null,
    hideCalendarNotes: false,
    requiresConfirmation: null,
    eventTypeId: 42,
    seatsShowAttendees: true,
    seatsPerTimeSlot: null,
    seatsShowAvailabilityCount: true,
    schedulingType: null,
    iCalUID: `${uid}@Cal.com`,
    iCalSequence: 0,
    uid,
    bookingId: randomInt(1, 1_000_000),
    eventTitle: 'Consultation',
    eventDescription: null,
    price: 0,
    currency: 'usd',
    length: 30,
    status: 'ACCEPTED',
    metadata: {},
    ...fields,
  };
}

/** A video meeting on Cal Video: location "integrations:daily", the link in metadata and videoCallData. */
export function calVideoFields(uid: string): Partial<CalBookingPayload> {
  return {
    location: 'integrations:daily',
    metadata: { videoCallUrl: `https://app.cal.com/video/${uid}` },
    videoCallData: {
      type: 'daily_video',
      id: `room${uid}`,
      password: 'eyJhbGciOi.invented.token',
      url: `https://meetco.daily.co/room${uid}`,
    },
    appsStatus: [],
  };
}

/**
 * One seat of a seated event (seatsPerTimeSlot set): every seat a BOOKING_CREATED of the same
 * uid and start, naming its own attendee (with seatsShowAttendees false, only them).
 */
export function calSeatPayload(
  uid: string,
  startMs: number,
  person: CalPerson,
  seatId: string,
  fields: Partial<CalBookingPayload> = {},
): CalBookingPayload {
  return calBookingPayload(uid, startMs, [person], {
    title: 'Free legal clinic',
    eventTitle: 'Free legal clinic',
    seatsPerTimeSlot: 10,
    seatsShowAttendees: false,
    attendeeSeatId: seatId,
    ...fields,
  });
}

export function calEnvelope<P>(triggerEvent: string, payload: P, createdAt = new Date()): CalEnvelope<P> {
  return { triggerEvent, createdAt: createdAt.toISOString(), payload };
}

/** BOOKING_CREATED of a booking or of one seat. */
export const calCreated = (payload: CalBookingPayload, at?: Date) =>
  calEnvelope('BOOKING_CREATED', payload, at);

/** BOOKING_RESCHEDULED: the new booking (its uid), the old one's uid in rescheduleUid. */
export function calRescheduled(
  oldUid: string,
  oldStartMs: number,
  payload: CalBookingPayload,
  at?: Date,
): CalEnvelope<CalBookingPayload> {
  return calEnvelope(
    'BOOKING_RESCHEDULED',
    {
      ...payload,
      rescheduleUid: oldUid,
      rescheduleStartTime: calTime(oldStartMs),
      rescheduleEndTime: calTime(oldStartMs + HOUR / 2),
      rescheduledBy: payload.attendees[0]?.email ?? payload.organizer.email,
    },
    at,
  );
}

/** BOOKING_CANCELLED of a whole booking (every attendee), or of one seat (only the leaver). */
export function calCancelled(
  payload: CalBookingPayload,
  at?: Date,
  reason = 'Schedule conflict',
): CalEnvelope<CalBookingPayload> {
  return calEnvelope(
    'BOOKING_CANCELLED',
    {
      ...payload,
      status: 'CANCELLED',
      cancellationReason: reason,
      cancelledBy: payload.attendees[0]?.email ?? payload.organizer.email,
    },
    at,
  );
}

/** The "Ping test" button's body (testTrigger handler): PING with a made-up booking. */
export function calPing(now = new Date()): CalEnvelope<Record<string, unknown>> {
  return calEnvelope(
    'PING',
    {
      type: 'Test',
      title: 'Test trigger event',
      description: '',
      startTime: now.toISOString(),
      endTime: now.toISOString(),
      attendees: [
        {
          email: 'jdoe@example.com',
          name: 'John Doe',
          timeZone: 'Europe/London',
          language: { locale: 'en' },
        },
      ],
      organizer: {
        name: 'Cal',
        email: 'no-reply@cal.com',
        timeZone: 'Europe/London',
        language: { locale: 'en' },
      },
    },
    now,
  );
}

/** What Cal.com puts in X-Cal-Signature-256 when the webhook has no secret. */
export const CAL_NO_SECRET = 'no-secret-provided';
