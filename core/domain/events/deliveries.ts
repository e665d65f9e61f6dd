import type { Db } from 'mongodb';
import { Webhook } from 'standardwebhooks';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim, claimCoalesced } from '../../platform/db/claim.js';
import { keysetPage } from '../../platform/db/keyset-cursor.js';
import { urlPolicyOf } from '../../platform/config.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import { parseRetryAfter } from '../../platform/retry-after.js';
import { UrlNotAllowedError } from '../../platform/url-policy.js';
import { clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { storableText } from '../../platform/text.js';
import { guardedRequest, type GuardedResponse } from '../../integrations/http/guarded-http.js';
import { enqueue, enqueueRun } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import {
  deliverJobId,
  type WebhookDeliverJob,
  type WebhookFanoutJob,
  type WebhookReplayJob,
} from '../../../jobs/webhooks.js';
import type { DomainEvent } from './event-types.js';
import { startWorkflowRuns } from '../workflows/runs/start-runs.js';
import { carriedEvent, eventsCollection, paddedMs } from './record-event.js';
import {
  beginInLane,
  clearDue,
  earlierDue,
  earlierInLane,
  inLane,
  joinLane,
  laneOf,
  leaveLane,
  settleInLane,
  type LaneMember,
} from './lanes.js';
import {
  findEndpoint,
  firmEndpoints,
  heardAt,
  matchesFilter,
  setOnEndpoint,
  signingSecrets,
  type WebhookEndpointDoc,
} from './endpoints.js';
import { nextRetryDelay, parseSchedule } from './retry-schedule.js';
import { listenersChanging } from './listeners.js';
import { BusyUntilError } from '../../platform/busy-until.js';

// Deliveries of events to firms' endpoints (docs/events.md), as the Standard Webhooks spec says.
//
// A delivery document per event and endpoint, `_id` = `<endpoint>|<subject hash>|<occurred_at
// ms>|<event id>` (a replay appends `|<replay id>`), holding the body's data and every attempt.
// The deliveries of one subject to one endpoint — a lane — sort as their events happened; the
// lane's unsettled ones are also kept in order in Redis (lanes.ts).
//
// A delivery is sent only when no earlier delivery of its lane is unsettled and no earlier event
// of its subject is still to be fanned out. When that holds as the event is fanned out, the
// fan-out sends it itself (its lane joined, in flight, while it does) and records it once with
// its first attempt (fanOutEvent). Otherwise, or after a failed first attempt, the delivery has
// its own job, which parks (a delayed job, no attempt spent) until the earlier one's next try;
// the earlier one, once settled, promotes the next of its lane. A delivery waits so at most WEBHOOK_ORDER_WAIT_MS behind one that keeps
// failing; then it goes on, marked `out_of_order`. Lanes never wait on each other: other
// subjects, endpoints and firms go on while one lane waits.
//
// Its retries are waits recorded on the delivery (next_attempt_at), the job parked until then:
// WEBHOOK_RETRY_SCHEDULE with jitter, a longer Retry-After honoured. A 410 disables the endpoint;
// an endpoint whose every attempt failed for WEBHOOK_DISABLE_AFTER_MS is disabled and its firm
// mailed. Deliveries to a disabled or deleted endpoint are skipped (a replay sends them later).
// At least once: a worker that dies after the send and before the record sends it again (a
// fan-out's retry, or the delivery's job), with the same `webhook-id`.

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'skipped';

export interface AttemptRecord {
  at: Date;
  /** The answer's status; null when none came (refused connection, timeout, URL policy). */
  status_code: number | null;
  duration_ms: number;
  /** The answer's first 2 KB. */
  response_body: string | null;
  error: string | null;
  /** When the next try is due after this one; null when none follows. */
  next_retry_at: Date | null;
}

export interface DeliveryDoc {
  _id: string;
  endpoint: string;
  firm: string;
  kind: 'event' | 'replay' | 'ping' | 'workflow';
  /** The event's id (a ping's own id): the `webhook-id` of every attempt. */
  event_id: string;
  type: string;
  subject: string;
  occurred_at: Date;
  /** The body's `data`, as JSON text (the event's data_json). */
  data_json: string;
  status: DeliveryStatus;
  /** Why it was given up or skipped: `retries_exhausted`, `gone`, `endpoint_disabled`, `endpoint_deleted`. */
  reason: string | null;
  /** Sent while an earlier delivery of its lane was still failing (past WEBHOOK_ORDER_WAIT_MS). */
  out_of_order: boolean;
  /** A manual retry of a settled delivery starts a new generation (a new job). */
  generation: number;
  /** Failed attempts in this generation. */
  failures: number;
  pending_since: Date;
  next_attempt_at: Date | null;
  attempts: AttemptRecord[];
  created_at: Date;
  settled_at: Date | null;
}

export const deliveriesCollection = (db: Db) => collection<DeliveryDoc>(db, COLLECTIONS.webhookDeliveries);

const RESPONSE_KEPT = 2048;
const MAX_ATTEMPTS_KEPT = 50;

/**
 * The writers of one delivery's document take turns under its lock, each writing from a read
 * inside it: its job recording an attempt, a fan-out's attempt joining the log of a delivery
 * another run recorded, an operator's retry. FerretDB applies an update as a read and a write of
 * the whole document, so two at once could put back what the other changed.
 */
const withDeliveryLock = <T>(services: Services, id: string, fn: () => Promise<T>): Promise<T> =>
  withRecordLock(services.redis, redisKeys(services.config).webhookDeliveryLock(id), () => fn());
/**
 * How long a waiting delivery sleeps at most before looking at its lane again. It is woken as soon
 * as what it waits for is done (the earlier delivery settled, the earlier event fanned out), and
 * takes a second look just after parking: this is only a safety net, long enough that hundreds of
 * waiting deliveries do not poll the database.
 */
const LANE_SAFETY_MS = 30_000;

/** A delivery's public id: its `_id`, base64url (opaque, one point read). */
export const publicDeliveryId = (id: string): string => `dlv_${Buffer.from(id).toString('base64url')}`;
export function deliveryIdOf(publicId: string): string | null {
  if (!publicId.startsWith('dlv_')) return null;
  const id = Buffer.from(publicId.slice(4), 'base64url').toString('utf8');
  // Delivery ids are printable ASCII: anything else was never issued (and NUL would reach the store).
  return /^[\x21-\x7e]+$/.test(id) && id.includes('|') ? id : null;
}

// --- creating deliveries ---------------------------------------------------------------------

interface DeliverySource {
  kind: DeliveryDoc['kind'];
  event_id: string;
  type: string;
  subject: string;
  occurred_at: Date;
  data_json: string;
}

/** The delivery `_id` of `source` to an endpoint (suffix: a replay's id). */
const deliveryIdFor = (endpoint: string, source: DeliverySource, suffix = ''): string =>
  `${laneOf(endpoint, source.subject)}|${paddedMs(source.occurred_at)}|${source.event_id}${suffix}`;

function newDelivery(
  endpoint: Pick<WebhookEndpointDoc, '_id' | 'firm'>,
  source: DeliverySource,
  suffix: string,
  now: Date,
): DeliveryDoc {
  return {
    _id: deliveryIdFor(endpoint._id, source, suffix),
    endpoint: endpoint._id,
    firm: endpoint.firm,
    ...source,
    status: 'pending',
    reason: null,
    out_of_order: false,
    generation: 0,
    failures: 0,
    pending_since: now,
    next_attempt_at: now,
    attempts: [],
    created_at: now,
    settled_at: null,
  };
}

/**
 * The delivery of `source` to `endpoint` (suffix: a replay's id), made once whoever repeats it,
 * its place in its lane and its job ensured while it is pending.
 */
async function ensureDelivery(
  services: Services,
  endpoint: Pick<WebhookEndpointDoc, '_id' | 'firm'>,
  source: DeliverySource,
  suffix = '',
): Promise<DeliveryDoc> {
  const doc = newDelivery(endpoint, source, suffix, new Date());
  const made = await claim(deliveriesCollection(services.mongo.db), doc);
  const current = made ? doc : await deliveriesCollection(services.mongo.db).findOne({ _id: doc._id });
  if (current === null) return doc;
  await ensureFollowUp(services, current);
  return current;
}

/** A delivery as recorded: a pending one in its lane with its job, a settled one out of its lane. */
async function ensureFollowUp(services: Services, d: DeliveryDoc): Promise<void> {
  const job = { delivery: d._id, generation: d.generation };
  if (d.status !== 'pending') {
    await settled(services, job, d.endpoint, null);
    return;
  }
  await joinLane(services, job);
  await enqueue(services.queues, JOBS.webhookDeliver, job, {
    delay: Math.max(0, (d.next_attempt_at?.getTime() ?? 0) - Date.now()),
  });
}

/**
 * The fan-out of one event: a delivery per enabled endpoint of its firm whose filter takes it.
 *
 * Where the lane is free (no earlier event of the subject still to be fanned out, no earlier
 * unsettled delivery to that endpoint) the fan-out makes the first attempt itself, every such
 * endpoint at once, and records the delivery once, with that attempt in it; only a delivery that
 * must wait or retry gets its own job. Each endpoint's attempt is recorded as soon as it is
 * answered: a slow endpoint holds this job, never another endpoint's record or lane. A fan-out
 * that dies between a send and its record sends again when retried (at least once, same
 * `webhook-id`).
 */
export async function fanOutEvent(
  services: Services,
  job: WebhookFanoutJob,
  retried = false,
): Promise<{ deliveries: number; workflow_runs: number }> {
  const db = services.mongo.db;
  const event = carriedEvent(job) ?? (await eventsCollection(db).findOne({ _id: job.eventId }));
  if (event === null) return { deliveries: 0, workflow_runs: 0 };
  // Recorded while the firm's listeners were changing (an endpoint being made): the change ends
  // first, so the fan-out reads what it made. Parked meanwhile (no attempt spent).
  if (job.afterChange === true && (await listenersChanging(services, event.firm))) {
    throw new BusyUntilError("a change to the firm's event listeners is under way", Date.now() + 50);
  }
  // Those listening when the event was recorded: one made or enabled since (an event recorded
  // again by a retried step, fanned out again) does not get it; a replay sends it.
  const recordedAt = event.recorded_at ?? event.occurred_at;
  const endpoints = (await firmEndpoints(services, event.firm)).filter(
    (e) => e.enabled && matchesFilter(e.events, event.type) && heardAt(e, recordedAt),
  );
  const source = sourceOf(event);
  let todo = endpoints;
  if (retried || job.retried === true) {
    // An earlier run may have recorded some: those are not sent again, only followed up.
    const found = await Promise.all(
      endpoints.map((e) => deliveriesCollection(db).findOne({ _id: deliveryIdFor(e._id, source) })),
    );
    for (const d of found) if (d !== null) await ensureFollowUp(services, d);
    todo = endpoints.filter((_, i) => found[i] === null);
  }
  const due = { _id: event._id, firm: event.firm, subject: event.subject, occurred_at: event.occurred_at };
  const now = new Date();
  const docs = todo.map((e) => newDelivery(e, source, '', now));
  // One endpoint (the usual case): its lane's look also takes the event off `due`. With more,
  // the event stays due until every lane holds its delivery (sent now or recorded to wait).
  const free = await Promise.all(
    docs.map((d) => beginInLane(services, due, { delivery: d._id, generation: 0 }, docs.length === 1)),
  );
  const held = docs.filter((_, i) => !free[i]);
  const sending = Promise.all(docs.map((d, i) => (free[i] ? firstAttempt(services, todo[i]!, d) : null)));
  sending.catch(() => undefined); // awaited below, after the held ones are recorded
  for (const d of held) await ensureDelivery(services, todo[docs.indexOf(d)]!, source);
  if (docs.length !== 1 || held.length > 0) await clearDue(services, due);
  // Meanwhile, the firm's active workflows this event starts, and the `wait_for` steps it ends
  // (each run a claim by its own id: a retried fan-out starts none twice): a slow endpoint does
  // not hold them.
  const [runs] = await Promise.all([startWorkflowRuns(services, event), sending]);
  return { deliveries: endpoints.length, workflow_runs: runs.length };
}

const sourceOf = (event: DomainEvent, kind: DeliveryDoc['kind'] = 'event'): DeliverySource => ({
  kind,
  event_id: event._id,
  type: event.type,
  subject: event.subject,
  occurred_at: event.occurred_at,
  data_json: event.data_json,
});

/**
 * `POST …/test`: a `ping` to the endpoint, delivered like an event. Each ping is its own subject,
 * so its own lane: a ping sent after fixing a receiver is not held behind an earlier one that is
 * waiting for its retry (pings have no order to keep).
 */
export function sendPing(services: Services, endpoint: WebhookEndpointDoc): Promise<DeliveryDoc> {
  const id = newId('ping', 12);
  const at = new Date();
  return ensureDelivery(services, endpoint, {
    kind: 'ping',
    event_id: id,
    type: 'ping',
    subject: id,
    occurred_at: at,
    data_json: JSON.stringify({ endpoint_id: endpoint._id, message: 'A test delivery from the service.' }),
  });
}

/**
 * A workflow's `webhook` step: a `workflow.step` delivery to the firm's endpoint, made once for
 * the step (its `webhook-id` derives from the step) and then delivered as every event is: signed
 * with the endpoint's secrets, retried on its schedule, in the log, in order with the lead's events.
 */
export function sendWorkflowDelivery(
  services: Services,
  endpoint: WebhookEndpointDoc,
  step: { webhookId: string; subject: string; at: Date; data: Record<string, unknown> },
): Promise<DeliveryDoc> {
  return ensureDelivery(services, endpoint, {
    kind: 'workflow',
    event_id: step.webhookId,
    type: 'workflow.step',
    subject: step.subject,
    occurred_at: step.at,
    data_json: JSON.stringify(step.data),
  });
}

/** The most events one replay re-sends. */
export const MAX_REPLAY_EVENTS = 10_000;

/** A replay's job: the endpoint's events of [from, to), in order, with their ids, through one cursor. */
export async function replayWindow(services: Services, job: WebhookReplayJob): Promise<{ replayed: number }> {
  const db = services.mongo.db;
  const endpoint = await findEndpoint(db, job.endpoint);
  if (endpoint === null) return { replayed: 0 };
  const cursor = eventsCollection(db)
    .find({ firm: endpoint.firm, occurred_at: { $gte: new Date(job.from), $lt: new Date(job.to) } })
    .sort({ occurred_at: 1, _id: 1 });
  let replayed = 0;
  try {
    for await (const event of cursor) {
      if (!matchesFilter(endpoint.events, event.type)) continue;
      await ensureDelivery(services, endpoint, sourceOf(event, 'replay'), `|${job.replay}`);
      if (++replayed >= MAX_REPLAY_EVENTS) break;
    }
  } finally {
    await cursor.close();
  }
  return { replayed };
}

// --- running a delivery ------------------------------------------------------------------------

export type DeliveryStep =
  | { kind: 'done'; status: DeliveryStatus | 'missing' }
  /** Not yet: sleep until `until`; `recheck` (after parking) true means go now. */
  | { kind: 'wait'; until: number; recheck?: () => Promise<boolean> };

const deliverQueue = (services: Services) => services.queues[JOBS.webhookDeliver.queue];

/**
 * Wakes a pending delivery's job if it sleeps, or adds it if it has none. A delivery without a
 * record is being made by its event's fan-out (its first attempt in flight): it gets no job, its
 * fan-out records it.
 */
async function wake(services: Services, job: WebhookDeliverJob): Promise<void> {
  const found = await deliverQueue(services).getJob(deliverJobId(job.delivery, job.generation));
  if (found === undefined) {
    const d = await deliveriesCollection(services.mongo.db).findOne({ _id: job.delivery });
    if (d !== null && d.status === 'pending' && d.generation === job.generation)
      await enqueue(services.queues, JOBS.webhookDeliver, job);
    return;
  }
  if (await found.isDelayed()) await found.promote().catch(() => undefined);
}

/**
 * After a delivery settles (outcome: what to count, null for none): it leaves its lane and the
 * next of the lane is woken; a success ends the endpoint's failing streak.
 */
async function settled(
  services: Services,
  m: LaneMember,
  endpoint: string,
  outcome: Outcome | null,
): Promise<void> {
  // The lane, the outcome counter and the failing streak are apart on a Redis Cluster: three
  // commands, sent together.
  const [next] = await Promise.all([
    settleInLane(services, m),
    outcome === null ? null : countOutcome(services, outcome),
    outcome === 'delivered'
      ? services.redis.del(redisKeys(services.config).webhookFailingSince(endpoint))
      : null,
  ]);
  if (next !== null) await wake(services, next);
}

/** The recorded (or, for events kept before that was recorded, occurred) time of an event, ms; null when gone. */
async function recordedAt(services: Services, eventId: string): Promise<number | null> {
  const e = await eventsCollection(services.mongo.db).findOne(
    { _id: eventId },
    { projection: { recorded_at: 1, occurred_at: 1 } },
  );
  return e === null ? null : (e.recorded_at ?? e.occurred_at).getTime();
}

/** The event id of a fan-out's delivery `_id` (`<endpoint>|<subject hash>|<ms>|<event id>`). */
const eventOfDelivery = (id: string): string => id.split('|')[3] ?? '';

/**
 * What holds a delivery back: an earlier event of its subject not fanned out, or an earlier
 * unsettled delivery of its lane (pending, or in flight in its fan-out). The bound
 * (WEBHOOK_ORDER_WAIT_MS) counts from when the earlier one was recorded or became pending.
 */
async function heldBack(
  services: Services,
  d: DeliveryDoc,
): Promise<{ wait: DeliveryStep & { kind: 'wait' } } | { outOfOrder: boolean }> {
  const db = services.mongo.db;
  const now = Date.now();
  const bound = services.config.webhookOrderWaitMs;
  const own: LaneMember = { delivery: d._id, generation: d.generation };
  if (d.kind === 'event') {
    const event = { _id: d.event_id, firm: d.firm, subject: d.subject, occurred_at: d.occurred_at };
    const due = await earlierDue(services, event);
    const since = due === null ? null : ((await recordedAt(services, due.event)) ?? due.at);
    if (due !== null && since !== null && now - since < bound) {
      // Run again if it already ran: the event was recorded again (a retried step, or a finished
      // call's call.ended on each later event of the call) and its mark set again after that.
      await enqueueRun(services.queues, JOBS.webhookFanout, { eventId: due.event, retried: true });
      return {
        wait: {
          kind: 'wait',
          until: Math.min(now + LANE_SAFETY_MS, since + bound),
          recheck: async () => (await earlierDue(services, event))?.event !== due.event,
        },
      };
    }
  }
  let outOfOrder = false;
  for (const head of await earlierInLane(services, own)) {
    const hd = await deliveriesCollection(db).findOne({ _id: head.delivery });
    let since: number;
    if (hd === null) {
      // No record yet: its fan-out is sending it (or died doing so, and is retried).
      const eventId = eventOfDelivery(head.delivery);
      const at = await recordedAt(services, eventId);
      if (at === null) {
        await leaveLane(services, head);
        continue;
      }
      since = at;
      if (now - since < bound)
        await enqueueRun(services.queues, JOBS.webhookFanout, { eventId, retried: true });
    } else if (hd.status !== 'pending' || hd.generation !== head.generation) {
      // Settled, and left in the lane by a worker that died in between.
      await leaveLane(services, head);
      continue;
    } else {
      since = hd.pending_since.getTime();
      if (now - since < bound) await wake(services, head);
    }
    if (now - since >= bound) {
      outOfOrder = true;
      continue;
    }
    // Woken when the earlier one settles; at the latest when the bound is reached.
    const until = Math.min(now + LANE_SAFETY_MS, since + bound);
    return { wait: { kind: 'wait', until, recheck: async () => !(await inLane(services, head)) } };
  }
  return { outOfOrder };
}

/** Signers by secret (a Webhook decodes its key once). */
const signers = new Map<string, Webhook>();
function signerOf(secret: string): Webhook {
  let signer = signers.get(secret);
  if (signer === undefined) {
    if (signers.size >= 1000) signers.delete(signers.keys().next().value!);
    signers.set(secret, (signer = new Webhook(secret)));
  }
  return signer;
}

/** The body `{type, timestamp, data}` (data as stored: JSON text) and the spec's three headers. */
export function signedRequest(
  secrets: readonly string[],
  id: string,
  type: string,
  occurredAt: Date,
  dataJson: string,
  now: Date = new Date(),
): { body: string; headers: Record<string, string> } {
  const body = `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(occurredAt.toISOString())},"data":${dataJson}}`;
  const signature = secrets.map((s) => signerOf(s).sign(id, now, body)).join(' ');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'intake-service-webhooks/1',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signature,
    },
  };
}

