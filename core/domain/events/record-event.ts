import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { enqueue, enqueueBulk, enqueueRun } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { WebhookFanoutJob } from '../../../jobs/webhooks.js';
import type { DomainEvent, EventInput } from './event-types.js';
import { clearDue, markDue } from './lanes.js';
import { audiences } from './listeners.js';
import { isDuplicateKey } from '../../platform/db/claim.js';

// Domain events (docs/events.md): recorded once, in the same step as the change they tell of.
// The event's `_id` is derived from the change, so a retried step records it again as a no-op
// and only re-ensures what follows: the fan-out job (keyed by the event id) that creates one
// delivery per subscribed endpoint. The job carries the event this call recorded, so the fan-out
// does not read it back; `recorded_at` is when the service learnt of it (the order bound counts
// from there).
//
// An event nobody listens to (no endpoint takes its type, no workflow starts on it or waits:
// listeners.ts) is recorded and no more: it has no fan-out job.
//
// Order within a subject: the fan-outs of one subject's events run as separate jobs, in any
// order, so each event is marked "due" (lanes.ts) before its job is added, and unmarked by the
// job once each of its deliveries holds its place in its lane: a delivery does not go out
// before an earlier event of its subject has been fanned out.

export const eventsCollection = (db: Db) => collection<DomainEvent>(db, COLLECTIONS.events);

/** The lowercase base32 alphabet (RFC 4648, lowercased). */
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

function base32(bytes: Buffer, length: number): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < length) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
    if (out.length >= length) break;
  }
  return out;
}

/** The event's `_id`: `evt_` + 26 base32 characters of sha256(firm|type|subject|key). */
export function eventIdOf(input: Pick<EventInput, 'firm' | 'type' | 'subject' | 'key'>): string {
  const digest = createHash('sha256')
    .update(`${input.firm}|${input.type}|${input.subject}|${input.key}`)
    .digest();
  return `evt_${base32(digest, 26)}`;
}

/** A subject as a fixed-width, separator-free part of an `_id` (subjects are ids, phones, job ids). */
export const subjectKey = (subject: string): string =>
  createHash('sha256').update(subject).digest('hex').slice(0, 20);

/** Milliseconds since the epoch, zero-padded to 13 digits, so `_id` text order is time order. */
export const paddedMs = (at: Date): string => String(Math.max(0, at.getTime())).padStart(13, '0');

function eventDoc(input: EventInput, now: Date): DomainEvent {
  return {
    _id: eventIdOf(input),
    firm: input.firm,
    type: input.type,
    subject: input.subject,
    occurred_at: input.occurred_at,
    recorded_at: now,
    data_json: JSON.stringify(input.data),
    ...(input.caused_by_workflows === undefined ? {} : { caused_by_workflows: input.caused_by_workflows }),
  };
}

/** The most data a fan-out job carries with it (larger events are read back by the fan-out). */
const CARRIED_DATA_MAX = 16 * 1024;

/** A fan-out job's data: the event itself when this call recorded it (no read back), else its id. */
function fanoutOf(e: DomainEvent, inserted: boolean): WebhookFanoutJob {
  // Recorded again (a retried step): its fan-out may have run already, and a new one looks first.
  if (!inserted) return { eventId: e._id, retried: true };
  if (e.data_json.length > CARRIED_DATA_MAX) return { eventId: e._id };
  return {
    eventId: e._id,
    event: {
      firm: e.firm,
      type: e.type,
      subject: e.subject,
      occurred_at: e.occurred_at.toISOString(),
      recorded_at: (e.recorded_at ?? e.occurred_at).toISOString(),
      data_json: e.data_json,
      ...(e.caused_by_workflows === undefined ? {} : { caused_by_workflows: e.caused_by_workflows }),
    },
  };
}

/** The event a fan-out job names: carried in its data, or null when it must be read. */
export function carriedEvent(job: WebhookFanoutJob): DomainEvent | null {
  const e = job.event;
  if (e === undefined) return null;
  return {
    _id: job.eventId,
    firm: e.firm,
    type: e.type as DomainEvent['type'],
    subject: e.subject,
    occurred_at: new Date(e.occurred_at),
    recorded_at: new Date(e.recorded_at),
    data_json: e.data_json,
    ...(e.caused_by_workflows === undefined ? {} : { caused_by_workflows: e.caused_by_workflows }),
    // A job added by the release before the chain was kept.
    ...(e.caused_by_workflow === undefined ? {} : { caused_by_workflow: e.caused_by_workflow }),
  };
}

/**
 * Inserts documents, unordered; a duplicate `_id` (a retried step) is success. Returns, for each
 * document, whether this call inserted it (false when it was there already, or not told).
 */
