// POST /api/v2/{firm}/booking-webhook and GET /api/v2/{firm}/reminders (docs/bookings.md): the
// request authenticates (bearer or X-Cal-Signature-256) and only enqueues; a worker stores the
// reminders in Redis and schedules their sends. Bookings here start days ahead, so nothing is
// mailed: test/bookings/reminder-delivery.test.ts covers the sends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signCalWebhook } from '../../core/integrations/booking/cal-signature.js';
import { reminderField } from '../../core/domain/bookings/reminder-records.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { sendBookingReminder } from '../../core/domain/bookings/reminders.js';
import { bookingEventWaits } from '../../core/domain/deliveries/outbox-bookings.js';
import type { Workers } from '../../workers/runner.js';
import { createFirm, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { eventually } from '../helpers/eventually.js';
import {
  bookingDeliveries,
  bookingEventsApplied,
  bookingJobs,
  calBooking,
  calEvent,
  iso,
  postSigned,
  reminders,
  remindersWhen,
  uid,
  type Attendee,
} from './support.js';

const SECRET = 'whsec_booking_webhook_test_secret';
const OTHER_SECRET = 'whsec_the_other_firms_secret';
const HOUR = 3600_000;

let stack: Stack;
let workers: Workers | undefined;
let firm: Awaited<ReturnType<typeof createFirm>>;
let other: Awaited<ReturnType<typeof createFirm>>;
let unsigned: Awaited<ReturnType<typeof createFirm>>;

const jane: Attendee = { email: 'Jane.Doe@Example.com', name: 'Jane Doe', timeZone: 'Europe/Paris' };
const desk = 'intake@lawfirm.test';

beforeAll(async () => {
  stack = await startStack(); // workers start after the enqueue-only test
  firm = await createFirm(stack, {
    booking_webhook_secret: SECRET,
    notification_emails: [desk],
    timezone: 'America/Chicago',
  });
  other = await createFirm(stack, { booking_webhook_secret: OTHER_SECRET });
  unsigned = await createFirm(stack);
});
afterAll(async () => {
  await workers?.stop();
  await stack?.stop();
});

function startWorkersOnce(): void {
  workers ??= startInProcessWorkers(stack);
}

const send = (body: unknown) => postSigned(stack, firm.slug, body, SECRET);
/** Booking-event jobs: only requests add them (workers add send-reminder jobs meanwhile). */
const jobCount = async () => (await bookingJobs(stack)).filter((j) => j.name === 'booking-event').length;
const created = (bookingUid: string, startMs: number, attendees: Attendee[] = [jane]) =>
  calEvent('BOOKING_CREATED', calBooking(bookingUid, startMs, attendees));

describe('booking webhook: the request only checks and enqueues', () => {
  it('answers {received: true} with one job per event, before any worker runs; a repeat adds none', async () => {
    const event = created(uid(), Date.now() + 3 * 24 * HOUR);
    const bookingUid = (event.payload as { uid: string }).uid;
    const first = await send(event);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ received: true });
    const repeats = await Promise.all([send(event), send(event), send(event)]);
    for (const res of repeats) expect(res.body).toEqual({ received: true });
    // One delivery: its job, or its outbox entry if its add took longer than ENQUEUE_TIMEOUT_MS
    // (a loaded machine); a repeat, queued or kept, has the same job id.
    expect((await bookingDeliveries(stack, bookingUid)).ids).toHaveLength(1);
    // The request adds no other job (no reminder's send before a worker applies the event).
    expect((await bookingJobs(stack)).filter((j) => j.name !== 'booking-event')).toEqual([]);
    // Nothing is stored before a worker applies the event.
    expect(await reminders(firm.client, firm.slug, bookingUid)).toEqual([]);

    startWorkersOnce();
    await remindersWhen(firm.client, firm.slug, bookingUid, (rows) => expect(rows.length).toBe(4));
  });

  it('acknowledges PING, MEETING_STARTED, MEETING_ENDED and unknown triggers, and enqueues nothing', async () => {
    const before = await jobCount();
    const ping = {
      triggerEvent: 'PING',
      createdAt: new Date().toISOString(),
      payload: {
        type: 'Test',
        title: 'Test trigger event',
        startTime: new Date().toISOString(),
        endTime: new Date().toISOString(),
        attendees: [{ email: 'JohnSmith@example.com', name: 'John Smith', timeZone: 'Europe/London' }],
        organizer: { name: 'Cal', email: 'no-reply@cal.com', timeZone: 'Europe/London' },
      },
    };
    for (const body of [
      ping,
      calEvent('MEETING_STARTED', calBooking(uid(), Date.now(), [jane])),
      calEvent('MEETING_ENDED', { bookingId: 1, startTime: 'not a time' }),
      calEvent('RECORDING_READY', { downloadLink: 'https://example.com/r' }),
      calEvent('BOOKING_PAID', {}),
      // Ignored triggers are acknowledged with no payload at all.
      { triggerEvent: 'PING' },
      { triggerEvent: 'MEETING_ENDED', createdAt: new Date().toISOString() },
    ]) {
      const res = await send(body);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ received: true });
    }
    expect((await firm.client.post(`/api/v2/${firm.slug}/booking-webhook`, ping)).body).toEqual({
      received: true,
    });
    expect(await jobCount()).toBe(before);
  });
});