type Outcome = 'delivered' | 'failed' | 'retrying' | 'gone' | 'skipped';

async function countOutcome(services: Services, outcome: Outcome): Promise<void> {
  await services.redis
    .hincrby(redisKeys(services.config).webhookDeliveryOutcomes(), outcome, 1)
    .catch(() => undefined);
}

async function skip(services: Services, d: DeliveryDoc, reason: string): Promise<DeliveryStep> {
  await deliveriesCollection(services.mongo.db).updateOne(
    { _id: d._id },
    { $set: { status: 'skipped', reason, next_attempt_at: null, settled_at: new Date() } },
  );
  await settled(services, { delivery: d._id, generation: d.generation }, d.endpoint, 'skipped');
  return { kind: 'done', status: 'skipped' };
}

/** One run of a delivery's job: wait for its turn or its retry time, or send once and record it. */
export async function runDelivery(services: Services, job: WebhookDeliverJob): Promise<DeliveryStep> {
  const db = services.mongo.db;
  const d = await deliveriesCollection(db).findOne({ _id: job.delivery });
  if (d === null || d.status !== 'pending' || d.generation !== job.generation) {
    await settled(services, job, d?.endpoint ?? '', null);
    return { kind: 'done', status: d?.status ?? 'missing' };
  }
  const endpoint = (await firmEndpoints(services, d.firm)).find((e) => e._id === d.endpoint) ?? null;
  if (endpoint === null) return skip(services, d, 'endpoint_deleted');
  if (!endpoint.enabled) return skip(services, d, 'endpoint_disabled');
  const held = await heldBack(services, d);
  if ('wait' in held) return held.wait;
  const due = d.next_attempt_at?.getTime() ?? 0;
  if (due > Date.now()) return { kind: 'wait', until: due };
  const result = await send(services, endpoint, d);
  const verdict = judge(services, d.failures, result);
  const current = await withDeliveryLock(services, d._id, async () => {
    const now = await deliveriesCollection(db).findOne({ _id: d._id });
    if (now === null) return null;
    const attempts = [...now.attempts, verdict.attempt].slice(-MAX_ATTEMPTS_KEPT);
    if (now.status !== 'pending' || now.generation !== d.generation) {
      // Settled by another run, or tried again as a new generation, while this attempt was under
      // way: it joins the log, and the delivery stays as that left it.
      await deliveriesCollection(db).updateOne({ _id: d._id }, { $set: { attempts } });
      return now;
    }
    await deliveriesCollection(db).updateOne(
      { _id: d._id },
      {
        $set: {
          status: verdict.status,
          reason: verdict.reason,
          failures: verdict.failures,
          out_of_order: now.out_of_order || held.outOfOrder,
          next_attempt_at: verdict.attempt.next_retry_at,
          attempts,
          settled_at:
            verdict.status === 'pending'
              ? null
              : new Date(verdict.attempt.at.getTime() + verdict.attempt.duration_ms),
        },
      },
    );
    return null;
  });
  if (current !== null) {
    // This run's place in the lane is let go, as when its job finds the delivery settled.
    await settled(services, job, d.endpoint, null);
    return { kind: 'done', status: current.status };
  }
  await afterAttempt(services, d, endpoint, verdict);
  if (verdict.status !== 'pending') return { kind: 'done', status: verdict.status };
  return { kind: 'wait', until: verdict.attempt.next_retry_at!.getTime() };
}

