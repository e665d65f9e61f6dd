import { sha256Hex } from '../../platform/crypto.js';
import { claim } from '../../platform/db/claim.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import type { Services } from '../../wiring/services.js';
import type { DomainEvent, EventInput } from './event-types.js';

// Records a domain event (docs/events.md). This version only stores it; the delivery side makes
// sure it is fanned out. The _id derives from the change, so a retried step records it once.

/** The event's _id: a digest of firm, type, subject and the change's key. */
export function eventIdOf(input: Pick<EventInput, 'firm' | 'type' | 'subject' | 'key'>): string {
  return `evt_${sha256Hex(`${input.firm}|${input.type}|${input.subject}|${input.key}`).slice(0, 26)}`;
}

const eventsCollection = (services: Services) =>
  collection<DomainEvent>(services.mongo.db, COLLECTIONS.events);

/** Inserts the event (an _id already there is success: the change was retried); returns its id. */
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
  return _id;
}
