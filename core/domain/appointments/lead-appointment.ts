import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { leadLockKey } from '../leads/lead-lock.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';
import { recordAppointmentEvent } from './record-appointment-events.js';
import { normalizeEmail } from '../contact-points/emails.js';
import { replaceById } from '../../platform/db/upsert.js';

// The appointment a lead shows (docs/appointments.md#the-lead): the booking it is for now, its
// start and status, following every booking event. A booking can come before its lead exists (an
// agent books during the call; the call's lead is made when it is analysed), so the appointment
// is kept under the lead's id (leads of calls and chats have ids derived from them) and copied
// onto the lead by whichever comes second: a write records the key document then updates the
// lead; the lead's creation inserts the lead then reads the key document. Either order, one of
// the two sees the other; and the creation reads the key document again after its copy, so an
// event's write landing between its read and its copy is not undone (copyAppointmentToNewLead).
//
// Cal.com's events name a booking by uid: `booking_leads` maps `<firm>|<uid>` to the lead, written
// when we book (and when a reschedule moves the booking to a new uid). The writes of one lead's
// appointment take turns under the lead's lock, with the lead's other writers (lead-lock.ts); an
// event older than the last one applied (Cal.com's createdAt) changes nothing, and an event of a
// booking the lead has moved away from neither.
//
// On a seated event type the lead's booking is one seat of a shared booking: the key document
// also keeps the seat's uid (`seat_uid`, from Cal.com's answer), so a later move of the lead's
// appointment moves that seat alone (booking.ts). It is kept while the booking stays the same
// uid; a move by Cal.com to another booking makes it unknown again (a seated event) or null.

export type AppointmentStatus = 'booked' | 'requested' | 'rescheduled' | 'cancelled' | 'rejected';

export interface LeadAppointment {
  booking_uid: string;
  start: string;
  status: AppointmentStatus;
}

/**
 * The lead's seat on its booking: a seatUid; null when the booking is no seat (an ordinary event
 * type); absent when unknown (booked by an earlier release, or moved by Cal.com to a seated
 * booking whose seat we were not told).
 */
export type SeatUid = string | null | undefined;

interface LeadAppointmentDoc extends LeadAppointment {
  _id: string;
  /** When the last booking event applied to it was made (ms); absent: none yet. */
  event_at?: number;
  seat_uid?: string | null;
}

interface BookingLeadDoc {
  _id: string;
  firm: string;
  lead_id: string;
  /** The attendee we booked for the lead (normalized); absent on documents from before seats. */
  email?: string;
}

/** The triggers that move a lead's appointment (Cal.com's webhook events). */
export type AppointmentTrigger =
  'BOOKING_CREATED' | 'BOOKING_REQUESTED' | 'BOOKING_REJECTED' | 'BOOKING_RESCHEDULED' | 'BOOKING_CANCELLED';

export const APPOINTMENT_STATUS_OF: Record<AppointmentTrigger, AppointmentStatus> = {
  BOOKING_CREATED: 'booked',
  BOOKING_REQUESTED: 'requested',
  BOOKING_REJECTED: 'rejected',
  BOOKING_RESCHEDULED: 'rescheduled',
  BOOKING_CANCELLED: 'cancelled',
};

const links = (db: Db) => collection<LeadAppointmentDoc>(db, COLLECTIONS.leadAppointments);
const bookingLeads = (db: Db) => collection<BookingLeadDoc>(db, COLLECTIONS.bookingLeads);
const leads = (db: Db) => db.collection<{ _id: string; appointment?: LeadAppointment }>(COLLECTIONS.leads);
const bookingKey = (firm: string, uid: string) => `${firm}|${uid}`;
/** One seat of a booking: seated events share one uid, so a seat is known by its attendee. */
const seatKey = (firm: string, uid: string, email: string) => `${firm}|${uid}|seat|${email}`;

/** Our status of a booking Cal.com answered: `pending` (confirmation required) is a request. */
export function statusOfCalBooking(calStatus: string): 'booked' | 'requested' {
  return calStatus === 'pending' ? 'requested' : 'booked';
}

