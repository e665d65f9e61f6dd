import { doneIdempotent, runIdempotent } from '../../platform/db/idempotency.js';
import type { Services } from '../../wiring/services.js';
import { eventsCollection } from '../events/record-event.js';
import { findLead, leadsCollection, newApiLead, type LeadDoc, type LeadFields } from './leads.js';
import { leadCreatedEventId, recordLeadCreated } from './record-lead-events.js';

// POST /api/leads: the lead and its lead.created event, or neither. A request that fails after
// the lead is stored (its event could not be recorded: Redis down while an endpoint or workflow
// listens) takes the lead back before it answers, so the client's retry makes one lead, not two.
// With an Idempotency-Key, a repeat within 24 h answers the lead the first request made (as it is
// now) and makes none; a first request that died half-way is finished by the repeat.

const SCOPE = 'lead';

/** The lead a finished request with this key made within 24 h, as it is now; null when none. */
export async function replayedApiLead(
  services: Services,
  firm: string,
  idempotencyKey: string,
): Promise<LeadDoc | null> {
  const leadId = await doneIdempotent(services.mongo.db, { scope: SCOPE, firm, key: idempotencyKey });
  return leadId === null ? null : findLead(services.mongo.db, leadId);
}

/** Creates the lead (400 for a field that is not valid); `repeated`: made by an earlier request with the key. */
export async function registerApiLead(
  services: Services,
  firm: string,
  fields: LeadFields,
  idempotencyKey?: string,
): Promise<{ lead: LeadDoc; repeated: boolean }> {
  const db = services.mongo.db;
  const lead = await newApiLead(db, firm, fields);
  const create = async (): Promise<void> => {
    await leadsCollection(db).insertOne(lead);
    try {
      await recordLeadCreated(services, lead);
    } catch (err) {
      await takeBack(services, lead);
      throw err;
    }
  };
  if (idempotencyKey === undefined) {
    await create();
    return { lead, repeated: false };
  }
  const { resourceId, created } = await runIdempotent(
    db,
    { scope: SCOPE, firm, key: idempotencyKey },
    lead._id,
    create,
    // A request that died half-way: its lead is stored, its event perhaps not (recording it again
    // is a no-op when it is).
    async (leadId) => {
      const stored = await findLead(db, leadId);
      if (stored === null) return false;
      await recordLeadCreated(services, stored);
      return true;
    },
  );
  if (created) return { lead, repeated: false };
  const first = await findLead(db, resourceId);
  if (first === null) throw new Error(`lead ${resourceId} of an Idempotency-Key cannot be read`);
  return { lead: first, repeated: true };
}

/** Removes a lead whose event could not be recorded, and the event if it was stored. */
async function takeBack(services: Services, lead: LeadDoc): Promise<void> {
  const db = services.mongo.db;
  const eventId = leadCreatedEventId(lead);
  await eventsCollection(db)
    .deleteOne({ _id: eventId })
    .catch((err: unknown) => services.log.error({ err, event_id: eventId }, 'could not remove event'));
  await leadsCollection(db)
    .deleteOne({ _id: lead._id })
    .catch((err: unknown) => services.log.error({ err, lead_id: lead._id }, 'could not remove lead'));
}
