import type { Services } from '../../wiring/services.js';
import { recordEvent } from '../events/record-event.js';
import type { EventType } from '../events/event-types.js';
import { findLead } from '../leads/leads.js';
import { leadView } from '../leads/lead-view.js';
import { STATUS_OF, type AppointmentStatus, type AppointmentTrigger } from './lead-appointment.js';

// The appointment.* domain events (docs/events.md#event-types): one per booking event that moved
// a lead's appointment, about that lead (the subject), keyed by the booking trigger, the booking
// and the delivery, so a repeated delivery or a retried job records it once.

const TYPE_OF: Record<AppointmentStatus, EventType> = {
  booked: 'appointment.booked',
  requested: 'appointment.requested',
  rescheduled: 'appointment.rescheduled',
  cancelled: 'appointment.cancelled',
  rejected: 'appointment.rejected',
};

/**
 * Records the event of a booking event applied to lead `leadId`'s appointment: the appointment it
 * set and the lead (null while the lead is not made yet: an agent booked during the call).
 */
export async function recordAppointmentEvent(
  services: Services,
  firm: string,
  leadId: string,
  change: { trigger: AppointmentTrigger; uid: string; start_at: number; delivery: string; event_at: number },
): Promise<string> {
  const status = STATUS_OF[change.trigger];
  const lead = await findLead(services.mongo.db, leadId);
  return recordEvent(services, {
    firm,
    type: TYPE_OF[status],
    subject: leadId,
    key: `${change.trigger}|${change.uid}|${change.delivery}`,
    occurred_at: new Date(change.event_at),
    data: {
      lead_id: leadId,
      booking_uid: change.uid,
      start: new Date(change.start_at).toISOString(),
      status,
      lead: lead === null || lead.firm !== firm ? null : leadView(lead),
    },
  });
}
