// Deliveries during a Redis outage (docs/webhooks.md#redis-outages): Cal.com sends each event once and Retell
// three times in a few seconds, so a correctly authenticated delivery is kept durably before its 200: in its
// queue, or, while Redis is down, in MongoDB, moved to the queue in order when Redis is back. Only with both
// stores down is the answer 503.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PhoneCallResponse } from 'retell-sdk/resources/call';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { drainOutbox, type OutboxEntry } from '../../core/domain/deliveries/delivery-outbox.js';
import { freePort } from '../../scripts/local/services.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import {
  calBookingPayload,
  calCancelled,
  calCreated,
  calRescheduled,
  calSeatPayload,
  type CalPerson,
} from '../fakes/calcom-fixtures.js';
import { callWebhook, conversationCall, voicemailCall, type RetellCaller } from '../fakes/retell-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { postSigned as postCal, reminders, type ReminderRow } from '../bookings/support.js';
import { callForProvider, postSigned as postRetell, queuesIdle, settledCall } from './support.js';

const CAL_SECRET = 'whsec_outage_calcom_secret';
const RETELL_SECRET = 'whsec_outage_retell_secret';
const DESK = 'desk@outage-firm.test';
const DAY = 24 * 3600_000;

type Firm = Awaited<ReturnType<typeof createFirm>>;

/** One delivery of a story: which receiver, and the body. */
type Delivery = { to: 'cal'; body: unknown } | { to: 'retell'; body: unknown };

/** What a firm's story is about: its bookings' uids and its calls' provider ids, by position. */
interface Story {
  deliveries: Delivery[];
  bookingUids: string[];
  callIds: string[];
}

const people: CalPerson[] = ['Ann Lee', 'Bob Stone', 'Cem Kaya', 'Dee Park'].map((name) => ({
  name,
  email: `${name.toLowerCase().replace(/ /g, '.')}@client.test`,
  timeZone: 'America/New_York',
}));

const caller = (i: number): RetellCaller => ({
  first_name: `Pat${i}`,
  last_name: 'Rivera',
  phone: `+1415555${String(100 + i).padStart(4, '0')}`,
  email: `pat${i}@client.test`,
  case_type: 'Personal Injury',
  summary: `Caller ${i} was rear-ended and wants a consultation.`,
});

/**
 * 20 Cal.com events (creations, a reschedule chain, a cancel, a seated booking a seat leaves) and
 * 20 Retell events (six calls started, ended and analyzed, one of them a voicemail, and one
 * call started and ended), interleaved, each booking's and each call's events in their order.
 */
