import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { leadLockKey } from '../leads/lead-lock.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';
import { recordAppointmentEvent } from './record-appointment-events.js';

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

export type AppointmentStatus = 'booked' | 'requested' | 'rescheduled' | 'cancelled' | 'rejected';

export interface LeadAppointment {
  booking_uid: string;
  start: string;
  status: AppointmentStatus;
}

interface LeadAppointmentDoc extends LeadAppointment {
  _id: string;
  /** When the last booking event applied to it was made (ms); absent: none yet. */
  event_at?: number;
}

interface BookingLeadDoc {
  _id: string;
  firm: string;
  lead_id: string;
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

/** Our status of a booking Cal.com answered: `pending` (confirmation required) is a request. */
export function statusOfCalBooking(calStatus: string): 'booked' | 'requested' {
  return calStatus === 'pending' ? 'requested' : 'booked';
}

async function mapBooking(db: Db, firm: string, uid: string, leadId: string): Promise<void> {
  await bookingLeads(db).replaceOne(
    { _id: bookingKey(firm, uid) },
    { firm, lead_id: leadId },
    { upsert: true },
  );
}

async function write(db: Db, leadId: string, doc: LeadAppointmentDoc): Promise<void> {
  const { _id, event_at, ...appointment } = doc;
  await links(db).replaceOne(
    { _id },
    { ...appointment, ...(event_at === undefined ? {} : { event_at }) },
    {
      upsert: true,
    },
  );
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
): Promise<void> {
  const db = services.mongo.db;
  await mapBooking(db, firm, appointment.booking_uid, leadId);
  const written = await withRecordLock(services.redis, leadLockKey(services, firm, leadId), async () => {
    const current = await links(db).findOne({ _id: leadId });
    if (current?.booking_uid === appointment.booking_uid && current.event_at !== undefined) return false;
    await write(db, leadId, { _id: leadId, ...appointment });
    return true;
  });
  // appointment.<status>; Cal.com's event of this booking, when it comes, is the same one (its key).
  if (written) await recordAppointmentEvent(services, firm, leadId, appointment, new Date());
}

/**
 * Moves the appointment of the lead a booking event names (by its uid, or a reschedule's old
 * uid); an event of no lead's booking changes nothing. Returns the lead moved, if any.
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
  },
): Promise<string | null> {
  const db = services.mongo.db;
  const previous = event.trigger === 'BOOKING_RESCHEDULED' ? event.reschedule_uid : undefined;
  const known =
    (previous === undefined
      ? null
      : await bookingLeads(db).findOne({ _id: bookingKey(event.firm, previous) })) ??
    (await bookingLeads(db).findOne({ _id: bookingKey(event.firm, event.uid) }));
  if (known === null || known.firm !== event.firm) return null;
  const leadId = known.lead_id;
  if (previous !== undefined) await mapBooking(db, event.firm, event.uid, leadId);
  const moved = await withRecordLock(services.redis, leadLockKey(services, event.firm, leadId), async () => {
    const current = await links(db).findOne({ _id: leadId });
    // The lead's booking now: this event's, or the one a reschedule moved from.
    const ours =
      current === null ||
      current.booking_uid === event.uid ||
      (previous !== undefined && current.booking_uid === previous);
    if (!ours || (current?.event_at !== undefined && current.event_at > event.event_at)) return null;
    const appointment: LeadAppointment = {
      booking_uid: event.uid,
      start: new Date(event.start_at).toISOString(),
      status: APPOINTMENT_STATUS_OF[event.trigger],
    };
    await write(db, leadId, { _id: leadId, ...appointment, event_at: event.event_at });
    return { leadId, appointment };
  });
  // appointment.<status> (a retried job re-applies the event: the same key, nothing new).
  if (moved !== null)
    await recordAppointmentEvent(
      services,
      event.firm,
      moved.leadId,
      moved.appointment,
      new Date(event.event_at),
    );
  return moved?.leadId ?? null;
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
  const link = await links(db).findOne({ _id: leadId });
  return link === null
    ? null
    : { booking_uid: link.booking_uid, start: link.start, status: link.status ?? 'booked' };
}