/**
 * A fan-out's first attempt of a delivery whose lane is free (it has joined it): sent, then
 * recorded in one insert with its outcome; a failed one then waits for its retry in its own job.
 */
async function firstAttempt(
  services: Services,
  endpoint: WebhookEndpointDoc,
  doc: DeliveryDoc,
): Promise<void> {
  const result = await send(services, endpoint, doc);
  const verdict = judge(services, 0, result);
  const done = verdict.status !== 'pending';
  const record: DeliveryDoc = {
    ...doc,
    status: verdict.status,
    reason: verdict.reason,
    failures: verdict.failures,
    pending_since: verdict.attempt.at,
    next_attempt_at: verdict.attempt.next_retry_at,
    attempts: [verdict.attempt],
    settled_at: done ? new Date(verdict.attempt.at.getTime() + verdict.attempt.duration_ms) : null,
  };
  const coll = deliveriesCollection(services.mongo.db);
  if (!(await claimCoalesced(services.mongo.db, coll, record))) {
    // Recorded meanwhile by another run of this fan-out: this attempt joins its log, written from
    // a read inside the delivery's lock (that run's retry job may be recording its own attempt).
    const current = await withDeliveryLock(services, doc._id, async () => {
      const now = await coll.findOne({ _id: doc._id });
      if (now === null) return null;
      const attempts = [...now.attempts, verdict.attempt].slice(-MAX_ATTEMPTS_KEPT);
      await coll.updateOne({ _id: doc._id }, { $set: { attempts } });
      return { ...now, attempts };
    });
    if (current !== null) await ensureFollowUp(services, current);
    return;
  }
  await afterAttempt(services, record, endpoint, verdict);
  if (!done)
    await enqueue(
      services.queues,
      JOBS.webhookDeliver,
      { delivery: doc._id, generation: 0 },
      { delay: verdict.attempt.next_retry_at!.getTime() - Date.now() },
    );
}