function story(t0: number): Story {
  let tick = 0;
  const at = () => new Date(t0 + 1000 * tick++);
  const start = (d: number) => Math.ceil((t0 + d * DAY) / 60_000) * 60_000;
  const u = Array.from({ length: 15 }, () => `bk${rand(6)}`);
  const [ann, bob, cem, dee] = people as [CalPerson, CalPerson, CalPerson, CalPerson];
  const cal: unknown[] = [];
  // Ten plain creations (uids 0–9).
  for (let i = 0; i < 10; i++)
    cal.push(calCreated(calBookingPayload(u[i]!, start(2 + i), [people[i % 4]!]), at()));
  // A booking rescheduled twice (10 → 11 → 12), then the last one cancelled.
  const first = calBookingPayload(u[10]!, start(3), [ann]);
  const second = calBookingPayload(u[11]!, start(4), [ann]);
  const third = calBookingPayload(u[12]!, start(5), [ann]);
  cal.push(calCreated(first, at()));
  cal.push(calRescheduled(u[10]!, start(3), second, at()));
  cal.push(calRescheduled(u[11]!, start(4), third, at()));
  cal.push(calCancelled(third, at()));
  // A booking made then cancelled (13).
  const gone = calBookingPayload(u[13]!, start(6), [bob]);
  cal.push(calCreated(gone, at()));
  cal.push(calCancelled(gone, at()));
  // A seated booking (14): three seats, then one leaves.
  const seat = (p: CalPerson, id: string) => calSeatPayload(u[14]!, start(7), p, id);
  cal.push(calCreated(seat(bob, 'seat-bob'), at()));
  cal.push(calCreated(seat(cem, 'seat-cem'), at()));
  cal.push(calCreated(seat(dee, 'seat-dee'), at()));
  cal.push(calCancelled(seat(cem, 'seat-cem'), at()));
  expect(cal).toHaveLength(20);

  const callIds = Array.from({ length: 7 }, () => `call_${rand(8)}`);
  const retell: unknown[][] = callIds.map((id, i) => {
    const ended: PhoneCallResponse =
      i === 4
        ? voicemailCall({ callId: id, direction: 'inbound' })
        : conversationCall(caller(i), { callId: id, direction: 'inbound', fromNumber: caller(i).phone });
    const started: PhoneCallResponse = { ...ended, call_status: 'ongoing' };
    delete started.end_timestamp;
    delete started.call_analysis;
    const { call_analysis: _analysis, ...endedOnly } = ended;
    const events = [
      callWebhook('call_started', started),
      callWebhook('call_ended', endedOnly as PhoneCallResponse),
    ];
    return i === 6 ? events : [...events, callWebhook('call_analyzed', ended)];
  });
  // Interleave: a booking event, then the next event of the next call, round robin.
  const deliveries: Delivery[] = [];
  const queues = retell.map((events) => [...events]);
  let c = 0;
  for (const body of cal) {
    deliveries.push({ to: 'cal', body });
    for (let tries = 0; tries < queues.length; tries++) {
      const next = queues[c++ % queues.length]!.shift();
      if (next !== undefined) {
        deliveries.push({ to: 'retell', body: next });
        break;
      }
    }
  }
  for (const rest of queues) for (const body of rest) deliveries.push({ to: 'retell', body });
  expect(deliveries.filter((d) => d.to === 'retell')).toHaveLength(20);
  return { deliveries, bookingUids: u, callIds };
}

let smtp: FakeSmtp;
let redis: PrivateRedis;
let stack: Stack;
let outage: Firm;
let control: Firm;

const firmSettings = {
  booking_webhook_secret: CAL_SECRET,
  voice_webhook_secret: RETELL_SECRET,
  notification_emails: [DESK],
  timezone: 'America/New_York',
  reminder_offsets_minutes: [1440, 60],
};

beforeAll(async () => {
  smtp = await startFakeSmtp();
  // A private Redis, so stopping it does not disturb test files running in parallel.
  redis = await startPrivateRedis();
  stack = await startStack({
    workers: true,
    env: { REDIS_URL: redis.url, SMTP_URL: smtp.url, MAIL_FROM: 'Reminders <reminders@lawfirm.test>' },
  });
  outage = await createFirm(stack, firmSettings);
  control = await createFirm(stack, firmSettings);
});
afterAll(async () => {
  await stack?.stop();
  await redis?.remove();
  await smtp?.stop();
});

const outboxOf = (s: Stack) => s.services.mongo.db.collection<OutboxEntry>(COLLECTIONS.webhookOutbox);

async function send(firm: Firm, delivery: Delivery) {
  return delivery.to === 'cal'
    ? postCal(stack, firm.slug, delivery.body, CAL_SECRET)
    : postRetell(stack, firm.slug, RETELL_SECRET, delivery.body);
}

/** What a firm's story left: reminders by booking position, calls by position, as the API shows them. */
async function outcomeOf(firm: Firm, s: Story) {
  const bookings: Omit<ReminderRow, 'booking_uid'>[][] = [];
  for (const uid of s.bookingUids) {
    const rows = await reminders(firm.client, firm.slug, uid);
    bookings.push(rows.map(({ booking_uid: _uid, ...rest }) => rest));
  }
  const calls: unknown[] = [];
  for (const [i, id] of s.callIds.entries()) {
    const call = await callForProvider(stack, firm.slug, id);
    const shown =
      i === 6
        ? (await firm.client.get(`/api/v2/get-call/${call._id}`)).body
        : await settledCall(firm.client, call._id);
    // Ids and creation times differ between firms by nature.
    const {
      call_id: _id,
      agent_id: _agent,
      lead_id: _lead,
      created_at: _at,
      firm: _firm,
      ...rest
    } = shown as Record<string, unknown>;
    calls.push(rest);
  }
  return { bookings, calls };
}

