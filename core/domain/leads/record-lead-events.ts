import { sha256Hex } from '../../platform/crypto.js';
import type { Services } from '../../wiring/services.js';
import { eventIdOf, recordEvent, recordEvents } from '../events/record-event.js';
import type { LeadDoc } from './leads.js';
import { leadView } from './lead-view.js';

// The lead.* domain events (docs/events.md#event-types). A lead is created once (key `created`:
// a retried step that finds its lead made records nothing new); an update is an event only when
// a field really changed, keyed by what changed and when.

/**
 * How many leads' events are recorded in one round: one insert of them all, then their fan-outs.
 * One command, so a failure leaves no insert of the round still on its way (a caller taking the
 * events back after a failure finds every one that was stored).
 */
const ROUND = 500;

/** Who a lead's lead.created is of: one per lead. */
const createdOf = (lead: LeadDoc) =>
  ({ firm: lead.firm, type: 'lead.created', subject: lead._id, key: 'created' }) as const;

const createdEvent = (lead: LeadDoc) => ({
  ...createdOf(lead),
  occurred_at: lead.created_at,
  data: leadView(lead),
});

/** lead.created. */
export function recordLeadCreated(services: Services, lead: LeadDoc): Promise<string> {
  return recordEvent(services, createdEvent(lead));
}

/** The _id of a lead's lead.created event. */
export const leadCreatedEventId = (lead: LeadDoc): string => eventIdOf(createdOf(lead));

/** lead.created for many leads (a campaign's inline leads), ROUND at a time. */
export async function recordLeadsCreated(services: Services, leads: readonly LeadDoc[]): Promise<void> {
  for (let i = 0; i < leads.length; i += ROUND) {
    await recordEvents(services, leads.slice(i, i + ROUND).map(createdEvent));
  }
}

/** The names of the fields whose values differ between `before` and `after` (of those given). */
export function changedFields<T extends object>(before: T, after: Partial<T>): string[] {
  return (Object.keys(after) as Array<keyof T>)
    .filter((k) => JSON.stringify(before[k] ?? null) !== JSON.stringify(after[k] ?? null))
    .map(String)
    .sort();
}

/**
 * lead.updated, for a change of `changed` (field names, non-empty) at `at` to the lead as it is
 * now; the key is a digest of the fields' new values and the change's time, unless the change
 * has an identity of its own (`key`: a workflow step's id). `workflows`: the chain of workflows
 * whose runs led to the change (DomainEvent.caused_by_workflows).
 */
export function recordLeadUpdated(
  services: Services,
  lead: LeadDoc,
  changed: readonly string[],
  at: Date,
  by: { key?: string; workflows?: string[] } = {},
): Promise<string> {
  const view = leadView(lead);
  const values = Object.fromEntries(changed.map((f) => [f, (lead as unknown as Record<string, unknown>)[f]]));
  return recordEvent(services, {
    firm: lead.firm,
    type: 'lead.updated',
    subject: lead._id,
    key: by.key ?? `updated|${sha256Hex(JSON.stringify(values))}|${at.toISOString()}`,
    occurred_at: at,
    data: { ...view, changed_fields: [...changed] },
    ...(by.workflows === undefined ? {} : { caused_by_workflows: by.workflows }),
  });
}