type Sent = AttemptRecord & { retryAfter: number | null };

/** One signed POST of a delivery to its endpoint, under the URL policy; never throws for the endpoint's sake. */
async function send(
  services: Services,
  endpoint: WebhookEndpointDoc,
  d: Pick<DeliveryDoc, 'event_id' | 'type' | 'occurred_at' | 'data_json'>,
): Promise<Sent> {
  const request = signedRequest(
    await signingSecrets(services.mongo.db, endpoint),
    d.event_id,
    d.type,
    d.occurred_at,
    d.data_json,
  );
  const started = Date.now();
  let answer: GuardedResponse | null = null;
  let error: string | null = null;
  try {
    answer = await guardedRequest(endpoint.url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      policy: urlPolicyOf(services.config),
      timeoutMs: services.config.webhookTimeoutMs,
      maxResponseBytes: RESPONSE_KEPT * 2,
    });
  } catch (err) {
    error =
      err instanceof UrlNotAllowedError
        ? `url_not_allowed: ${err.reason} (not sent)`
        : (err as Error).message.slice(0, 500);
  }
  return {
    at: new Date(started),
    status_code: answer?.status ?? null,
    duration_ms: Date.now() - started,
    // Stored as the answer came, but for NUL (the store refuses it: the attempt's record would
    // fail, and its job send the delivery again and again).
    response_body: answer === null ? null : storableText(answer.body.slice(0, RESPONSE_KEPT)),
    error: error === null ? null : storableText(error),
    next_retry_at: null,
    retryAfter: answer === null ? null : parseRetryAfter(answer.headers['retry-after']),
  };
}