/** No webhook event waits or runs (reminders stay delayed). */
const applied = () =>
  eventually(
    async () => {
      for (const name of ['call-events', 'bookings'] as const) {
        const counts = await stack.services.queues[name].getJobCounts('waiting', 'active', 'prioritized');
        expect(
          Object.values(counts).reduce((a, b) => a + b, 0),
          name,
        ).toBe(0);
      }
    },
    30_000,
    20,
  );

/** Each call's and each booking's jobs ran one after another, in the order they were sent. */
async function appliedInOrder(firm: Firm, s: Story): Promise<void> {
  const done = [
    ...(await stack.services.queues['call-events'].getJobs(['completed'])),
    ...(await stack.services.queues.bookings.getJobs(['completed'])),
  ].filter((j) => j.data.firm === firm.slug);
  const runs = new Map<string, Array<{ at: number; from: number; to: number }>>();
  for (const j of done) {
    const key = j.name === 'call-event' ? j.data.call.call_id : j.data.uid;
    const at =
      j.name === 'call-event'
        ? ['call_started', 'call_ended', 'call_analyzed'].indexOf(j.data.event)
        : j.data.event_at;
    runs.set(key, [...(runs.get(key) ?? []), { at, from: j.processedOn!, to: j.finishedOn! }]);
  }
  expect(done).toHaveLength(40);
  expect(new Set(runs.keys())).toEqual(new Set([...s.callIds, ...s.bookingUids]));
  for (const [key, list] of runs) {
    list.sort((a, b) => a.at - b.at);
    for (let i = 1; i < list.length; i++) expect(list[i]!.from, key).toBeGreaterThanOrEqual(list[i - 1]!.to);
  }
}