describe('booking webhook body', () => {
  const start = () => Date.now() + 3 * 24 * HOUR;

  it('a booking event without payload.uid or payload.startTime is a 400 naming the field; nothing is enqueued', async () => {
    const before = await jobCount();
    for (const trigger of ['BOOKING_CREATED', 'BOOKING_RESCHEDULED', 'BOOKING_CANCELLED']) {
      const { uid: _u, ...noUid } = calBooking(uid(), start(), [jane]);
      const missingUid = await send(calEvent(trigger, noUid));
      expectError(missingUid, 400, 'invalid_request');
      expect(detailPaths(missingUid)).toEqual(['/payload/uid']);
      const { startTime: _s, ...noStart } = calBooking(uid(), start(), [jane]);
      const missingStart = await send(calEvent(trigger, noStart));
      expectError(missingStart, 400, 'invalid_request');
      expect(detailPaths(missingStart)).toEqual(['/payload/startTime']);
      // A booking trigger needs its payload.
      const noPayload = await send({ triggerEvent: trigger });
      expectError(noPayload, 400, 'invalid_request');
      expect(detailPaths(noPayload)).toEqual(['/payload']);
    }
    const empty = await send({ triggerEvent: 'BOOKING_CREATED', payload: {} });
    expect(detailPaths(empty).sort()).toEqual(['/payload/startTime', '/payload/uid']);
    expect(await jobCount()).toBe(before);
  });

  it('times must be ISO date-times with a zone; malformed ones are a 400', async () => {
    const before = await jobCount();
    const bad: Array<[string, Record<string, unknown>]> = [
      ['/payload/startTime', { startTime: '2030-03-05T10:00:00' }],
      ['/payload/startTime', { startTime: 'tomorrow at 10' }],
      ['/payload/startTime', { startTime: '2030-02-30T10:00:00Z' }],
      ['/payload/startTime', { startTime: '2030-03-05T23:59:60Z' }],
      ['/payload/startTime', { startTime: 1_900_000_000_000 }],
      ['/payload/endTime', { endTime: '2030-03-05' }],
      ['/payload/rescheduleStartTime', { rescheduleUid: uid(), rescheduleStartTime: '2030-03-05 10:00' }],
      ['/payload/rescheduleEndTime', { rescheduleUid: uid(), rescheduleEndTime: 1_900_000_000_000 }],
      ['/payload/uid', { uid: '' }],
      ['/payload/uid', { uid: { $ne: null } }],
    ];
    for (const [path, fields] of bad) {
      const res = await send(calEvent('BOOKING_CREATED', calBooking(uid(), start(), [jane], fields)));
      expectError(res, 400, 'invalid_request');
      expect(detailPaths(res), JSON.stringify(fields)).toEqual([path]);
    }
    expect(detailPaths(await send({ triggerEvent: 'BOOKING_CREATED', payload: 'x' }))).toContain('/payload');
    expect(detailPaths(await send({ payload: {} }))).toContain('/triggerEvent');
    expect(await jobCount()).toBe(before);
  });

  it('accepts "+00:00" as well as "Z", and unknown fields at every level', async () => {
    startWorkersOnce();
    // Within the year ahead that gets reminders (docs/bookings.md#limits).
    const date = new Date(Date.now() + 200 * 24 * HOUR).toISOString().slice(0, 10);
    const startMs = Date.parse(`${date}T15:00:00Z`);
    const a = uid();
    const b = uid();
    const withOffset = calBooking(a, startMs, [jane], {
      startTime: `${date}T15:00:00+00:00`,
      endTime: `${date}T15:30:00.000+00:00`,
      brandNew: { nested: [1, 2] },
    });
    const withZ = calBooking(b, startMs, [jane], { startTime: `${date}T15:00:00.000Z` });
    expect(
      (await send({ ...calEvent('BOOKING_CREATED', withOffset), webhookVersion: '2021-10-20' })).status,
    ).toBe(200);
    expect((await send(calEvent('BOOKING_CREATED', withZ))).status).toBe(200);
    const dueOf = (rows: Array<{ due_at: string }>) => rows.map((r) => r.due_at);
    const rowsA = await remindersWhen(firm.client, firm.slug, a, (rows) => expect(rows.length).toBe(4));
    const rowsB = await remindersWhen(firm.client, firm.slug, b, (rows) => expect(rows.length).toBe(4));
    expect(dueOf(rowsA)).toEqual(dueOf(rowsB));
    expect(dueOf(rowsA)[0]).toBe(new Date(startMs - 24 * HOUR).toISOString());
  });
});

