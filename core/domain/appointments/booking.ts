import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { runEffect } from '../../platform/db/effect-recorder.js';
import {
  newEffectRecord,
  type EffectRecord,
  type EffectSubject,
  type EffectSubjectDoc,
} from '../../platform/db/effect-records.js';
import { doneIdempotent, runIdempotent } from '../../platform/db/idempotency.js';
import { AppError, invalidRequest, notFound, type ErrorDetail } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import { isTimeZone } from '../../platform/time-zone.js';
import type { Services } from '../../wiring/services.js';
import { bookingMayHaveHappened, CalcomError, type CalcomClient } from '../../integrations/booking/calcom.js';
import { normalizeEmail } from '../contact-points/emails.js';
import { toE164 } from '../contact-points/phones.js';
import type { FirmDoc } from '../firms/firms.js';
import { findLead } from '../leads/leads.js';
import {
  bookingProviderOf,
  calcomOf,
  daysFrom,
  forgetSlots,
  freeSlots,
  providerFailure,
} from './availability.js';
import { attachAppointment, statusOfCalBooking } from './lead-appointment.js';

// A booking through the firm's provider (docs/appointments.md#booking). The request becomes an
// appointment record first; Cal.com's POST /v2/bookings runs through the effect recorder on it,
// marked with our appointment id in the booking's metadata. A process that dies between Cal.com's
// answer and our record leaves the effect `running`; whoever resumes it (a retry with the same
// Idempotency-Key, through runIdempotent's recover) asks Cal.com for the booking carrying that id
// before booking again. So one key is one booking, whatever fails in between.
//
// A record may also move a booking (`reschedule_of`: Cal.com's POST /v2/bookings/{uid}/reschedule,
// which makes a new booking with a new uid); a lost answer is then found by reading the old
// booking, which names the booking it became.
//
// On a seated event type the booking is shared by every seat of its time, and a move by uid alone
// moves all of them: the record moves the lead's seat alone (`reschedule_seat`, Cal.com's
// seatUid) when it is known; a booking recorded before seats were kept is read from Cal.com first
// and the attendee's seat found by the address we booked with, and a seated booking holding no
// seat of theirs is refused (409 seat_not_found) rather than moved whole
// (docs/appointments.md#moving-a-seat). A seat's move leaves the old booking unmarked, so its
// lost answer is found as the attendee's seat at the new time.
//
// Cal.com's refusals are answered as what they are (docs/appointments.md#refusals): a slot taken
// (409 slot_unavailable) or not bookable then (409 slot_not_bookable: minimum notice, booking
// window), each with the next free slots; a phone number the event type requires (400
// attendee_phone_required); the person's limit of upcoming bookings (409 booking_limit_reached).
// Cal.com's own words go to the log.
//
// No reminders are made here: they come from Cal.com's BOOKING_CREATED webhook (docs/bookings.md#events), keyed by
// the booking uid, which stores each once however often it is delivered.

/** Metadata key on the Cal.com booking naming our appointment. */
export const APPOINTMENT_METADATA_KEY = 'intake_appointment_id';
/** How many free slots a 409 slot_unavailable proposes. */
const ALTERNATIVES = 5;
/** The codes of Cal.com's refusals (a final failure of the booking). */
export const REFUSED = new Set([
  'slot_unavailable',
  'slot_not_bookable',
  'attendee_phone_required',
  'booking_limit_reached',
  'seat_not_found',
]);

export interface AppointmentRequest {
  start: string;
  attendee: { name: string; email: string; timeZone: string; phone?: string };
  notes?: string;
  /** The lead the appointment is for (it then shows it); it must exist and be the firm's. */
  leadId?: string;
  /** The lead of the conversation booking it (a call's or chat's, made later: lead-appointment.ts). */
  conversationLeadId?: string;
  /** Move this booking (its uid) to `start` instead of booking anew. */
  rescheduleOf?: string;
  /** The attendee's seat on `rescheduleOf` (lead-appointment.ts SeatUid): absent, Cal.com is asked. */
  rescheduleSeat?: string | null;
}

export interface AppointmentResult {
  booking_uid: string;
  start: string;
  end: string;
  status: string;
  /** The seat booked or moved, on a seated event type (Cal.com's seatUid). */
  seat_uid?: string;
}