describe('deliveries while Redis is down are kept, then queued in order', () => {
  it('Redis stopped, 20 Cal.com and 20 Retell events: all 200, kept in MongoDB; once Redis is back nothing is lost, and reminders and calls are as if Redis had never stopped', async () => {
    const t0 = Date.now();
    const during = story(t0);
    await redis.stop();
    await eventually(async () => expect(stack.services.redis.status).not.toBe('ready'));
    for (const delivery of during.deliveries) {
      const res = await send(outage, delivery);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ received: true });
    }
    // All 40 are in MongoDB, in the order they came.
    const kept = await outboxOf(stack).find({}).sort({ _id: 1 }).toArray();
    expect(kept).toHaveLength(40);
    expect(kept.map((e) => JSON.parse(e.payload).trigger ?? JSON.parse(e.payload).event)).toEqual(
      during.deliveries.map(
        (d) =>
          (d.body as { triggerEvent?: string; event?: string }).triggerEvent ??
          (d.body as { event: string }).event,
      ),
    );

    await redis.start();
    await eventually(async () => expect(await outboxOf(stack).countDocuments({})).toBe(0), 30_000);
    await queuesIdle(stack);
    await appliedInOrder(outage, during);
    const afterOutage = await outcomeOf(outage, during);

    // The same story, told to another firm with Redis up the whole time.
    const normal = story(t0);
    // Each applied before the next is sent, as a real sender's events of one booking are seconds
    // apart (sent back to back, two events of one booking race on the workers either way).
    for (const delivery of normal.deliveries) {
      expect((await send(control, delivery)).status).toBe(200);
      await applied();
    }
    expect(await outboxOf(stack).countDocuments({})).toBe(0);
    await queuesIdle(stack);
    const withoutOutage = await outcomeOf(control, normal);

    expect(afterOutage).toEqual(withoutOutage);
    // And the story did what it says: reminders scheduled, moved, cancelled; calls ended with leads.
    const statuses = afterOutage.bookings.flat().map((r) => r.status);
    expect(statuses.filter((s) => s === 'scheduled').length).toBeGreaterThan(20);
    expect(statuses).toContain('cancelled');
    expect(afterOutage.bookings[12]!.every((r) => r.status === 'cancelled')).toBe(true);
    expect((afterOutage.calls[0] as { status: string }).status).toBe('ended');
    expect((afterOutage.calls[0] as { effects: { lead: string } }).effects.lead).toBe('done');
    expect((afterOutage.calls[4] as { outcome: string }).outcome).toBe('voicemail');
  });

  it('after Redis returns, a new delivery queues behind older kept ones, and the drain adds them in order, once', async () => {
    // A stack without workers: nothing drains until the test says so.
    const quiet = await startStack({ env: { REDIS_URL: redis.url } });
    try {
      const firm = await createFirm(quiet, firmSettings);
      const call = conversationCall(caller(1), { callId: `call_${rand(8)}`, direction: 'inbound' });
      const started = { ...call, call_status: 'ongoing' as const };
      // Another call: the drain waits for a call's previous job to finish before adding its next
      // (no worker runs here), so the order across deliveries is shown with two calls.
      const other = {
        ...conversationCall(caller(2), { callId: `call_${rand(8)}`, direction: 'inbound' }),
        call_status: 'ongoing' as const,
      };
      await redis.stop();
      await eventually(async () => expect(quiet.services.redis.status).not.toBe('ready'));
      const first = await postRetell(quiet, firm.slug, RETELL_SECRET, callWebhook('call_started', started));
      expect(first.status).toBe(200);
      await redis.start();
      await eventually(async () => expect(quiet.services.redis.status).toBe('ready'), 20_000);
      const second = await postRetell(quiet, firm.slug, RETELL_SECRET, callWebhook('call_started', other));
      expect(second.status).toBe(200);
      // Redis is up, but the second delivery went behind the first rather than ahead of it.
      const kept = await outboxOf(quiet).find({}).sort({ _id: 1 }).toArray();
      expect(kept.map((e) => JSON.parse(e.payload).call.call_id)).toEqual([call.call_id, other.call_id]);
      expect(await quiet.services.queues['call-events'].count()).toBe(0);
      // Operators see what waits.
      expect((await quiet.api.get('/metrics')).text).toMatch(/^webhook_outbox_deliveries 2$/m);

      expect(await drainOutbox(quiet.services)).toBe(2);
      expect(await outboxOf(quiet).countDocuments({})).toBe(0);
      const jobs = await quiet.services.queues['call-events'].getJobs(['waiting'], 0, -1, true);
      expect(jobs.map((j) => j.data.call.call_id)).toEqual([call.call_id, other.call_id]);
      // A drain run again (a crash between add and delete) adds nothing twice.
      await outboxOf(quiet).insertOne({ ...kept[0]!, _id: kept[0]!._id });
      expect(await drainOutbox(quiet.services)).toBe(1);
      expect(await quiet.services.queues['call-events'].count()).toBe(2);
      // With the outbox empty, deliveries go straight to the queue again (a web process looks
      // whether the outbox has emptied at most every 500 ms).
      await sleep(600);
      const third = await postRetell(quiet, firm.slug, RETELL_SECRET, callWebhook('call_analyzed', call));
      expect(third.status).toBe(200);
      await eventually(async () => expect(await quiet.services.queues['call-events'].count()).toBe(3));
      expect(await outboxOf(quiet).countDocuments({})).toBe(0);
    } finally {
      await quiet.stop();
    }
  });

  it('only with MongoDB down too is a delivery refused: 503 with Retry-After, nothing kept', async () => {
    const port = await freePort();
    const down = await startStack({
      env: { REDIS_URL: redis.url, MONGODB_URI: `mongodb://127.0.0.1:${port}/down` },
      noRelease: true,
    });
    try {
      await redis.stop();
      await eventually(async () => expect(down.services.redis.status).not.toBe('ready'));
      const res = await postCal(
        down,
        'any-firm',
        calCreated(calBookingPayload(`bk${rand(6)}`, Date.now() + DAY, [people[0]!])),
        CAL_SECRET,
      );
      expectError(res, 503, 'unavailable');
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await redis.start();
      await down.stop();
    }
  });
});