async function insertIgnoringDuplicates<T extends { _id: string }>(
  insert: (docs: T[]) => Promise<unknown>,
  docs: T[],
): Promise<boolean[]> {
  if (docs.length === 0) return [];
  try {
    await insert(docs);
    return docs.map(() => true);
  } catch (err) {
    const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
    const errors = Array.isArray(writeErrors) ? writeErrors : writeErrors === undefined ? [] : [writeErrors];
    if (isDuplicateKey(err) && errors.length === 0) return docs.map(() => false);
    if (errors.length > 0 && errors.every((e) => (e as { code?: unknown }).code === 11000)) {
      const taken = new Set(errors.map((e) => (e as { index?: unknown }).index));
      return docs.map((_, i) => !taken.has(i));
    }
    throw err;
  }
}

/** The state of an event's fan-out job as BullMQ keeps it; undefined when it keeps none. */
async function fanoutState(services: Services, eventId: string): Promise<string | undefined> {
  const job = await services.queues[JOBS.webhookFanout.queue].getJob(JOBS.webhookFanout.id!({ eventId }));
  return job?.getState();
}

/**
 * Of the events recorded before (a retried step, or a finished call's call.ended recorded again by
 * each later event of the call), those whose fan-out is running or has run: they are not marked
 * due again. A running fan-out takes the event off `due` as soon as its deliveries hold their
 * lanes, then goes on sending (a slow endpoint keeps it running): a mark set again in that time
 * would be left with nobody to take it back, and would hold every later event of the subject, at
 * every endpoint, until a held delivery looks again (LANE_SAFETY_MS). The mark it was added with
 * covers it until then. True for each event to mark and (re)add.
 */
async function toMark(
  services: Services,
  docs: readonly DomainEvent[],
  inserted: readonly boolean[],
): Promise<boolean[]> {
  return Promise.all(
    docs.map(async (e, i) => {
      if (inserted[i]) return true;
      const state = await fanoutState(services, e._id);
      return state !== 'active' && state !== 'completed';
    }),
  );
}

/**
 * An event recorded before was marked due again just now, and BullMQ ignores the fan-out's add
 * while it keeps that job: when its fan-out has completed meanwhile, the mark is taken back (every
 * delivery it makes exists); when it failed for good, it runs again. Otherwise the job is still to
 * run, or was just added (BullMQ had forgotten it), and clears the mark itself.
 */
async function settleRepeated(
  services: Services,
  docs: readonly DomainEvent[],
  inserted: boolean[],
): Promise<void> {
  for (const [i, e] of docs.entries()) {
    if (inserted[i]) continue;
    const state = await fanoutState(services, e._id);
    if (state === 'completed') await clearDue(services, e);
    else if (state === 'failed') await enqueueRun(services.queues, JOBS.webhookFanout, { eventId: e._id });
  }
}

/**
 * Records one event (a duplicate `_id` is success: the change was retried) and makes sure it is
 * fanned out; returns the event's id.
 */
export async function recordEvent(services: Services, input: EventInput): Promise<string> {
  const [id] = await recordEvents(services, [input]);
  return id!;
}

/** recordEvent for many events of one step (a do-not-call addition of many numbers): a few round trips in all. */
export async function recordEvents(services: Services, inputs: readonly EventInput[]): Promise<string[]> {
  const now = new Date();
  const docs = inputs.map((input) => eventDoc(input, now));
  if (docs.length === 0) return [];
  const db = services.mongo.db;
  const inserted = await insertIgnoringDuplicates(
    (d) => eventsCollection(db).insertMany(d, { ordered: false }),
    docs,
  );
  // Whom each goes to, decided now that it is stored (listeners.ts): an event nobody listens to
  // has no fan-out and no due mark.
  const heard = await audiences(services, docs);
  const listened = docs.flatMap((e, i) => (heard[i] === 'none' ? [] : [i]));
  const marking = await toMark(
    services,
    listened.map((i) => docs[i]!),
    listened.map((i) => inserted[i]!),
  );
  const fanned = listened.filter((_, k) => marking[k]);
  if (fanned.length > 0) {
    await markDue(
      services,
      fanned.map((i) => docs[i]!),
    );
    const jobs = fanned.map((i) => ({
      ...fanoutOf(docs[i]!, inserted[i]!),
      ...(heard[i] === 'after_change' ? { afterChange: true } : {}),
    }));
    if (jobs.length === 1) await enqueue(services.queues, JOBS.webhookFanout, jobs[0]!);
    else
      await enqueueBulk(
        services.queues,
        JOBS.webhookFanout,
        jobs.map((data) => ({ data })),
      );
    await settleRepeated(
      services,
      fanned.map((i) => docs[i]!),
      fanned.map((i) => inserted[i]!),
    );
  }
  return docs.map((e) => e._id);
}
