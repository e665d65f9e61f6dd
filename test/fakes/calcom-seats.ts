// Seated event types in the Cal.com fake (test/fakes/calcom-server.ts), as Cal.com's API v2
// (cal-api-version 2024-08-13) does them in calcom/cal.com:
// - Every seat of one time is one booking (one uid); each seat has a uid of its own, `seatUid`
//   (the BookingSeat's referenceUid). A create answers CreateSeatedBookingOutput_2024_08_13 (the
//   booking, its attendees each with their seatUid, and the new seat's seatUid); reads answer
//   GetSeatedBookingOutput_2024_08_13 (packages/platform/types/bookings/2024-08-13/outputs/
//   booking.output.ts; the output service lists every attendee to the owner's API key).
// - A body with `seatUid` is a seat's request, validated whitelist + forbidNonWhitelisted
//   (reschedule-booking-input.pipe.ts, cancel-booking-input.pipe.ts): a reschedule takes only
//   {start, seatUid, rescheduledBy?}, a cancel only {seatUid}; anything else is a 400 naming it.
// - A seat's reschedule with an unknown seatUid is a 404 (input.service.ts
//   transformInputRescheduleSeatedBooking); the seat leaves its booking (the booking is cancelled
//   when it was the last: lastAttendeeDeleteBooking) and joins the booking at the new time, or a
//   new booking with a new seat (attendeeRescheduleSeatedBooking.ts).
// - A reschedule without seatUid is the owner's (the API key's) and moves the whole booking, every
//   seat, in place: same uid, new time (ownerRescheduleSeatedBooking, moveSeatedBookingToNewTimeSlot).
// - A seat's cancel removes that seat; on a booking of fewer than two attendees it cancels the
//   whole booking (cancelAttendeeSeat.ts returns early), and a seatUid not on a booking of two or
//   more is a 400 "User not a part of this booking".
import { randomUUID } from 'node:crypto';

export interface FakeCalAttendee {
  name: string;
  email: string;
  timeZone: string;
  phoneNumber: string | null;
}

/** One seat of a seated booking: who holds it and what they booked with. */
export interface FakeCalSeat {
  seatUid: string;
  attendee: FakeCalAttendee;
  metadata: Record<string, string>;
  notes: string | null;
}

/** Cal.com's words for seats (handleSeats, ErrorCode, input.service.ts, cancelAttendeeSeat.ts). */
export const SEAT_MESSAGES = {
  full: 'booking_seats_full_error',
  alreadySeated: 'already_signed_up_for_this_booking_error',
  notPartOf: 'User not a part of this booking',
  seatUnknown: (seatUid: string) => `Seat with uid=${seatUid} does not exist.`,
  attendeeNotOn: (email: string, uid: string, seatUid: string) =>
    `Attendee with e-mail ${email} for booking with uid=${uid} and seatUid=${seatUid} not found`,
  bookingNotFound: (uid: string) => `Booking with uid=${uid} not found`,
} as const;

export const newSeat = (
  attendee: FakeCalAttendee,
  metadata: Record<string, string>,
  notes: string | null,
): FakeCalSeat => ({ seatUid: randomUUID(), attendee, metadata, notes });

/** Whether a body is a seat's (Cal.com's pipes look for the key, whatever its value). */
export const isSeatBody = (body: unknown): body is { seatUid: unknown } =>
  typeof body === 'object' && body !== null && Object.hasOwn(body, 'seatUid');

/**
 * The pipe's refusal of properties a body's class does not have (forbidNonWhitelisted), in its
 * words (`formatErrors`); null when there are none.
 */
export function nonWhitelisted(body: object, allowed: readonly string[]): string | null {
  const extra = Object.keys(body).filter((k) => !allowed.includes(k));
  if (extra.length === 0) return null;
  return extra.map((k) => `${k} property is wrong,property ${k} should not exist `).join(', ');
}

/** The attendees of a seated booking as GetSeatedBookingOutput_2024_08_13 lists them. */
export function seatedAttendees(seats: readonly FakeCalSeat[]): Array<Record<string, unknown>> {
  return seats.map((s) => ({
    name: s.attendee.name,
    email: s.attendee.email,
    displayEmail: s.attendee.email,
    timeZone: s.attendee.timeZone,
    language: 'en',
    absent: false,
    ...(s.attendee.phoneNumber === null ? {} : { phoneNumber: s.attendee.phoneNumber }),
    seatUid: s.seatUid,
    bookingFieldsResponses: {
      name: s.attendee.name,
      email: s.attendee.email,
      ...(s.notes === null ? {} : { notes: s.notes }),
    },
    metadata: s.metadata,
  }));
}