interface Verdict {
  status: DeliveryStatus;
  reason: string | null;
  outcome: Outcome;
  failures: number;
  ok: boolean;
  gone: boolean;
  attempt: AttemptRecord;
}

/** What an attempt means: delivered (2xx), gone (410), or a failure retried on the schedule until it runs out. */
function judge(services: Services, failuresBefore: number, result: Sent): Verdict {
  const { retryAfter, ...attempt } = result;
  const code = attempt.status_code;
  const ok = code !== null && code >= 200 && code < 300;
  const gone = code === 410;
  if (ok)
    return {
      status: 'delivered',
      reason: null,
      outcome: 'delivered',
      failures: failuresBefore,
      ok,
      gone,
      attempt,
    };
  if (gone)
    return { status: 'failed', reason: 'gone', outcome: 'gone', failures: failuresBefore, ok, gone, attempt };
  const failures = failuresBefore + 1;
  const delay = nextRetryDelay(parseSchedule(services.config.webhookRetrySchedule), failures, retryAfter);
  if (delay === null)
    return { status: 'failed', reason: 'retries_exhausted', outcome: 'failed', failures, ok, gone, attempt };
  attempt.next_retry_at = new Date(Date.now() + delay);
  return { status: 'pending', reason: null, outcome: 'retrying', failures, ok, gone, attempt };
}

