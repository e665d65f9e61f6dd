import type { Services } from '../../wiring/services.js';
import { recordEvent } from '../events/record-event.js';
import type { EventType } from '../events/event-types.js';
import { findLead } from '../leads/leads.js';
import { leadView } from '../leads/lead-view.js';
import type { AppointmentStatus, LeadAppointment } from './lead-appointment.js';

// The appointment.* domain events (docs/events.md#event-types): one per move of a lead's
// appointment, about that lead (the subject): by a booking event (the booking processor) or by
// our own booking (the API, an agent's tool, the chat). The key is the appointment it set (status,
// booking, start), so our booking and Cal.com's event of it, a repeated delivery or a retried job
// record it once.

const TYPE_OF: Record<AppointmentStatus, EventType> = {
  booked: 'appointment.booked',
  requested: 'appointment.requested',
  rescheduled: 'appointment.rescheduled',
  cancelled: 'appointment.cancelled',
  rejected: 'appointment.rejected',
};

/**
 * Records the move of lead `leadId`'s appointment to `appointment` at `at`, with the lead (null
 * while the lead is not made yet: an agent booked during the call).
 */
export async function recordAppointmentEvent(
  services: Services,
  firm: string,
  leadId: string,
  appointment: LeadAppointment,
  at: Date,
): Promise<string> {
  const lead = await findLead(services.mongo.db, leadId);
  return recordEvent(services, {
    firm,
    type: TYPE_OF[appointment.status],
    subject: leadId,
    key: `${appointment.status}|${appointment.booking_uid}|${appointment.start}`,
    occurred_at: at,
    data: {
      lead_id: leadId,
      booking_uid: appointment.booking_uid,
      start: appointment.start,
      status: appointment.status,
      lead: lead === null || lead.firm !== firm ? null : leadView(lead),
    },
  });
}