interface AppointmentDoc {
  _id: string;
  firm: string;
  event_type_id: number;
  start: string;
  attendee: { name: string; email: string; timeZone: string; phone: string | null };
  notes: string | null;
  lead_id: string | null;
  /** The booking this record moves (Cal.com uid); null: a new booking. */
  reschedule_of?: string | null;
  /** The seat of it to move: a seatUid; null: the whole booking (no seat); absent: ask Cal.com. */
  reschedule_seat?: string | null;
  booking: EffectRecord<AppointmentResult>;
  created_at: Date;
}

const appointments = (db: Db) => collection<AppointmentDoc>(db, COLLECTIONS.appointments);

function subjectOf(services: Services, doc: Pick<AppointmentDoc, '_id' | 'firm'>): EffectSubject {
  return {
    collection: services.mongo.db.collection<EffectSubjectDoc>(COLLECTIONS.appointments),
    id: doc._id,
    exclusive: (write) =>
      withRecordLock(services.redis, redisKeys(services.config).appointmentLock(doc.firm, doc._id), write),
  };
}

/** The request normalised: start in UTC, email lower-cased, phone E.164; 400 naming each bad field. */
function normalise(
  request: AppointmentRequest,
): Omit<AppointmentDoc, '_id' | 'firm' | 'event_type_id' | 'booking' | 'created_at' | 'reschedule_of'> {
  const problems: ErrorDetail[] = [];
  const startMs = Date.parse(request.start);
  if (!Number.isFinite(startMs)) problems.push({ path: '/start', message: 'is not a date-time' });
  else if (startMs < Date.now()) problems.push({ path: '/start', message: 'is in the past' });
  const email = normalizeEmail(request.attendee.email);
  if (email === null) problems.push({ path: '/attendee/email', message: 'is not a valid email address' });
  if (!isTimeZone(request.attendee.timeZone))
    problems.push({
      path: '/attendee/timeZone',
      message: 'is not an IANA time zone (such as America/Chicago)',
    });
  const phone = request.attendee.phone === undefined ? null : toE164(request.attendee.phone, 'US');
  if (request.attendee.phone !== undefined && phone === null)
    problems.push({ path: '/attendee/phone', message: 'is not a valid phone number' });
  if (request.attendee.name.trim() === '') problems.push({ path: '/attendee/name', message: 'is empty' });
  if (problems.length > 0) throw invalidRequest('Some appointment fields are not valid.', problems);
  return {
    start: new Date(startMs).toISOString(),
    attendee: {
      name: request.attendee.name.trim(),
      email: email!,
      timeZone: request.attendee.timeZone,
      phone,
    },
    notes: request.notes?.trim() || null,
    lead_id: request.leadId ?? request.conversationLeadId ?? null,
  };
}

/**
 * Books a slot for a firm; with `idempotencyKey`, at most one booking per key (a repeat answers
 * the first booking). 409 booking_not_configured without a provider, 409 slot_unavailable (with
 * the next free slots as details) when the slot is taken.
 */
export async function bookAppointment(
  services: Services,
  firm: FirmDoc,
  request: AppointmentRequest,
  idempotencyKey?: string,
): Promise<{ result: AppointmentResult; repeated: boolean }> {
  const db = services.mongo.db;
  if (idempotencyKey !== undefined) {
    // A repeat of a finished request answers what it got, before the request is checked again
    // (its lead deleted, the firm's booking provider changed since).
    const done = await doneIdempotent(db, { scope: 'appointment', firm: firm._id, key: idempotencyKey });
    const earlier = done === null ? null : await resume(services, firm, done);
    if (earlier !== null) return { result: earlier, repeated: true };
  }
  const booking = bookingProviderOf(firm);
  const fields = normalise(request);
  if (request.leadId !== undefined) {
    const lead = await findLead(db, request.leadId);
    if (lead === null || lead.firm !== firm._id) throw notFound('lead');
  }
  const doc: AppointmentDoc = {
    _id: newId('appt'),
    firm: firm._id,
    event_type_id: booking.event_type_id,
    ...fields,
    reschedule_of: request.rescheduleOf ?? null,
    ...(request.rescheduleOf === undefined || request.rescheduleSeat === undefined
      ? {}
      : { reschedule_seat: request.rescheduleSeat }),
    booking: newEffectRecord<AppointmentResult>(),
    created_at: new Date(),
  };
  if (idempotencyKey === undefined) {
    await appointments(db).insertOne(doc);
    try {
      return { result: await book(services, firm, doc), repeated: false };
    } catch (err) {
      // Cal.com may have booked: ask it once before answering (without a key, no later retry can).
      if (!(await leftRunning(db, doc._id))) throw err;
      const resumed = await resume(services, firm, doc._id);
      if (resumed === null) throw err;
      return { result: resumed, repeated: false };
    }
  }
  let outcome: AppointmentResult | undefined;
  const { resourceId, created } = await runIdempotent(
    db,
    { scope: 'appointment', firm: firm._id, key: idempotencyKey },
    doc._id,
    async () => {
      await appointments(db).insertOne(doc);
      try {
        outcome = await book(services, firm, doc);
      } catch (err) {
        // Cal.com may have booked (no answer, a 5xx): the key stays with this record, whose
        // effect is left `running`, so that the resume below and every retry ask Cal.com first.
        if (await leftRunning(db, doc._id)) return;
        throw err;
      }
    },
    async (id) => (await resume(services, firm, id)) !== null,
  );
  if (created && outcome !== undefined) return { result: outcome, repeated: false };
  const resumed = await resume(services, firm, resourceId);
  if (resumed === null) throw new Error(`appointment ${resourceId} of a done key cannot be read`);
  return { result: resumed, repeated: true };
}