/** After an attempt is recorded: its outcome counted, the endpoint's health, and a settled delivery out of its lane. */
async function afterAttempt(
  services: Services,
  d: Pick<DeliveryDoc, '_id' | 'generation' | 'endpoint'>,
  endpoint: WebhookEndpointDoc,
  verdict: Verdict,
): Promise<void> {
  const m = { delivery: d._id, generation: d.generation };
  if (verdict.status !== 'pending') await settled(services, m, d.endpoint, verdict.outcome);
  else await countOutcome(services, verdict.outcome);
  if (!verdict.ok) await endpointHealth(services, endpoint, verdict.gone);
}

/**
 * After a failed attempt: a 410 disables the endpoint; a streak of failures past
 * WEBHOOK_DISABLE_AFTER_MS disables it and mails the firm. The streak's start is a Redis key
 * (set if absent on a failure, deleted on a success when the delivery settles, when the endpoint
 * is enabled again or deleted): a flaky endpoint's every answer would otherwise be a locked write
 * of its record.
 */
async function endpointHealth(
  services: Services,
  endpoint: WebhookEndpointDoc,
  gone: boolean,
): Promise<void> {
  const now = clock.now();
  const streak = redisKeys(services.config).webhookFailingSince(endpoint._id);
  if (gone) {
    await setOnEndpoint(services, endpoint, (current) =>
      current.enabled
        ? { enabled: false, disabled_reason: 'gone', disabled_at: new Date(now), updated_at: new Date(now) }
        : null,
    );
    return;
  }
  const began = await services.redis.set(streak, String(now), 'NX');
  // A streak this failure began, of an endpoint deleted while the attempt was under way: the
  // delete removed the streak before this set it, and nothing would remove it after. One point
  // read at the start of a streak (an endpoint still there when read is deleted after: its delete
  // then removes the key this set).
  if (began === 'OK' && (await findEndpoint(services.mongo.db, endpoint._id)) === null) {
    await services.redis.del(streak);
    return;
  }
  const since = Number(await services.redis.get(streak));
  if (!(since > 0) || now - since < services.config.webhookDisableAfterMs) return;
  const disabled = await setOnEndpoint(services, endpoint, (current) =>
    current.enabled
      ? {
          enabled: false,
          disabled_reason: 'failing',
          disabled_at: new Date(now),
          failing_since: new Date(since),
          updated_at: new Date(now),
        }
      : null,
  );
  if (
    disabled !== null &&
    disabled.disabled_reason === 'failing' &&
    disabled.disabled_at?.getTime() === now
  ) {
    await services.redis.del(streak);
    await enqueue(services.queues, JOBS.webhookNotice, {
      endpoint: endpoint._id,
      firm: endpoint.firm,
      at: now,
    });
  }
}

