import type { LeadDoc } from './leads.js';

// The lead's public shape: what the leads routes answer and what lead.* and appointment.* events
// carry (docs/events.md).

/** The lead as the API shows it. */
export function leadView(lead: LeadDoc) {
  return {
    id: lead._id,
    firm: lead.firm,
    source: lead.source,
    call_id: lead.call_id,
    chat_id: lead.chat_id,
    campaign_id: lead.campaign_id,
    first_name: lead.first_name,
    last_name: lead.last_name,
    phone: lead.phone,
    email: lead.email,
    case_type: lead.case_type,
    summary: lead.summary,
    urgency: lead.urgency,
    notes: lead.notes,
    timezone: lead.timezone,
    do_not_call: lead.do_not_call,
    consent:
      lead.consent === undefined || lead.consent === null
        ? null
        : { ...lead.consent, obtained_at: new Date(lead.consent.obtained_at).toISOString() },
    appointment:
      lead.appointment === undefined
        ? null
        : {
            booking_uid: lead.appointment.booking_uid,
            start: lead.appointment.start,
            // Appointments recorded before they had a status were bookings.
            status: lead.appointment.status ?? 'booked',
          },
    known_client: lead.known_client ?? null,
    workflow_status: lead.workflow_status ?? null,
    tags: lead.tags ?? [],
    created_at: lead.created_at.toISOString(),
  };
}