async function leftRunning(db: Db, id: string): Promise<boolean> {
  const doc = await appointments(db).findOne({ _id: id }, { projection: { booking: 1 } });
  return doc?.booking.state === 'running';
}

/** The booking of an appointment record, finished if a dead request left it half-way; null: none. */
async function resume(services: Services, firm: FirmDoc, id: string): Promise<AppointmentResult | null> {
  const doc = await appointments(services.mongo.db).findOne({ _id: id });
  if (doc === null || doc.firm !== firm._id) return null;
  if (doc.booking.state === 'done' && doc.booking.result !== null) return doc.booking.result;
  if (doc.booking.state === 'failed') return null;
  try {
    return await book(services, firm, doc);
  } catch (err) {
    if (err instanceof AppError && REFUSED.has(err.code)) return null;
    throw err;
  }
}

const resultOf = (b: {
  uid: string;
  start: string;
  end: string;
  status: string;
  seatUid?: string;
}): AppointmentResult => ({
  booking_uid: b.uid,
  start: b.start,
  end: b.end,
  status: b.status,
  ...(b.seatUid === undefined ? {} : { seat_uid: b.seatUid }),
});

/** The booking an earlier attempt of the record made, if it made one (Cal.com is asked). */
async function madeBefore(calcom: CalcomClient, doc: AppointmentDoc): Promise<AppointmentResult | null> {
  if (doc.reschedule_of != null) {
    const old = await calcom.getBooking(doc.reschedule_of);
    if (old.rescheduledToUid === undefined) {
      // A seat's move leaves its booking as it was, less that seat: the seat is at the new time.
      if (old.seats === undefined) return null;
      const email = doc.attendee.email.toLowerCase();
      if (old.seats.some((s) => s.email.toLowerCase() === email)) return null;
      const seat = await calcom.findBooking({
        eventTypeId: doc.event_type_id,
        attendeeEmail: doc.attendee.email,
        start: doc.start,
      });
      return seat === null ? null : resultOf(seat);
    }
    const moved = await calcom.getBooking(old.rescheduledToUid);
    return Date.parse(moved.start) === Date.parse(doc.start) ? resultOf(moved) : null;
  }
  const found = await calcom.findBooking({
    eventTypeId: doc.event_type_id,
    attendeeEmail: doc.attendee.email,
    start: doc.start,
    key: APPOINTMENT_METADATA_KEY,
    value: doc._id,
  });
  return found === null ? null : resultOf(found);
}

