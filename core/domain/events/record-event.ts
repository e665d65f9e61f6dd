import { createHash } from 'node:crypto';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim } from '../../platform/db/claim.js';
import { ensureWorkflowTrigger } from '../workflows/runs/trigger-glue.js';
import type { DomainEvent, EventInput } from './event-types.js';

// Recording a domain event "in the same step as the change": the event's _id derives from the
// change, so a retried step records it once (the insert is a claim; a duplicate is success) and
// makes sure again that it is acted on.

/** `evt_` + 26 hex characters of sha256(`${firm}|${type}|${subject}|${key}`). */
export function eventIdOf(input: Pick<EventInput, 'firm' | 'type' | 'subject' | 'key'>): string {
  const digest = createHash('sha256')
    .update(`${input.firm}|${input.type}|${input.subject}|${input.key}`)
    .digest('hex');
  return `evt_${digest.slice(0, 26)}`;
}

export const eventsCollection = (services: Services) =>
  collection<DomainEvent>(services.mongo.db, COLLECTIONS.events);

/** Inserts the event (a duplicate _id is success: the change was retried), then its trigger job. */
export async function recordEvent(services: Services, input: EventInput): Promise<string> {
  const _id = eventIdOf(input);
  await claim(eventsCollection(services), {
    _id,
    firm: input.firm,
    type: input.type,
    subject: input.subject,
    occurred_at: input.occurred_at,
    data_json: JSON.stringify(input.data),
  });
  await ensureWorkflowTrigger(services, { firm: input.firm, eventId: _id });
  return _id;
}
