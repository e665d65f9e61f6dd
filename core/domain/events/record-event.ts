import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { enqueue, enqueueBulk, enqueueRun } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { DomainEvent, EventInput } from './event-types.js';
import { clearDue, markDue } from './lanes.js';

// Domain events (docs/events.md): recorded once, in the same step as the change they tell of.
// The event's `_id` is derived from the change, so a retried step records it again as a no-op
// and only re-ensures what follows: the fan-out job (keyed by the event id) that creates one
// delivery per subscribed endpoint.
//
// Order within a subject: the fan-outs of one subject's events run as separate jobs, in any
// order, so each event is marked "due" (lanes.ts) before its job is added, and unmarked by the
// job once its deliveries exist: a delivery does not go out before an earlier event of its
// subject has been fanned out.

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

function eventDoc(input: EventInput): DomainEvent {
  return {
    _id: eventIdOf(input),
    firm: input.firm,
    type: input.type,
    subject: input.subject,
    occurred_at: input.occurred_at,
    data_json: JSON.stringify(input.data),
  };
}

const isDuplicateKey = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;

/**
 * Inserts documents, unordered; a duplicate `_id` (a retried step) is success. Returns, for each
 * document, whether this call inserted it (false when it was there already).
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

/**
 * An event recorded before (a retried step, or a finished call's call.ended recorded again by each
 * later event of the call) was marked due again just now, and BullMQ ignores the fan-out's add
 * while it keeps that job: when its fan-out has completed, the mark is taken back (every delivery
 * it makes exists); when it failed for good, it runs again. Otherwise the job is still to run, or
 * was just added (BullMQ had forgotten it), and clears the mark itself.
 */
async function settleRepeated(
  services: Services,
  docs: readonly DomainEvent[],
  inserted: boolean[],
): Promise<void> {
  const queue = services.queues[JOBS.webhookFanout.queue];
  for (const [i, e] of docs.entries()) {
    if (inserted[i]) continue;
    const job = await queue.getJob(JOBS.webhookFanout.id!({ eventId: e._id }));
    const state = await job?.getState();
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
  const docs = inputs.map(eventDoc);
  if (docs.length === 0) return [];
  const db = services.mongo.db;
  const inserted = await insertIgnoringDuplicates(
    (d) => eventsCollection(db).insertMany(d, { ordered: false }),
    docs,
  );
  await markDue(services, docs);
  if (docs.length === 1) await enqueue(services.queues, JOBS.webhookFanout, { eventId: docs[0]!._id });
  else
    await enqueueBulk(
      services.queues,
      JOBS.webhookFanout,
      docs.map((e) => ({ data: { eventId: e._id } })),
    );
  await settleRepeated(services, docs, inserted);
  return docs.map((e) => e._id);
}