/** Booking `uid` is lead `leadId`'s, and so is its seat of `email` (when known). */
async function mapBooking(
  db: Db,
  firm: string,
  uid: string,
  leadId: string,
  email: string | undefined,
): Promise<void> {
  const doc = { firm, lead_id: leadId, ...(email === undefined ? {} : { email }) };
  // Our answer and Cal.com's event of the same booking write these at once (FerretDB: upsert.ts).
  await replaceById(bookingLeads(db), bookingKey(firm, uid), doc);
  if (email !== undefined) await replaceById(bookingLeads(db), seatKey(firm, uid, email), doc);
}

async function write(db: Db, leadId: string, doc: LeadAppointmentDoc): Promise<void> {
  const { _id, event_at, seat_uid, ...appointment } = doc;
  await replaceById(links(db), _id, {
    ...appointment,
    ...(event_at === undefined ? {} : { event_at }),
    ...(seat_uid === undefined ? {} : { seat_uid }),
  });
  await leads(db).updateOne({ _id: leadId }, { $set: { appointment } });
}

/**
 * Records the appointment we booked (or moved) for lead `leadId`, and shows it on the lead when
 * the lead exists. A booking event of the same booking applied meanwhile (its webhook can arrive
 * before our answer) is newer than this and is kept.
 */
export async function attachAppointment(
  services: Services,
  firm: string,
  leadId: string,
  appointment: LeadAppointment,
  /** The attendee booked: on a seated event, the lead's seat is theirs. */
  attendeeEmail?: string,
  /** Cal.com's seatUid of that seat (null: the booking is no seat). */
  seatUid?: SeatUid,
): Promise<void> {
  const db = services.mongo.db;
  const email = attendeeEmail === undefined ? undefined : (normalizeEmail(attendeeEmail) ?? undefined);
  await mapBooking(db, firm, appointment.booking_uid, leadId, email);
  const written = await withRecordLock(services.redis, leadLockKey(services, firm, leadId), async () => {
    const current = await links(db).findOne({ _id: leadId });
    if (current?.booking_uid === appointment.booking_uid && current.event_at !== undefined) {
      // The booking's event came first and is kept; the seat is known only from our answer.
      if (seatUid !== undefined && current.seat_uid !== seatUid)
        await links(db).replaceOne({ _id: leadId }, { ...current, seat_uid: seatUid });
      return false;
    }
    await write(db, leadId, { _id: leadId, ...appointment, seat_uid: seatUid });
    return true;
  });
  // appointment.<status>; Cal.com's event of this booking, when it comes, is the same one (its key).
  if (written) await recordAppointmentEvent(services, firm, leadId, appointment, new Date());
}

/**
 * Moves the appointment of each lead a booking event names (by its uid, or a reschedule's old
 * uid; on a seated event, by the seats of the attendees it names, since every seat shares the
 * uid); an event of no lead's booking changes nothing. Returns the leads moved.
 */
export async function followBookingEvent(
  services: Services,
  event: {
    firm: string;
    trigger: AppointmentTrigger;
    uid: string;
    reschedule_uid?: string;
    start_at: number;
    event_at: number;
    /** Cal.com's seatsPerTimeSlot was set: the attendees named are the seats the event is about. */
    seated?: boolean;
    attendees?: ReadonlyArray<{ email: string }>;
  },
): Promise<string[]> {
  const db = services.mongo.db;
  const previous = event.trigger === 'BOOKING_RESCHEDULED' ? event.reschedule_uid : undefined;
  const moved: string[] = [];
  for (const { leadId, email } of await leadsOf(db, event, previous)) {
    if (previous !== undefined) await mapBooking(db, event.firm, event.uid, leadId, email);
    const appointment = await withRecordLock(
      services.redis,
      leadLockKey(services, event.firm, leadId),
      async () => {
        const current = await links(db).findOne({ _id: leadId });
        // The lead's booking now: this event's, or the one a reschedule moved from.
        const ours =
          current === null ||
          current.booking_uid === event.uid ||
          (previous !== undefined && current.booking_uid === previous);
        if (!ours || (current?.event_at !== undefined && current.event_at > event.event_at)) return null;
        const now: LeadAppointment = {
          booking_uid: event.uid,
          start: new Date(event.start_at).toISOString(),
          status: APPOINTMENT_STATUS_OF[event.trigger],
        };
        // The same booking keeps the lead's seat; another one's seat is not named by the event.
        const seat: SeatUid =
          current?.booking_uid === event.uid ? current.seat_uid : event.seated === true ? undefined : null;
        await write(db, leadId, { _id: leadId, ...now, event_at: event.event_at, seat_uid: seat });
        return now;
      },
    );
    if (appointment === null) continue;
    // appointment.<status> (a retried job re-applies the event: the same key, nothing new).
    await recordAppointmentEvent(services, event.firm, leadId, appointment, new Date(event.event_at));
    moved.push(leadId);
  }
  return moved;
}