/** Since when every attempt to each endpoint has failed (null: its last attempt succeeded, or none failed). */
export async function failingSince(
  services: Pick<Services, 'redis' | 'config'>,
  endpoints: readonly Pick<WebhookEndpointDoc, '_id' | 'failing_since' | 'enabled'>[],
): Promise<Array<Date | null>> {
  if (endpoints.length === 0) return [];
  const keys = redisKeys(services.config);
  // One GET a key, not one MGET: the keys are the endpoints' own, in as many slots of a Redis
  // Cluster, where a multi-key command across slots is refused (CROSSSLOT). At most 20 a firm.
  const values = await Promise.all(endpoints.map((e) => services.redis.get(keys.webhookFailingSince(e._id))));
  return endpoints.map((e, i) => {
    if (!e.enabled) return e.failing_since;
    const since = Number(values[i]);
    return since > 0 ? new Date(since) : null;
  });
}

// --- the API's side -------------------------------------------------------------------------

/** `POST …/deliveries/{id}/retry`: a pending one is tried now; a settled one is tried again (a new generation). */
export async function retryDelivery(services: Services, seen: DeliveryDoc): Promise<DeliveryDoc> {
  const db = services.mongo.db;
  const now = new Date();
  // Written from a read inside the delivery's lock: its job may be recording an attempt, and a
  // write from the request's earlier read would put `pending` back over the status it settled.
  const { d, pending } = await withDeliveryLock(services, seen._id, async () => {
    const current = (await deliveriesCollection(db).findOne({ _id: seen._id })) ?? seen;
    const next: Partial<DeliveryDoc> =
      current.status === 'pending'
        ? { next_attempt_at: now }
        : {
            status: 'pending',
            reason: null,
            generation: current.generation + 1,
            failures: 0,
            pending_since: now,
            next_attempt_at: now,
            settled_at: null,
          };
    await deliveriesCollection(db).updateOne({ _id: current._id }, { $set: next });
    return { d: { ...current, ...next }, pending: current.status === 'pending' };
  });
  const job = { delivery: d._id, generation: d.generation };
  if (pending) {
    await wake(services, job);
    return d;
  }
  await joinLane(services, job);
  await enqueue(services.queues, JOBS.webhookDeliver, job);
  return d;
}

export function findDelivery(db: Db, id: string): Promise<DeliveryDoc | null> {
  return deliveriesCollection(db).findOne({ _id: id });
}

/** An endpoint's deliveries, newest first; keyset pages. */
export async function listDeliveries(
  services: Services,
  endpoint: WebhookEndpointDoc,
  limit: number,
  cursor: string | undefined,
): Promise<{ deliveries: DeliveryDoc[]; next_cursor: string }> {
  const page = await keysetPage(
    deliveriesCollection(services.mongo.db),
    {
      secret: services.config.sessionSecret,
      scope: `webhook_deliveries|${endpoint._id}`,
      firm: endpoint.firm,
      order: { primary: { field: 'created_at', kind: 'date' }, tie: '_id' },
    },
    { endpoint: endpoint._id },
    limit,
    cursor,
  );
  return { deliveries: page.rows, next_cursor: page.next_cursor };
}

/** Webhook delivery attempts by outcome since the counters began (for /metrics). */
export async function deliveryOutcomes(
  services: Pick<Services, 'redis' | 'config'>,
): Promise<Record<string, number>> {
  const raw = await services.redis.hgetall(redisKeys(services.config).webhookDeliveryOutcomes());
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Number(v)]));
}