/** Cal.com's booking for the record, through the effect recorder; then the lead shows it. */
async function book(services: Services, firm: FirmDoc, doc: AppointmentDoc): Promise<AppointmentResult> {
  const booking = bookingProviderOf(firm);
  const calcom = calcomOf(services, booking);
  let record: EffectRecord<AppointmentResult>;
  try {
    record = await runEffect<AppointmentResult>(
      subjectOf(services, doc),
      {
        path: 'booking',
        mayHaveHappened: bookingMayHaveHappened,
        isFinal: (err) => err instanceof CalcomError && err.status >= 400 && err.status < 500,
        reconcile: async () => {
          const found = await madeBefore(calcom, doc);
          return found === null ? null : { state: 'done', result: found };
        },
      },
      // One attempt per request: a failure is answered now (a retry is a new request).
      { lastAttempt: false },
      async () => {
        if (doc.reschedule_of != null) {
          const seatUid =
            doc.reschedule_seat !== undefined
              ? doc.reschedule_seat
              : await calcom.seatOf(doc.reschedule_of, doc.attendee.email);
          const moved = await calcom.rescheduleBooking(doc.reschedule_of, {
            start: doc.start,
            ...(seatUid === null ? { reason: 'The client asked for another time.' } : { seatUid }),
          });
          return { state: 'done', result: resultOf(moved) };
        }
        const made = await calcom.createBooking({
          eventTypeId: doc.event_type_id,
          start: doc.start,
          attendee: {
            name: doc.attendee.name,
            email: doc.attendee.email,
            timeZone: doc.attendee.timeZone,
            ...(doc.attendee.phone === null ? {} : { phoneNumber: doc.attendee.phone }),
          },
          metadata: { [APPOINTMENT_METADATA_KEY]: doc._id, firm: doc.firm },
          ...(doc.notes === null ? {} : { notes: doc.notes }),
        });
        return { state: 'done', result: resultOf(made) };
      },
    );
  } catch (err) {
    if (err instanceof CalcomError) {
      services.log.warn(
        { firm: doc.firm, appointment: doc._id, status: err.status, code: err.code, calcom: err.calMessage },
        'the booking provider refused the booking',
      );
    }
    throw await refusalAnswer(services, firm, doc, err);
  }
  const result = record.result!;
  // The cached availability offered the slot taken now (and not one a reschedule freed).
  await forgetSlots(services, firm._id);
  if (doc.lead_id !== null) {
    await attachAppointment(
      services,
      firm._id,
      doc.lead_id,
      {
        booking_uid: result.booking_uid,
        start: result.start,
        status: doc.reschedule_of != null ? 'rescheduled' : statusOfCalBooking(result.status),
      },
      doc.attendee.email,
      result.seat_uid ?? null,
    );
  }
  return result;
}

/** The error to answer for a failed booking: each of Cal.com's refusals as what it is. */
async function refusalAnswer(
  services: Services,
  firm: FirmDoc,
  doc: AppointmentDoc,
  err: unknown,
): Promise<AppError> {
  if (!(err instanceof CalcomError)) return providerFailure(err);
  switch (err.refusal) {
    case 'slot_taken':
      return slotUnavailable(services, firm, doc);
    case 'too_soon_or_far': {
      const next = await nextFree(services, firm, doc, Date.now());
      return new AppError(
        409,
        'slot_not_bookable',
        next.length > 0
          ? `The firm's calendar does not take bookings at that time (too soon for its minimum notice, or too far ahead); details list the next ${next.length} bookable slots (message: the start).`
          : "The firm's calendar does not take bookings at that time (too soon for its minimum notice, or too far ahead), and no other slot is free in the next 7 days.",
        next.map((start) => ({ path: '/start', message: start })),
      );
    }
    case 'phone_required':
      return new AppError(
        400,
        'attendee_phone_required',
        "The firm's calendar requires the attendee's phone number to book; send attendee.phone.",
        [{ path: '/attendee/phone', message: "is required by the firm's calendar" }],
      );
    case 'booking_limit':
      return new AppError(
        409,
        'booking_limit_reached',
        'This person already has as many upcoming appointments with the firm as its calendar allows.',
      );
    case 'seat_not_found':
      return new AppError(
        409,
        'seat_not_found',
        "The booking to move is a seat of a group session and the firm's calendar no longer shows this person's seat on it; nothing was moved (moving the whole session would move everyone on it).",
      );
    default:
      return providerFailure(err);
  }
}

/** The next free slots (fresh from Cal.com) after `afterMs`, in the attendee's time zone; [] when it fails. */
async function nextFree(
  services: Services,
  firm: FirmDoc,
  doc: AppointmentDoc,
  afterMs: number,
): Promise<string[]> {
  try {
    const slots = await freeSlots(services, firm, daysFrom(afterMs, 7, doc.attendee.timeZone), {
      fresh: true,
    });
    return slots.filter((s) => Date.parse(s) > afterMs).slice(0, ALTERNATIVES);
  } catch {
    // The refusal is the answer; alternatives are a courtesy.
    return [];
  }
}

/** 409 slot_unavailable with the next free slots (fresh from Cal.com) in the attendee's time zone. */
async function slotUnavailable(services: Services, firm: FirmDoc, doc: AppointmentDoc): Promise<AppError> {
  const next = await nextFree(services, firm, doc, Date.parse(doc.start));
  return new AppError(
    409,
    'slot_unavailable',
    next.length > 0
      ? `That slot was taken meanwhile; details list the next ${next.length} free slots (message: the start).`
      : 'That slot was taken meanwhile and no other slot is free in the next 7 days.',
    next.map((start) => ({ path: '/start', message: start })),
  );
}
