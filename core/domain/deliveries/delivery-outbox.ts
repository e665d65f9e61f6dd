import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { collection, COLLECTIONS } from '../../platform/db/collections.js';
import { UnavailableError, isMongoUnavailable, isRedisOutOfMemory } from '../../platform/errors.js';
import { RecordBusyError, withRecordLock } from '../../platform/redis-mutex.js';
import { redisKeys } from '../../platform/redis-keys.js';
import type { Services } from '../../wiring/services.js';
import { enqueue, type JobDefinition, type PayloadOf } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { QueueName } from '../../../jobs/queues.js';
import { claimDelivery, outboxSpace, releaseDelivery } from './outbox-limits.js';
import { noteOutboxBookingEvent, noteQueuedBookingEvent } from './outbox-bookings.js';

// Webhook senders that do not retry (Cal.com sends once; Retell three times in a few seconds)
// must not lose an event because Redis is down (docs/webhooks.md#redis-outages). A delivery that
// passed authentication is acknowledged only once it is durable: in its queue, or, when Redis
// cannot take it, in this MongoDB outbox. A worker process moves the outbox into the queues,
// oldest first, as soon as Redis is back; a web process that has seen Redis go away keeps
// putting new deliveries behind the outbox's until the outbox is empty, so the events of one
// booking or call reach the queue in the order they arrived.

/** The jobs a webhook delivery becomes (the outbox names them by their key in the job table). */
export type DeliveryJob = 'callEvent' | 'bookingEvent';

/** One delivery kept while Redis was down. `_id` orders the outbox: time received, then a sequence. */
export interface OutboxEntry {
  _id: string;
  job: DeliveryJob;
  firm: string;
  /** The bookings or calls the delivery is about: the drain applies their deliveries one after another. */
  keys: string[];
  /** The job's payload as JSON text (provider data may hold keys MongoDB will not store as fields). */
  payload: string;
  /** The payload's length, counted against the outbox's caps (absent on entries kept before them). */
  bytes?: number;
  /** The job's id: the delivery's claim in `webhook_outbox_ids` (absent on entries kept before). */
  delivery?: string;
  stored_at: Date;
}

/** How long an add may take before the delivery goes to the outbox instead (a hung Redis). */
export const ENQUEUE_TIMEOUT_MS = 2_000;
/** How often a web process behind the outbox looks whether it has emptied. */
const EMPTY_CHECK_MS = 500;

let sequence = 0;
const processTag = randomBytes(4).toString('hex');

/** Sorts by time received (ms, zero-padded), then this process's sequence: the drain order. */
function outboxId(now: number): string {
  sequence = (sequence + 1) % 1e9;
  return `${String(now).padStart(15, '0')}.${String(sequence).padStart(9, '0')}.${processTag}`;
}

/**
 * Per process: whether new deliveries must queue behind the outbox. True at start (the outbox
 * may hold deliveries from before) and whenever the Redis connection drops; false once a check
 * found the outbox empty while Redis was ready and stayed up. Deliveries that arrive while a
 * check is under way wait for its answer: before, those of a burst at a web process's start that
 * came during the check went to the outbox (a worker's drain queued them a second or more later,
 * after deliveries that came after them). While the outbox holds entries, one check per EMPTY_CHECK_MS.
 */
class OutboxGate {
  private behind = true;
  private checkedAt = 0;
  private checking: Promise<boolean> | undefined;
  /** Counts the connection's drops: a check that saw one during its read does not open the gate. */
  private drops = 0;
  /** The last check's failure to reach MongoDB, given again to the deliveries until the next check. */
  private mongoAway: unknown;

  constructor(private readonly services: Services) {
    services.redis.on('close', () => {
      this.behind = true;
      this.drops++;
    });
    // Looked at as soon as Redis is (back) up, not only when a delivery comes: a delivery that
    // comes while MongoDB is down is queued if the gate was opened before (no outbox to read).
    services.redis.on('ready', () => void this.mustQueueBehind().catch(() => {}));
    if (services.redis.status === 'ready') void this.mustQueueBehind().catch(() => {});
  }