describe('booking webhook authentication', () => {
  const body = () => created(uid(), Date.now() + 3 * 24 * HOUR);
  const flip = (hex: string) => hex.slice(0, -1) + (hex.endsWith('0') ? '1' : '0');

  it('accepts a valid X-Cal-Signature-256 (lower or upper case hex)', async () => {
    expect((await send(body())).status).toBe(200);
    const event = body();
    const raw = JSON.stringify(event);
    const upper = await postSigned(stack, firm.slug, event, SECRET, {
      signature: signCalWebhook(raw, SECRET).toUpperCase(),
    });
    expect(upper.status).toBe(200);
  });

  it('refuses a wrong secret, another firm’s secret, a tampered body, a flipped digit, garbage and no credentials (401), changing nothing', async () => {
    const event = body();
    const raw = JSON.stringify(event);
    const tampered = raw.replace('Initial consultation', 'Initial consultatioN');
    const attempts = [
      postSigned(stack, firm.slug, event, 'not-the-secret'),
      postSigned(stack, firm.slug, event, OTHER_SECRET),
      postSigned(stack, firm.slug, event, SECRET, { raw: tampered, signature: signCalWebhook(raw, SECRET) }),
      postSigned(stack, firm.slug, event, SECRET, { raw: `${raw} `, signature: signCalWebhook(raw, SECRET) }),
      postSigned(stack, firm.slug, event, SECRET, { signature: flip(signCalWebhook(raw, SECRET)) }),
      postSigned(stack, firm.slug, event, SECRET, { signature: 'no-secret-provided' }),
      postSigned(stack, firm.slug, event, SECRET, { signature: `sha256=${signCalWebhook(raw, SECRET)}` }),
      stack.api.post(`/api/v2/${firm.slug}/booking-webhook`, event),
      // A Retell-style signature is not Cal.com's.
      stack.api.request('POST', `/api/v2/${firm.slug}/booking-webhook`, {
        rawBody: raw,
        headers: {
          'Content-Type': 'application/json',
          'x-retell-signature': `v=${Date.now()},d=${'0'.repeat(64)}`,
        },
      }),
    ];
    for (const res of await Promise.all(attempts)) {
      expectError(res, 401, 'unauthorized');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
    const bookingUid = (event.payload as { uid: string }).uid;
    expect((await bookingDeliveries(stack, bookingUid)).ids).toEqual([]);
    expect(await reminders(firm.client, firm.slug, bookingUid)).toEqual([]);
  });

  it('Cal.com signs no timestamp: a replayed (identical) delivery is accepted and changes nothing', async () => {
    startWorkersOnce();
    const event = body();
    const bookingUid = (event.payload as { uid: string }).uid;
    expect((await send(event)).status).toBe(200);
    const rows = await remindersWhen(firm.client, firm.slug, bookingUid, (r) => expect(r.length).toBe(4));
    const jobs = await jobCount();
    expect((await send(event)).status).toBe(200);
    await eventuallyNoBookingEventsPending();
    expect(await jobCount()).toBe(jobs);
    expect(await reminders(firm.client, firm.slug, bookingUid)).toEqual(rows);
  });

  it('a signature for a firm without booking_webhook_secret is 401', async () => {
    const event = body();
    expectError(await postSigned(stack, unsigned.slug, event, SECRET), 401, 'unauthorized');
  });

  it('bearer: the firm’s own token and the platform key pass; another firm’s token is 403; a bad token 401', async () => {
    const url = `/api/v2/${firm.slug}/booking-webhook`;
    expect((await firm.client.post(url, body())).body).toEqual({ received: true });
    expect((await stack.admin.post(url, body())).body).toEqual({ received: true });
    expectError(await other.client.post(url, body()), 403, 'forbidden');
    expectError(await stack.api.withToken('isk_not_a_key').post(url, body()), 401, 'unauthorized');
    // A bearer header wins over a signature: a bad token is not rescued by a good signature.
    const event = body();
    const raw = JSON.stringify(event);
    const both = await stack.api.withToken('isk_not_a_key').request('POST', url, {
      rawBody: raw,
      headers: { 'Content-Type': 'application/json', 'X-Cal-Signature-256': signCalWebhook(raw, SECRET) },
    });
    expectError(both, 401, 'unauthorized');
  });

  it('an unknown firm is 404 firm_not_found with a bearer token; with only a signature, 401 as a wrong one', async () => {
    expectError(
      await stack.admin.post('/api/v2/no-such-firm/booking-webhook', body()),
      404,
      'firm_not_found',
    );
    expectError(await postSigned(stack, 'no-such-firm', body(), SECRET), 401, 'unauthorized');
  });
});

describe('reminders in Redis', () => {
  beforeAll(startWorkersOnce);

  const expectedRows = (bookingUid: string, startMs: number, to: string[], offsets = [1440, 60]) =>
    offsets
      .map((o) => startMs - o * 60_000)
      .sort((x, y) => x - y)
      .flatMap((due) =>
        [...to].sort().map((address) => ({
          booking_uid: bookingUid,
          due_at: iso(due),
          channel: 'email',
          to: address,
          status: 'scheduled',
        })),
      );

  it('BOOKING_CREATED stores 2 reminders per recipient (attendees and the firm) due at start − offset, with a delayed send each', async () => {
    const bookingUid = uid();
    const startMs = Date.now() + 3 * 24 * HOUR + 17_000;
    const kim: Attendee = { email: 'kim@example.org', name: 'Kim Park', timeZone: 'Asia/Seoul' };
    expect((await send(created(bookingUid, startMs, [jane, kim]))).status).toBe(200);
    const rows = await remindersWhen(firm.client, firm.slug, bookingUid, (r) => expect(r.length).toBe(6));
    const startSecond = Math.floor(startMs / 1000) * 1000; // Cal.com's times have whole seconds
    expect(rows).toEqual(
      expectedRows(bookingUid, startSecond, ['jane.doe@example.com', 'kim@example.org', desk]),
    );
    expect(await reminders(stack.admin, firm.slug, bookingUid)).toEqual(rows);

    // The documented layout: one hash per booking, expiring after the booking.
    const key = redisKeys(stack.config).bookingReminders(firm.slug, bookingUid);
    const fields = await stack.services.redis.hkeys(key);
    expect(fields.sort()).toEqual(
      [
        'booking',
        ...[1440, 60].flatMap((o) =>
          ['jane.doe@example.com', 'kim@example.org', desk].map((to) => `r|${startSecond}|${o}|${to}`),
        ),
      ].sort(),
    );
    const ttl = await stack.services.redis.pttl(key);
    expect(ttl).toBeGreaterThan(startSecond - Date.now());
    expect(ttl).toBeLessThan(startSecond - Date.now() + 40 * 24 * HOUR);

    await eventually(async () => {
      const sends = (await bookingJobs(stack, ['delayed'])).filter(
        (j) => j.name === 'send-reminder' && j.data.booking_uid === bookingUid,
      );
      expect(sends.map((j) => iso(j.data.due_at)).sort()).toEqual(rows.map((r) => r.due_at).sort());
      for (const job of sends) expect(job.opts.delay).toBeGreaterThan(0);
    });
  });

  it('offsets already past when the event arrives are skipped', async () => {
    const bookingUid = uid();
    const startMs = Date.now() + 2 * HOUR; // 24 h before is past, 1 h before is not
    await send(created(bookingUid, startMs));
    const rows = await remindersWhen(firm.client, firm.slug, bookingUid, (r) => expect(r.length).toBe(2));
    const startSecond = Math.floor(startMs / 1000) * 1000;
    expect(rows).toEqual(expectedRows(bookingUid, startSecond, ['jane.doe@example.com', desk], [60]));

    // Every offset past: the booking is recorded (a later cancel still finds it), no reminder is.
    const past = uid();
    await send(created(past, Date.now() + 10 * 60_000));
    const key = redisKeys(stack.config).bookingReminders(firm.slug, past);
    await eventually(async () => expect(await stack.services.redis.hkeys(key)).toEqual(['booking']));
    expect(await reminders(firm.client, firm.slug, past)).toEqual([]);
  });

  it('BOOKING_RESCHEDULED cancels the old booking’s reminders and stores the new one’s', async () => {
    const oldUid = uid();
    const newUid = uid();
    const oldStart = Date.now() + 3 * 24 * HOUR;
    const newStart = oldStart + 24 * HOUR;
    await send(created(oldUid, oldStart));
    await remindersWhen(firm.client, firm.slug, oldUid, (r) => expect(r.length).toBe(4));
    const rescheduled = calEvent(
      'BOOKING_RESCHEDULED',
      calBooking(newUid, newStart, [jane], {
        rescheduleUid: oldUid,
        rescheduleStartTime: iso(oldStart),
        rescheduledBy: 'jane.doe@example.com',
      }),
    );
    expect((await send(rescheduled)).status).toBe(200);
    const fresh = await remindersWhen(firm.client, firm.slug, newUid, (r) => expect(r.length).toBe(4));
    expect(fresh).toEqual(
      expectedRows(newUid, Math.floor(newStart / 1000) * 1000, ['jane.doe@example.com', desk]),
    );
    const old = await reminders(firm.client, firm.slug, oldUid);
    expect(old.map((r) => r.status)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);

    // The old booking's CREATED delivered late (or again) does not bring its reminders back.
    await send(created(oldUid, oldStart));
    await eventuallyNoBookingEventsPending();
    expect(await reminders(firm.client, firm.slug, oldUid)).toEqual(old);
  });

  it('BOOKING_CANCELLED cancels them; CREATED delivered again afterwards changes nothing (the cancel wins)', async () => {
    const bookingUid = uid();
    const startMs = Date.now() + 3 * 24 * HOUR;
    const createdEvent = created(bookingUid, startMs);
    await send(createdEvent);
    await remindersWhen(firm.client, firm.slug, bookingUid, (r) => expect(r.length).toBe(4));
    await send(
      calEvent(
        'BOOKING_CANCELLED',
        calBooking(bookingUid, startMs, [jane], {
          status: 'CANCELLED',
          cancellationReason: 'no longer needed',
        }),
      ),
    );
    const cancelled = await remindersWhen(firm.client, firm.slug, bookingUid, (r) =>
      expect(r.map((x) => x.status)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']),
    );
    await send(createdEvent); // the same delivery again
    await send(created(bookingUid, startMs)); // and a fresh CREATED for it
    await send(created(bookingUid, startMs + HOUR)); // even at another time
    await eventuallyNoBookingEventsPending();
    expect(await reminders(firm.client, firm.slug, bookingUid)).toEqual(cancelled);
  });

  it('a CANCELLED that arrives before its CREATED still wins', async () => {
    const bookingUid = uid();
    const startMs = Date.now() + 3 * 24 * HOUR;
    await send(
      calEvent('BOOKING_CANCELLED', calBooking(bookingUid, startMs, [jane], { status: 'CANCELLED' })),
    );
    await eventuallyNoBookingEventsPending();
    await send(created(bookingUid, startMs));
    await eventuallyNoBookingEventsPending();
    expect(await reminders(firm.client, firm.slug, bookingUid)).toEqual([]);
  });

  it('a duplicated delivery, concurrent and later, changes nothing: one event job, one send job per reminder', async () => {
    const bookingUid = uid();
    const event = created(bookingUid, Date.now() + 3 * 24 * HOUR);
    await Promise.all(Array.from({ length: 10 }, () => send(event)));
    const rows = await remindersWhen(firm.client, firm.slug, bookingUid, (r) => expect(r.length).toBe(4));
    for (let i = 0; i < 5; i++) expect((await send(event)).status).toBe(200);
    // Even re-serialized (another delivery id), the same event stores nothing new.
    expect((await send(JSON.parse(JSON.stringify({ payload: event.payload, ...event })))).status).toBe(200);
    await eventuallyNoBookingEventsPending();
    expect(await reminders(firm.client, firm.slug, bookingUid)).toEqual(rows);
    const jobs = (await bookingJobs(stack)).filter(
      (j) => j.data.uid === bookingUid || j.data.booking_uid === bookingUid,
    );
    expect(jobs.filter((j) => j.name === 'send-reminder').length).toBe(4);
    expect(jobs.filter((j) => j.name === 'booking-event').length).toBe(2);
  });

  it('an attendee time zone Cal.com sends that is not a zone falls back to the firm’s; bad addresses are skipped', async () => {
    const bookingUid = uid();
    await send(
      created(bookingUid, Date.now() + 3 * 24 * HOUR, [
        { email: 'not-an-address', name: 'Nobody', timeZone: 'Europe/Paris' },
        { email: 'lee@example.com', name: 'Lee', timeZone: 'Mars/Olympus_Mons' },
      ]),
    );
    const rows = await remindersWhen(firm.client, firm.slug, bookingUid, (r) => expect(r.length).toBe(4));
    expect([...new Set(rows.map((r) => r.to))].sort()).toEqual([desk, 'lee@example.com']);
    const raw = await stack.services.redis.hgetall(
      redisKeys(stack.config).bookingReminders(firm.slug, bookingUid),
    );
    const lee = Object.entries(raw).find(([f]) => f.endsWith('|lee@example.com'))!;
    expect(JSON.parse(lee[1]).time_zone).toBe('America/Chicago');
  });
});

describe('without SMTP_URL', () => {
  it('a due reminder cannot be mailed: it is recorded failed, with the reason, not left scheduled', async () => {
    startWorkersOnce();
    expect(stack.services.mailer).toBeNull();
    const bookingUid = uid();
    const startMs = Math.floor((Date.now() + 3 * 24 * HOUR) / 1000) * 1000;
    await send(created(bookingUid, startMs));
    await remindersWhen(firm.client, firm.slug, bookingUid, (r) => expect(r.length).toBe(4));
    // The booking's event applied to the end (its reminders are listed a moment before its job
    // ends): until then a reminder waits for it (docs/webhooks.md#redis-outages).
    await eventually(async () =>
      expect(await bookingEventWaits(stack.services, firm.slug, bookingUid)).toBe(false),
    );
    const job = {
      firm: firm.slug,
      booking_uid: bookingUid,
      reminder: reminderField(startMs, 60, desk),
      due_at: startMs - HOUR,
    };
    expect(await sendBookingReminder(stack.services, job, { lastAttempt: false })).toEqual({
      outcome: 'failed',
    });
    const rows = await reminders(firm.client, firm.slug, bookingUid);
    expect(rows.find((r) => r.to === desk && r.due_at === iso(startMs - HOUR))?.status).toBe('failed');
    const raw = await stack.services.redis.hget(
      redisKeys(stack.config).bookingReminders(firm.slug, bookingUid),
      reminderField(startMs, 60, desk),
    );
    expect(JSON.parse(raw!).last_error).toMatch(/SMTP_URL/);
  });
});

describe('limits', () => {
  it('the job keeps a bounded snapshot of the booking, not the body', async () => {
    const bookingUid = uid();
    const event = calEvent(
      'BOOKING_CREATED',
      calBooking(bookingUid, Date.now() + 3 * 24 * HOUR, [jane], {
        description: 'd'.repeat(500_000),
        responses: { notes: { value: 'n'.repeat(500_000) } },
        title: `${'t'.repeat(3000)}`,
      }),
    );
    expect((await send(event)).status).toBe(200);
    // Its job's data, or its outbox entry's (an add slower than ENQUEUE_TIMEOUT_MS): the same snapshot.
    const { ids, data } = await bookingDeliveries(stack, bookingUid);
    expect(ids).toHaveLength(1);
    const snapshot = data.get(ids[0]!);
    expect(JSON.stringify(snapshot).length).toBeLessThan(3000);
    expect(snapshot.title.length).toBeLessThanOrEqual(200);
  });

  it('the per-firm webhook rate limit applies (429 with Retry-After), to signed deliveries too', async () => {
    const limited = await startStack({ env: { WEBHOOK_RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const a = await createFirm(limited, { booking_webhook_secret: SECRET });
      const b = await createFirm(limited, { booking_webhook_secret: SECRET });
      const post = (slug: string) =>
        postSigned(limited, slug, created(uid(), Date.now() + 3 * 24 * HOUR), SECRET);
      for (let i = 0; i < 3; i++) expect((await post(a.slug)).status).toBe(200);
      const refused = await post(a.slug);
      expectError(refused, 429, 'rate_limited');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await post(b.slug)).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });
});

describe('GET /api/v2/{firm}/reminders', () => {
  it('needs a token of the firm: another firm’s is 403, no token 401, an unknown firm 404', async () => {
    const path = `/api/v2/${firm.slug}/reminders?bookingUid=${uid()}`;
    expectError(await other.client.get(path), 403, 'forbidden');
    expectError(await stack.api.get(path), 401, 'unauthorized');
    expectError(await stack.admin.get(`/api/v2/no-such-firm/reminders?bookingUid=x`), 404, 'firm_not_found');
  });

  it('requires bookingUid (400); an unknown booking has no reminders', async () => {
    const missing = await firm.client.get(`/api/v2/${firm.slug}/reminders`);
    expectError(missing, 400, 'invalid_request');
    expect(detailPaths(missing)).toContain('/bookingUid');
    expect(await reminders(firm.client, firm.slug, 'never-heard-of-it')).toEqual([]);
  });

  it('one firm never sees another firm’s booking of the same uid', async () => {
    startWorkersOnce();
    const shared = uid();
    await send(created(shared, Date.now() + 3 * 24 * HOUR));
    await remindersWhen(firm.client, firm.slug, shared, (r) => expect(r.length).toBe(4));
    expect(await reminders(other.client, other.slug, shared)).toEqual([]);
  });
});

/** No booking event waits or runs, in the queue or in the webhook outbox (bookingEventsApplied). */
const eventuallyNoBookingEventsPending = () => bookingEventsApplied(stack);
