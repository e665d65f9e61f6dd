import type { Db } from 'mongodb';
import type { DomainEvent } from '../../events/event-types.js';
import { findLead, type LeadDoc } from '../../leads/leads.js';
import type { FirmDoc } from '../../firms/firms.js';
import type { Context } from '../expressions.js';
import type { Services } from '../../../wiring/services.js';
import { BusyUntilError } from '../../../platform/busy-until.js';

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

/**
 * A run's lead named by its event but not stored yet: call.analyzed names the lead the call's
 * lead effect makes next, an appointment booked during a call the lead the call will make. The
 * step looks again at `until`, parked in its queue, spending no attempt (workers/runner.ts).
 */
export class LeadNotStoredYetError extends BusyUntilError {
  constructor(leadId: string, until: number) {
    super(
      `The run's lead ${leadId} is not stored yet; the step looks again at ${new Date(until).toISOString()}.`,
      until,
    );
    this.name = 'LeadNotStoredYetError';
  }
}

/**
 * The lead a step of `run` reads. While the lead its event names is not stored yet, and for at
 * most WORKFLOW_LEAD_WAIT_MS since the run started, the step waits for it (LeadNotStoredYetError):
 * read at once, it would find no lead and skip what the lead was for (a Clio matter, a mail to the
 * caller). Each look comes a quarter of the time waited so far later (1 s to a minute). Past the
 * bound the step goes on without the lead, as for an event about none; a lead of another firm is
 * none of the run's, as in readLead, and nothing to wait for.
 */
export async function readRunLead(
  services: Services,
  run: { firm: string; lead_id: string | null; started_at: Date },
): Promise<LeadDoc | null> {
  if (run.lead_id === null) return null;
  const lead = await findLead(services.mongo.db, run.lead_id);
  if (lead !== null) return lead.firm === run.firm ? lead : null;
  const now = Date.now();
  const waited = now - run.started_at.getTime();
  if (waited >= services.config.workflowLeadWaitMs) return null;
  throw new LeadNotStoredYetError(
    run.lead_id,
    now + Math.min(60_000, Math.max(1000, Math.round(waited / 4))),
  );
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