/**
 * The leads a booking event is about, each with the attendee it booked. An ordinary booking is one
 * lead's (its uid's document). A seated event's seats share the uid, so its leads are the seats of
 * the attendees it names (Cal.com names the one seat a seat's event is about, and every attendee
 * in a whole cancel); a uid mapped before seats were told apart (no attendee on its document) is
 * followed as before.
 */
async function leadsOf(
  db: Db,
  event: { firm: string; uid: string; seated?: boolean; attendees?: ReadonlyArray<{ email: string }> },
  previous: string | undefined,
): Promise<Array<{ leadId: string; email: string | undefined }>> {
  const uids = previous === undefined ? [event.uid] : [previous, event.uid];
  const ofFirm = (doc: BookingLeadDoc | null) => (doc !== null && doc.firm === event.firm ? doc : null);
  let byUid: BookingLeadDoc | null = null;
  for (const uid of uids) {
    byUid = ofFirm(await bookingLeads(db).findOne({ _id: bookingKey(event.firm, uid) }));
    if (byUid !== null) break;
  }
  if (byUid === null) return [];
  if (event.seated !== true || byUid.email === undefined)
    return [{ leadId: byUid.lead_id, email: byUid.email }];
  const named = new Set<string>();
  for (const a of event.attendees ?? []) {
    const email = normalizeEmail(a.email);
    if (email !== null) named.add(email);
  }
  // An event naming no one is about the booking as a whole: its uid's lead, as before seats.
  if (named.size === 0) return [{ leadId: byUid.lead_id, email: byUid.email }];
  const found = new Map<string, string>();
  for (const email of named) {
    for (const uid of uids) {
      const seat = ofFirm(await bookingLeads(db).findOne({ _id: seatKey(event.firm, uid, email) }));
      if (seat !== null) {
        if (!found.has(seat.lead_id)) found.set(seat.lead_id, email);
        break;
      }
    }
  }
  return [...found].map(([leadId, email]) => ({ leadId, email }));
}

/** How many times a new lead copies its appointment when booking events keep moving it meanwhile. */
const MAX_COPIES = 10;

const sameAppointment = (a: LeadAppointment, b: LeadAppointment): boolean =>
  a.booking_uid === b.booking_uid && a.start === b.start && a.status === b.status;

/**
 * Copies onto a lead just inserted the appointment recorded under its id, if any, and returns it.
 * A booking event applied meanwhile writes the appointment, then the lead (`write`): when it lands
 * between this read and this copy, the copy would put the older appointment back over the event's.
 * So the appointment is read again after each copy until it stands as copied; a change after that
 * read reaches the lead after the copy, by the event's own write.
 */
export async function copyAppointmentToNewLead(db: Db, leadId: string): Promise<LeadAppointment | null> {
  let appointment = await appointmentOfLead(db, leadId);
  for (let copies = 0; appointment !== null && copies < MAX_COPIES; copies++) {
    await leads(db).updateOne({ _id: leadId }, { $set: { appointment } });
    const now = await appointmentOfLead(db, leadId);
    if (now === null || sameAppointment(now, appointment)) break;
    appointment = now;
  }
  return appointment;
}

/** The appointment recorded for a lead id, if any (for a lead being created, or a conversation). */
export async function appointmentOfLead(db: Db, leadId: string): Promise<LeadAppointment | null> {
  const found = await appointmentAndSeatOfLead(db, leadId);
  return found === null ? null : found.appointment;
}

/** The appointment recorded for a lead id and the lead's seat on its booking (to move it). */
export async function appointmentAndSeatOfLead(
  db: Db,
  leadId: string,
): Promise<{ appointment: LeadAppointment; seat_uid: SeatUid } | null> {
  const link = await links(db).findOne({ _id: leadId });
  return link === null
    ? null
    : {
        appointment: { booking_uid: link.booking_uid, start: link.start, status: link.status ?? 'booked' },
        seat_uid: link.seat_uid,
      };
}
