import type { Db } from 'mongodb';
import { claim } from '../../platform/db/claim.js';
import { collection, COLLECTIONS } from '../../platform/db/collections.js';
import type { Services } from '../../wiring/services.js';
import type { BookingEventJob } from '../../../jobs/bookings.js';
import { QUEUE } from '../../../jobs/queues.js';

// Which bookings have an event not yet applied: a Cal.com cancel or reschedule answered 200 and
// not yet applied by its job leaves the booking's reminders, scheduled in Redis, due all the same.
// The chaos run (seed 42) mailed reminders of bookings whose cancel had been acknowledged into the
// webhook outbox (delivery-outbox.ts) while Redis was down: Redis came back, FerretDB stopped before
// the outbox drained, and the reminders came first. The same race runs on the usual path, shorter:
// a cancel waits in the bookings queue, then applies the lead's appointment first, while a reminder
// due that moment is sent. So a reminder is not sent while an event of its booking waits
// (reminders.ts): it looks here first.
//
// One key document per booking and delivery, inserted before the 200 and deleted once its job has
// applied the event (by insert and delete only): `<firm>|<booking uid>|<job id>` for a delivery kept
// in the outbox (`entry` names its entry), `…|<job id>|queued` for one added to its queue (the
// outbox's key is a document of its own, so a delivery that falls back to the outbox when its add
// fails is still judged by its entry). A booking's keys are read as one short _id range (its
// prefix). A key is judged stale, and deleted by the reader, once its entry (if any) has left the
// outbox and its job is no longer waiting, delayed or running (applied, given up, or removed); a key
// whose job is not there at all (its add or its entry's write may be under way, or failed) only
// once it is older than ORPHAN_KEY_MS.

export interface OutboxBookingDoc {
  _id: string;
  /** The delivery's outbox entry (`webhook_outbox` `_id`); none for a delivery added to its queue. */
  entry?: string;
  /** The bookingEvent job the delivery becomes. */
  job: string;
  stored_at: Date;
}

/** How long a key without its outbox entry or job is waited for (an entry's write in flight). */
const ORPHAN_KEY_MS = 30_000;
/** Job states in which an event is still to be applied. */
const PENDING = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

const keys = (services: Services) =>
  collection<OutboxBookingDoc>(services.mongo.db, COLLECTIONS.webhookOutboxBookings);

const prefixOf = (firm: string, uid: string): string => `${firm}|${uid}|`;

/** The bookings a booking event touches: its own, and the one a reschedule replaces. */
const uidsOf = (event: Pick<BookingEventJob, 'uid' | 'reschedule_uid'>): string[] =>
  event.reschedule_uid === undefined || event.reschedule_uid === event.uid
    ? [event.uid]
    : [event.uid, event.reschedule_uid];

/** Notes a booking event about to be kept in the outbox (entry `entry`, job `job`). */
export async function noteOutboxBookingEvent(
  services: Services,
  event: Pick<BookingEventJob, 'firm' | 'uid' | 'reschedule_uid'>,
  job: string,
  entry: string,
): Promise<void> {
  for (const uid of uidsOf(event)) {
    // A repeat of the same delivery finds its key there already.
    await claim(keys(services), {
      _id: `${prefixOf(event.firm, uid)}${job}`,
      entry,
      job,
      stored_at: new Date(),
    });
  }
}

/** Notes a booking event about to be added to its queue as job `job`. */
export async function noteQueuedBookingEvent(
  db: Db,
  event: Pick<BookingEventJob, 'firm' | 'uid' | 'reschedule_uid'>,
  job: string,
): Promise<void> {
  const keys = collection<OutboxBookingDoc>(db, COLLECTIONS.webhookOutboxBookings);
  for (const uid of uidsOf(event)) {
    await claim(keys, {
      _id: `${prefixOf(event.firm, uid)}${job}|queued`,
      job,
      stored_at: new Date(),
    });
  }
}

/** Forgets a booking event's keys once its job has applied it (a no-op for one never noted). */
export async function clearOutboxBookingEvent(
  services: Services,
  event: Pick<BookingEventJob, 'firm' | 'uid' | 'reschedule_uid'>,
  job: string,
): Promise<void> {
  for (const uid of uidsOf(event)) {
    const prefix = prefixOf(event.firm, uid);
    await keys(services).deleteOne({ _id: `${prefix}${job}|queued` });
    await keys(services).deleteOne({ _id: `${prefix}${job}` });
  }
}

/** Whether an event of the booking was answered and is not applied yet. */
export async function bookingEventWaits(services: Services, firm: string, uid: string): Promise<boolean> {
  const prefix = prefixOf(firm, uid);
  // '|' + 1 is '}': the _id range of exactly this prefix.
  const found = await keys(services)
    .find({ _id: { $gte: prefix, $lt: `${prefix.slice(0, -1)}}` } })
    .sort({ _id: 1 })
    .limit(20)
    .toArray();
  for (const key of found) {
    if (key.entry !== undefined) {
      const kept = await collection(services.mongo.db, COLLECTIONS.webhookOutbox).findOne(
        { _id: key.entry as never },
        { projection: { _id: 1 } },
      );
      if (kept !== null) return true;
    }
    const state = await services.queues[QUEUE.bookings].getJobState(key.job);
    if (PENDING.has(state)) return true;
    // No such job yet: its add (or its entry's write) may be under way. A job found completed or
    // failed is done with, however young its key (a delivery repeated after its job ran).
    if (state === 'unknown' && Date.now() - new Date(key.stored_at).getTime() < ORPHAN_KEY_MS) return true;
    await keys(services).deleteOne({ _id: key._id });
  }
  return false;
}
