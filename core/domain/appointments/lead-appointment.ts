import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';

// The appointment a lead shows (docs/appointments.md#the-lead). A booking can come before its
// lead exists (an agent books during the call; the call's lead is made when it is analysed), so
// the appointment is kept under the lead's id (leads of calls and chats have ids derived from
// them) and copied onto the lead by whichever comes second: the booking writes the key document
// then looks for the lead; the lead's creation inserts the lead then looks for the key document.
// Either order, one of the two sees the other. Both write the same value.

export interface LeadAppointment {
  booking_uid: string;
  start: string;
}

interface LeadAppointmentDoc extends LeadAppointment {
  _id: string;
}

const links = (db: Db) => collection<LeadAppointmentDoc>(db, COLLECTIONS.leadAppointments);
const leads = (db: Db) => db.collection<{ _id: string; appointment?: LeadAppointment }>(COLLECTIONS.leads);

/** Records the appointment of lead `leadId`, and shows it on the lead when the lead exists. */
export async function attachAppointment(db: Db, leadId: string, appointment: LeadAppointment): Promise<void> {
  await links(db).replaceOne({ _id: leadId }, { ...appointment }, { upsert: true });
  await leads(db).updateOne({ _id: leadId }, { $set: { appointment } });
}

/** The appointment recorded for a lead id, if any (for a lead being created). */
export async function appointmentOfLead(db: Db, leadId: string): Promise<LeadAppointment | null> {
  const link = await links(db).findOne({ _id: leadId });
  return link === null ? null : { booking_uid: link.booking_uid, start: link.start };
}