  async mustQueueBehind(): Promise<boolean> {
    if (!this.behind) return false;
    if (this.services.redis.status !== 'ready') return true;
    if (this.checking !== undefined) return this.checking;
    if (Date.now() - this.checkedAt < EMPTY_CHECK_MS) {
      // The check a moment ago could not reach MongoDB: its answer stands until the next one.
      if (this.mongoAway !== undefined) throw this.mongoAway;
      return true;
    }
    this.checkedAt = Date.now();
    this.checking = this.check().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async check(): Promise<boolean> {
    const drops = this.drops;
    let first;
    try {
      first = await outbox(this.services).findOne({}, { projection: { _id: 1 } });
      this.mongoAway = undefined;
    } catch (err) {
      this.mongoAway = isMongoUnavailable(err) ? err : undefined;
      throw err;
    }
    if (first === null && drops === this.drops) this.behind = false;
    return this.behind;
  }

  markBehind(): void {
    this.behind = true;
  }
}

const gates = new WeakMap<Services, OutboxGate>();
const gateOf = (services: Services): OutboxGate => {
  let gate = gates.get(services);
  if (gate === undefined) gates.set(services, (gate = new OutboxGate(services)));
  return gate;
};

/**
 * Opens the web process's gate as soon as it can (Redis up, the outbox found empty), so that a
 * delivery that comes while MongoDB is down goes straight to its queue: the web calls it at start.
 */
export function watchOutboxGate(services: Services): void {
  gateOf(services);
}

const outbox = (services: Services) => collection<OutboxEntry>(services.mongo.db, COLLECTIONS.webhookOutbox);

/** Whether the outbox holds no entry (one read of at most one `_id`). */
async function outboxEmpty(services: Services): Promise<boolean> {
  const first = await outbox(services)
    .find({}, { projection: { _id: 1 } })
    .limit(1)
    .toArray();
  return first.length === 0;
}

async function enqueueWithin<T>(services: Services, job: JobDefinition<T>, data: T): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new UnavailableError('redis')), ENQUEUE_TIMEOUT_MS);
  });
  try {
    // An add that completes after the timeout is harmless: the outbox's copy has the same job
    // id, and every processor treats a repeat as a no-op.
    await Promise.race([enqueue(services.queues, job, data), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Makes an authenticated delivery durable before it is acknowledged: its job in the queue, or,
 * while Redis is unreachable (or the outbox still holds older deliveries), an outbox entry in
 * MongoDB, once per delivery. Throws (503) when neither store takes it, or the outbox is full.
 */
export async function acceptDelivery<K extends DeliveryJob>(
  services: Services,
  key: K,
  firm: string,
  data: PayloadOf<(typeof JOBS)[K]>,
): Promise<'queued' | 'outbox'> {
  const gate = gateOf(services);
  const behind = await gate.mustQueueBehind().catch((err: unknown) => {
    // MongoDB unreachable while Redis is up (a web process started, or Redis reconnected, during
    // its outage): the outbox can be neither read nor written, so the queue takes the delivery
    // rather than a 503 (only with both stores down is the answer 503). An older entry the outbox
    // may hold is drained once MongoDB is back; its jobs' own rules order them (a call's status
    // only rises, a booking's cancel outranks a late create).
    if (isMongoUnavailable(err) && services.redis.status === 'ready') {
      services.log.warn(
        { job: key, firm },
        'MongoDB unavailable: the outbox could not be looked at, delivery queued',
      );
      return false;
    }
    return true;
  });
  if (!behind) {
    // The booking's reminders wait for this event until it is applied (outbox-bookings.ts).
    if (key === 'bookingEvent') await noteQueued(services, data as PayloadOf<typeof JOBS.bookingEvent>);
    try {
      await enqueueWithin(services, JOBS[key] as unknown as JobDefinition<typeof data>, data);
      return 'queued';
    } catch (err) {
      // Redis full (OOM) takes no job either: the delivery is kept as while Redis is down.
      if (!(err instanceof UnavailableError) && !isRedisOutOfMemory(err)) throw err;
      gate.markBehind();
      services.log.warn(
        { job: key, firm, reason: err instanceof UnavailableError ? 'unavailable' : 'out of memory' },
        'Redis unavailable: delivery kept in the MongoDB outbox',
      );
    }
  }
  // Kept once, within the outbox's caps (core/domain/deliveries/outbox-limits.ts).
  const payload = JSON.stringify(data);
  const space = outboxSpace(services);
  await space.assertRoom(firm, payload.length);
  const id = outboxId(Date.now());
  const delivery = (JOBS[key] as unknown as JobDefinition<typeof data>).id?.(data);
  if (delivery !== undefined && !(await claimDelivery(services, delivery, id))) return 'outbox';
  try {
    // The booking's reminders wait for this event until it is applied (outbox-bookings.ts).
    if (key === 'bookingEvent' && delivery !== undefined) {
      await noteOutboxBookingEvent(services, data as PayloadOf<typeof JOBS.bookingEvent>, delivery, id);
    }
    await outbox(services).insertOne({
      _id: id,
      job: key,
      firm,
      keys: orderKeys(key, data),
      payload,
      bytes: payload.length,
      ...(delivery === undefined ? {} : { delivery }),
      stored_at: new Date(),
    });
  } catch (err) {
    if (delivery !== undefined) await releaseDelivery(services, delivery, id).catch(() => {});
    throw err;
  }
  space.kept(firm, payload.length);
  return 'outbox';
}

/**
 * Notes a booking event before its add. While MongoDB is unreachable the event is queued all the
 * same (the webhook needs only Redis, docs/webhooks.md#redis-outages), without its note: the
 * reminders' own look fails then too and their jobs retry, and once MongoDB is back a reminder and
 * that event (whose job also waited for MongoDB) race as they did before notes existed. Only an
 * outage of MongoDB alone, during the event's delivery, leaves that window.
 */
async function noteQueued(services: Services, data: PayloadOf<typeof JOBS.bookingEvent>): Promise<void> {
  try {
    await noteQueuedBookingEvent(services.mongo.db, data, JOBS.bookingEvent.id!(data));
  } catch (err) {
    if (!isMongoUnavailable(err)) throw err;
    services.log.warn(
      { firm: data.firm, uid: data.uid },
      'MongoDB unavailable: booking event queued without its note',
    );
  }
}

/** A call's provider id; a booking's uid and the uid it replaces (a reschedule touches both). */
function orderKeys<K extends DeliveryJob>(key: K, data: PayloadOf<(typeof JOBS)[K]>): string[] {
  if (key === 'callEvent') return [`call|${(data as PayloadOf<typeof JOBS.callEvent>).call.call_id}`];
  const booking = data as PayloadOf<typeof JOBS.bookingEvent>;
  return [booking.uid, ...(booking.reschedule_uid === undefined ? [] : [booking.reschedule_uid])].map(
    (uid) => `booking|${uid}`,
  );
}

/** How many entries one drain pass reads at a time. */
const DRAIN_BATCH = 100;

/**
 * Moves the outbox into the queues, oldest first, one entry at a time (its job added, then the
 * entry deleted: a crash between the two re-adds the same job id, which changes nothing). One
 * process drains at a time. Stops at the first entry that cannot be added, so order holds, and
 * after the entry it is moving once `signal` aborts (its process is stopping: the rest is left
 * for the next drain, and the lock is given up). Returns how many entries were moved.
 */
export async function drainOutbox(services: Services, signal?: AbortSignal): Promise<number> {
  if (services.redis.status !== 'ready') return 0;
  // Empty, as it is but for a Redis outage: nothing to take the lock for. Every worker process
  // looks every second, and took and released the lock each time: two Redis round trips a second
  // a process, and a lock held at any instant by a process with nothing to do.
  if (await outboxEmpty(services)) return 0;
  const lock = redisKeys(services.config).webhookOutboxLock();
  try {
    return await withRecordLock(services.redis, lock, () => moveAll(services, signal), {
      waitMs: 0,
      ttlMs: 30_000,
      renew: true,
    });
  } catch (err) {
    if (err instanceof RecordBusyError) return 0; // another process is draining
    throw err;
  }
}

async function moveAll(services: Services, signal?: AbortSignal): Promise<number> {
  let moved = 0;
  // The job each booking or call was last given in this pass: its next delivery waits for it.
  const previous = new Map<string, { queue: QueueName; id: string }>();
  for (;;) {
    if (signal?.aborted) return moved;
    const batch = await outbox(services).find({}).sort({ _id: 1 }).limit(DRAIN_BATCH).toArray();
    if (batch.length === 0) return moved;
    for (const entry of batch) {
      const job = JOBS[entry.job] as JobDefinition<unknown> | undefined;
      if (job?.id === undefined) throw new Error(`Outbox entry ${entry._id} names no job (${entry.job})`);
      const data = JSON.parse(entry.payload) as unknown;
      // A burst of kept deliveries would otherwise run side by side on the workers: a booking's
      // cancel before its creation, a call's end before its start.
      for (const key of entry.keys ?? []) {
        const before = previous.get(key);
        if (before !== undefined) await settled(services, before, signal);
      }
      if (signal?.aborted) return moved;
      await enqueue(services.queues, job, data);
      await outbox(services).deleteOne({ _id: entry._id });
      if (entry.delivery !== undefined) await releaseDelivery(services, entry.delivery, entry._id);
      for (const key of entry.keys ?? []) previous.set(key, { queue: job.queue, id: job.id(data) });
      moved++;
    }
  }
}

/** How long the drain waits for a booking's or call's previous job (one retrying is let be). */
const SETTLE_WAIT_MS = 15_000;

/** Waits until a job has completed or failed (or is gone), up to SETTLE_WAIT_MS or the abort. */
async function settled(
  services: Services,
  job: { queue: QueueName; id: string },
  signal: AbortSignal | undefined,
): Promise<void> {
  const deadline = Date.now() + SETTLE_WAIT_MS;
  while (Date.now() < deadline) {
    if (signal?.aborted) return;
    const state = await services.queues[job.queue].getJobState(job.id);
    if (state === 'completed' || state === 'failed' || state === 'unknown') return;
    await sleep(20);
  }
  services.log.warn({ job }, 'webhook outbox: previous delivery still pending; moving on');
}

/** How many deliveries wait in the outbox (the metrics' gauge; an estimate from collection stats). */
export const countKeptDeliveries = (db: Db): Promise<number> =>
  collection<OutboxEntry>(db, COLLECTIONS.webhookOutbox).estimatedDocumentCount();

/** How often a worker process looks at the outbox. */
export const DRAIN_INTERVAL_MS = 1_000;

/**
 * The worker process's drain loop. `stop()` ends it promptly: a pass under way finishes the
 * entry it is moving (no wait for an earlier delivery's job, no pause), then gives up its lock;
 * it resolves once the loop has ended.
 */
export function startOutboxDrain(services: Services): { stop(): Promise<void> } {
  const stopping = new AbortController();
  const { signal } = stopping;
  const loop = (async () => {
    while (!signal.aborted) {
      try {
        const moved = await drainOutbox(services, signal);
        if (moved > 0) services.log.info({ moved }, 'webhook outbox moved into the queues');
      } catch (err) {
        services.log.warn({ err: (err as Error).message }, 'webhook outbox drain paused');
      }
      await sleep(DRAIN_INTERVAL_MS, undefined, { signal }).catch(() => {});
    }
  })();
  return {
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
