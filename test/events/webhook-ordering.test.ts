// Ordering (docs/events.md#ordering): the events of one subject reach an endpoint in order — a
// later one waits while an earlier one is retrying — while other subjects, the firm's other
// endpoint and another firm's endpoint do not wait. Small here (12 subjects × 5 events to an
// endpoint failing 30 % of requests at random, seeded, and answering a few slowly); the bench
// `webhooks-order` runs 200 × 5 with 10 s stalls.
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  eventIdOf,
  eventsCollection,
  paddedMs,
  recordEvent,
  subjectKey,
} from '../../core/domain/events/record-event.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { joinLane, laneOf, markDue } from '../../core/domain/events/lanes.js';
import { deliveriesCollection } from '../../core/domain/events/deliveries.js';
import { enqueue } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import { deliverJobId } from '../../jobs/webhooks.js';
import { seededRng } from '../../scripts/chaos/rng.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import {
  startWebhookReceiver,
  type ReceivedDelivery,
  type WebhookReceiver,
} from '../fakes/webhook-receiver.js';

let stack: Stack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startStack({
    workers: true,
    env: {
      WEBHOOK_RETRY_SCHEDULE: '50ms,100ms,200ms,300ms,500ms,1s,1s,1s,1s,1s',
      WEBHOOK_ORDER_WAIT_MS: '120000',
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

const SUBJECTS = 12;
const EVENTS = 5;

/** Per subject, the versions of its events in the order their first successful delivery arrived. */
function firstSuccessOrder(accepted: ReceivedDelivery[]): Map<string, number[]> {
  const seen = new Set<string>();
  const order = new Map<string, number[]>();
  for (const r of accepted) {
    const id = r.headers['webhook-id']!;
    if (seen.has(id)) continue;
    seen.add(id);
    const { data } = JSON.parse(r.body) as { data: { id: string; version: number } };
    order.set(data.id, [...(order.get(data.id) ?? []), data.version]);
  }
  return order;
}

it('keeps each subject in order on a failing, slow endpoint while the healthy ones get theirs first', async () => {
  const rng = seededRng(31).fork('receiver');
  receiver.answer = (path) => {
    if (path !== '/flaky') return { status: 200, body: 'ok' };
    if (rng.chance(0.3)) return { status: 500, body: 'flaky' };
    return { status: 200, body: 'ok', ...(rng.chance(0.05) ? { delayMs: 800 } : {}) };
  };
  const [firm, other] = [await createFirm(stack), await createFirm(stack)];
  const subscribe = async (f: typeof firm, path: string) => {
    const res = await f.client.post('/api/webhook-endpoints', {
      firmSlug: f.slug,
      url: receiver.url(path),
      events: ['lead.*'],
    });
    expect(res.status).toBe(200);
    return res.body.id as string;
  };
  const flakyId = await subscribe(firm, '/flaky');
  await subscribe(firm, '/healthy');
  await subscribe(other, '/other');

  const t0 = Date.now();
  for (let version = 0; version < EVENTS; version++) {
    await Promise.all(
      [firm, other].flatMap((f) =>
        Array.from({ length: SUBJECTS }, (_, s) =>
          recordEvent(stack.services, {
            firm: f.slug,
            type: version === 0 ? 'lead.created' : 'lead.updated',
            subject: `lead_${f.slug}_${s}`,
            key: `v${version}`,
            occurred_at: new Date(t0 + version * 1000 + s),
            data: { id: `lead_${f.slug}_${s}`, version },
          }),
        ),
      ),
    );
  }

  const total = SUBJECTS * EVENTS;
  const distinct = (path: string) =>
    new Set(receiver.accepted(path).map((r) => r.headers['webhook-id'])).size;
  await eventually(async () => expect(distinct('/flaky')).toBe(total), 60_000, 200);
  await eventually(async () => expect([distinct('/healthy'), distinct('/other')]).toEqual([total, total]));

  // Every subject's first successful deliveries came in order, at least once each.
  const order = firstSuccessOrder(receiver.accepted('/flaky'));
  expect(order.size).toBe(SUBJECTS);
  for (const versions of order.values()) expect(versions).toEqual([0, 1, 2, 3, 4]);
  const failed = receiver.at('/flaky').filter((r) => r.status === 500).length;
  expect(failed).toBeGreaterThan(total * 0.15);

  // The healthy endpoint and the other firm's had every event before the flaky one was done.
  const lastSeq = (path: string) => Math.max(...receiver.accepted(path).map((r) => r.seq));
  const flakyDone = lastSeq('/flaky');
  expect(lastSeq('/healthy')).toBeLessThan(flakyDone);
  expect(lastSeq('/other')).toBeLessThan(flakyDone);
  // Nothing had to give up on order: no delivery was marked out of order.
  const log = await firm.client.get(`/api/webhook-endpoints/${flakyId}/deliveries?limit=100`);
  expect(log.body.deliveries.some((d: { out_of_order: boolean }) => d.out_of_order)).toBe(false);
  console.log(
    `webhook ordering: ${total} events to the flaky endpoint (${failed} answers 500), in order for all ${SUBJECTS} subjects; healthy endpoints done at arrival ${lastSeq('/healthy')} and ${lastSeq('/other')} of ${flakyDone}`,
  );
});

it('a later event does not overtake an earlier one of its subject whose fan-out has not run yet', async () => {
  receiver.answer = () => ({ status: 200, body: 'ok' });
  const firm = await createFirm(stack);
  const res = await firm.client.post('/api/webhook-endpoints', {
    firmSlug: firm.slug,
    url: receiver.url('/late-fanout'),
    events: ['lead.*'],
  });
  const t0 = Date.now();
  const input = (version: number) => ({
    firm: firm.slug,
    type: 'lead.updated' as const,
    subject: 'lead_slow_fanout',
    key: `v${version}`,
    occurred_at: new Date(t0 + version),
    data: { id: 'lead_slow_fanout', version },
  });
  // The first event as its step leaves it when the step's fan-out job is late: recorded, due.
  const first = {
    _id: eventIdOf(input(0)),
    firm: firm.slug,
    type: 'lead.updated' as const,
    subject: 'lead_slow_fanout',
    occurred_at: input(0).occurred_at,
    data_json: JSON.stringify(input(0).data),
  };
  await eventsCollection(stack.services.mongo.db).insertOne(first);
  await markDue(stack.services, [first]);
  await recordEvent(stack.services, input(1));
  // The second's delivery has run once: it parked, waiting.
  const queue = stack.services.queues[JOBS.webhookDeliver.queue];
  await eventually(async () => {
    const [d] = await deliveriesCollection(stack.services.mongo.db).find({ endpoint: res.body.id }).toArray();
    expect(d).toBeDefined();
    const job = await queue.getJob(deliverJobId(d!._id, 0));
    expect((await job?.isDelayed()) || receiver.at('/late-fanout').length > 0).toBe(true);
  });
  await enqueue(stack.services.queues, JOBS.webhookFanout, { eventId: first._id });
  await eventually(async () => expect(receiver.accepted('/late-fanout')).toHaveLength(2));
  expect(receiver.accepted('/late-fanout').map((r) => JSON.parse(r.body).data.version)).toEqual([0, 1]);
});

async function subscribe(firm: Awaited<ReturnType<typeof createFirm>>, path: string): Promise<string> {
  const res = await firm.client.post('/api/webhook-endpoints', {
    firmSlug: firm.slug,
    url: receiver.url(path),
    events: ['lead.*'],
  });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

const leadEvent = (firm: string, subject: string, version: number, at: Date) => ({
  firm,
  type: 'lead.updated' as const,
  subject,
  key: `v${version}`,
  occurred_at: at,
  data: { id: subject, version },
});

const versionsAt = (path: string) =>
  receiver.accepted(path).map((r) => (JSON.parse(r.body) as { data: { version: number } }).data.version);

it("the fan-out makes a free lane's first attempt itself and records it once, with no job of its own", async () => {
  receiver.answer = () => ({ status: 200, body: 'ok' });
  const firm = await createFirm(stack);
  const endpoint = await subscribe(firm, '/fast');
  const eventId = await recordEvent(stack.services, leadEvent(firm.slug, 'lead_fast', 0, new Date()));
  await eventually(async () => expect(receiver.accepted('/fast')).toHaveLength(1));
  expect(receiver.accepted('/fast')[0]!.headers['webhook-id']).toBe(eventId);
  const d = await eventually(async () => {
    const [found] = await deliveriesCollection(stack.services.mongo.db).find({ endpoint }).toArray();
    expect(found?.status).toBe('delivered');
    return found!;
  });
  expect(d.attempts).toHaveLength(1);
  expect(d.attempts[0]!.status_code).toBe(200);
  const queue = stack.services.queues[JOBS.webhookDeliver.queue];
  expect(await queue.getJob(deliverJobId(d._id, 0))).toBeUndefined();
});

it('an event recorded late holds a later one back for the bound counted from its recording, not its occurrence', async () => {
  receiver.answer = () => ({ status: 200, body: 'ok' });
  const firm = await createFirm(stack);
  await subscribe(firm, '/late-recorded');
  // Occurred 10 minutes ago (past this stack's 2-minute bound), recorded now; its fan-out late.
  const occurred = new Date(Date.now() - 10 * 60_000);
  const input = leadEvent(firm.slug, 'lead_late_recorded', 0, occurred);
  const first = {
    _id: eventIdOf(input),
    firm: firm.slug,
    type: input.type,
    subject: input.subject,
    occurred_at: occurred,
    recorded_at: new Date(),
    data_json: JSON.stringify(input.data),
  };
  await eventsCollection(stack.services.mongo.db).insertOne(first);
  await markDue(stack.services, [first]);
  await recordEvent(
    stack.services,
    leadEvent(firm.slug, 'lead_late_recorded', 1, new Date(occurred.getTime() + 1)),
  );
  // The later one waits, and has the earlier one's fan-out run (its job was never added here).
  await eventually(async () => expect(receiver.accepted('/late-recorded')).toHaveLength(2));
  expect(versionsAt('/late-recorded')).toEqual([0, 1]);
});

it('a fan-out that died between its send and its record sends again when retried, and a later event waits for it', async () => {
  receiver.answer = () => ({ status: 200, body: 'ok' });
  const firm = await createFirm(stack);
  const endpoint = await subscribe(firm, '/crashed');
  const at = new Date();
  const input = leadEvent(firm.slug, 'lead_crashed', 0, at);
  const first = {
    _id: eventIdOf(input),
    firm: firm.slug,
    type: input.type,
    subject: input.subject,
    occurred_at: at,
    recorded_at: at,
    data_json: JSON.stringify(input.data),
  };
  // What the dead fan-out left: the event recorded, no longer due, its delivery in its lane (in
  // flight), no delivery record; its job waits for its retry.
  await eventsCollection(stack.services.mongo.db).insertOne(first);
  const delivery = `${laneOf(endpoint, input.subject)}|${paddedMs(at)}|${first._id}`;
  await joinLane(stack.services, { delivery, generation: 0 });
  await recordEvent(stack.services, leadEvent(firm.slug, 'lead_crashed', 1, new Date(at.getTime() + 1)));
  await eventually(async () => expect(receiver.accepted('/crashed')).toHaveLength(2));
  expect(versionsAt('/crashed')).toEqual([0, 1]);
  expect(receiver.accepted('/crashed')[0]!.headers['webhook-id']).toBe(first._id);
  const d = await eventually(async () => {
    const found = await deliveriesCollection(stack.services.mongo.db).findOne({ _id: delivery });
    expect(found?.status).toBe('delivered');
    return found!;
  });
  expect(d.attempts).toHaveLength(1);
});

it("one stalled endpoint holds neither the fan-out's other endpoint nor that endpoint's later events", async () => {
  let release!: () => void;
  const stall = new Promise<void>((resolve) => (release = resolve));
  receiver.answer = (path) => ({ status: 200, body: 'ok', ...(path === '/stalled' ? { until: stall } : {}) });
  const firm = await createFirm(stack);
  await subscribe(firm, '/stalled');
  await subscribe(firm, '/beside');
  const at = Date.now();
  await recordEvent(stack.services, leadEvent(firm.slug, 'lead_stall', 0, new Date(at)));
  await recordEvent(stack.services, leadEvent(firm.slug, 'lead_stall', 1, new Date(at + 1)));
  try {
    await eventually(async () => expect(versionsAt('/beside')).toEqual([0, 1]));
    expect(receiver.at('/stalled')).toHaveLength(0);
  } finally {
    release();
  }
  await eventually(async () => expect(versionsAt('/stalled')).toEqual([0, 1]));
});

it('an event recorded again after its fan-out ran holds back no later event of its subject', async () => {
  // A finished call's call.ended is recorded again by each later event of the call (the hook is
  // idempotent), which marks it "due" again after its fan-out job completed. The fan-out runs
  // again and clears the mark; a mark left anyway (set while that run was finishing) is cleared
  // by the next event's delivery running the fan-out again, not waited on until the order bound.
  receiver.answer = () => ({ status: 200, body: 'ok' });
  const firm = await createFirm(stack);
  const res = await firm.client.post('/api/webhook-endpoints', {
    firmSlug: firm.slug,
    url: receiver.url('/recorded-again'),
    events: ['lead.*'],
  });
  expect(res.status).toBe(200);
  const t0 = Date.now();
  const input = (version: number) => ({
    firm: firm.slug,
    type: 'lead.updated' as const,
    subject: 'lead_recorded_again',
    key: `v${version}`,
    occurred_at: new Date(t0 + version),
    data: { id: 'lead_recorded_again', version },
  });
  const dueMarks = () =>
    stack.services.redis.zcard(
      redisKeys(stack.services.config).eventsDue(firm.slug, subjectKey('lead_recorded_again')),
    );
  const first = await recordEvent(stack.services, input(0));
  const fanout = () => stack.services.queues[JOBS.webhookFanout.queue].getJob(`fanout|${first}`);
  await eventually(async () => {
    expect(receiver.accepted('/recorded-again')).toHaveLength(1);
    expect(await (await fanout())?.getState()).toBe('completed');
  });

  // The same step again (a retried job, a later provider event of the call): no mark is left.
  await recordEvent(stack.services, input(0));
  await eventually(async () => expect(await dueMarks()).toBe(0));

  // A mark left over all the same: the next event is delivered, in order, not held back.
  const [recorded] = await eventsCollection(stack.services.mongo.db).find({ _id: first }).toArray();
  await markDue(stack.services, [recorded!]);
  await recordEvent(stack.services, input(1));
  await eventually(async () => expect(receiver.accepted('/recorded-again')).toHaveLength(2));
  expect(receiver.accepted('/recorded-again').map((r) => JSON.parse(r.body).data.version)).toEqual([0, 1]);
  const log = await firm.client.get(`/api/webhook-endpoints/${res.body.id}/deliveries?limit=10`);
  expect(log.body.deliveries.map((d: { out_of_order: boolean }) => d.out_of_order)).toEqual([false, false]);
  expect(await dueMarks()).toBe(0);
});

it('an event recorded again while its fan-out is still sending holds back no later event at the other endpoint', async () => {
  // The fan-out takes its event off `due` once each delivery holds its lane, then waits on the
  // endpoints' answers; the event recorded again in that time (a later provider event of the
  // call records call.ended again) must not be marked due again with nobody left to clear it.
  let release!: () => void;
  const stall = new Promise<void>((resolve) => (release = resolve));
  let arrived = 0; // requests to the stalled endpoint, counted as they arrive (not as answered)
  receiver.answer = (path) => {
    if (path !== '/sending-stalled') return { status: 200, body: 'ok' };
    arrived += 1;
    return { status: 200, body: 'ok', until: stall };
  };
  const firm = await createFirm(stack);
  await subscribe(firm, '/sending-stalled');
  await subscribe(firm, '/sending-beside');
  const subject = 'lead_recorded_while_sending';
  const dueMarks = () =>
    stack.services.redis.zcard(redisKeys(stack.services.config).eventsDue(firm.slug, subjectKey(subject)));
  const at = Date.now();
  try {
    const first = await recordEvent(stack.services, leadEvent(firm.slug, subject, 0, new Date(at)));
    const fanout = () => stack.services.queues[JOBS.webhookFanout.queue].getJob(`fanout|${first}`);
    // Its fan-out is sending: the stalled endpoint has the request, the event is no longer due.
    await eventually(async () => {
      expect(arrived).toBe(1);
      expect(await dueMarks()).toBe(0);
      expect(await (await fanout())?.getState()).toBe('active');
    });
    await recordEvent(stack.services, leadEvent(firm.slug, subject, 0, new Date(at)));
    expect(await dueMarks()).toBe(0);
    await recordEvent(stack.services, leadEvent(firm.slug, subject, 1, new Date(at + 1)));
    await eventually(async () => expect(versionsAt('/sending-beside')).toEqual([0, 1]));
  } finally {
    release();
  }
  await eventually(async () => expect(versionsAt('/sending-stalled')).toEqual([0, 1]));
});
