import type { Db } from 'mongodb';
import type { DomainEvent } from '../../events/event-types.js';
import { findLead, type LeadDoc } from '../../leads/leads.js';
import type { FirmDoc } from '../../firms/firms.js';
import type { Context } from '../expressions.js';

// What a run's conditions and templates read: `event` (type, subject, occurred_at, data), `lead`
// (the lead the event is about, as read when the step runs), `firm` and `workflow`.

/** The lead an event is about: its subject when that is a lead, else its data's `lead_id`. */
export function leadIdOf(event: { subject: string; data: Record<string, unknown> }): string | null {
  if (event.subject.startsWith('lead_')) return event.subject;
  const id = event.data.lead_id;
  return typeof id === 'string' && id !== '' ? id : null;
}

export const eventData = (event: DomainEvent): Record<string, unknown> => {
  try {
    const data = JSON.parse(event.data_json) as unknown;
    return typeof data === 'object' && data !== null && !Array.isArray(data)
      ? (data as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
};

function leadView(lead: LeadDoc): Record<string, unknown> {
  return {
    id: lead._id,
    first_name: lead.first_name,
    last_name: lead.last_name,
    name: [lead.first_name, lead.last_name].filter(Boolean).join(' ') || null,
    phone: lead.phone,
    email: lead.email,
    case_type: lead.case_type,
    summary: lead.summary,
    urgency: lead.urgency,
    timezone: lead.timezone,
    appointment: lead.appointment ?? null,
    tags: lead.tags ?? [],
    status: lead.workflow_status ?? null,
  };
}

export async function readLead(db: Db, firm: string, leadId: string | null): Promise<LeadDoc | null> {
  if (leadId === null) return null;
  const lead = await findLead(db, leadId);
  return lead !== null && lead.firm === firm ? lead : null;
}

export function contextOf(
  event: { id: string; type: string; subject: string; occurred_at: Date; data: Record<string, unknown> },
  lead: LeadDoc | null,
  firm: FirmDoc,
  workflow: { id: string; version: number | null; run_id: string | null },
): Context {
  return {
    event: { ...event, occurred_at: event.occurred_at.toISOString() },
    lead: lead === null ? null : leadView(lead),
    firm: { slug: firm._id, name: firm.name },
    workflow,
  };
}
