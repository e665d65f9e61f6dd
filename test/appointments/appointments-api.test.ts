// GET /api/appointments/availability, POST /api/appointments and the agent tools
// (docs/appointments.md) against a local Cal.com speaking API v2 (test/fakes/calcom-server.ts),
// with workers, so that Cal.com's BOOKING_CREATED for a booking made here reaches the reminders.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RETELL_SIGNATURE_HEADER,
  signRetellWebhook,
} from '../../core/integrations/voice/webhook-signature.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventsOf } from '../helpers/events.js';
import { expectError } from '../helpers/expect-error.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { reminders, remindersWhen } from '../bookings/support.js';
import { eventually } from '../helpers/eventually.js';
import { ongoingCall } from '../fakes/retell-fixtures.js';

const API_KEY = 'cal_live_test_key_0123456789';
const EVENT_TYPE = 4242;
const BOOKING_SECRET = 'whsec_appointments_booking_secret';
const VOICE_SECRET = 'voice_secret_for_tools_0123';
const DAY = 24 * 3600_000;

let stack: Stack;
let cal: FakeCalcom;
let firm: Awaited<ReturnType<typeof createFirm>>;
let other: Awaited<ReturnType<typeof createFirm>>;
let bare: Awaited<ReturnType<typeof createFirm>>;
const slots = dailySlots(Date.now(), 10, 4);

const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const person = { name: 'Jane Roe', email: 'jane.roe@example.com', timeZone: 'America/Chicago' };

beforeAll(async () => {
  stack = await startStack({ workers: true });
  cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
  const booking = { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url };
  firm = await createFirm(stack, {
    booking,
    booking_webhook_secret: BOOKING_SECRET,
    voice_webhook_secret: VOICE_SECRET,
    reminder_offsets_minutes: [1440, 60],
  });
  other = await createFirm(stack, { booking });
  bare = await createFirm(stack);
  cal.setWebhook({ url: `${stack.baseUrl}/api/v2/${firm.slug}/booking-webhook`, secret: BOOKING_SECRET });
});
afterAll(async () => {
  await cal?.stop();
  await stack?.stop();
});

const availability = (client = firm.client, q: Record<string, string> = {}) =>
  client.get(
    `/api/appointments/availability?${new URLSearchParams({
      firmSlug: firm.slug,
      start: isoDate(slots[0]!),
      end: isoDate(slots[0]! + 6 * DAY),
      timeZone: 'America/Chicago',
      ...q,
    })}`,
  );

const book = (start: number | string, key?: string, extra: Record<string, unknown> = {}) =>
  firm.client.post(
    '/api/appointments',
    {
      firmSlug: firm.slug,
      start: typeof start === 'number' ? new Date(start).toISOString() : start,
      attendee: person,
      ...extra,
    },
    key === undefined ? undefined : { 'Idempotency-Key': key },
  );

describe('the booking setting', () => {
  it('keeps api_key write-only and asks for it again when base_url changes', async () => {
    const read = await firm.client.get(`/api/firms/${firm.slug}`);
    expect(read.body.settings.booking).toEqual({
      provider: 'calcom',
      api_key: '********',
      event_type_id: EVENT_TYPE,
      base_url: cal.url,
    });
    expect(read.text).not.toContain(API_KEY);
    const moved = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: {
        booking: {
          provider: 'calcom',
          api_key: '********',
          event_type_id: EVENT_TYPE,
          base_url: 'http://127.0.0.1:1',
        },
      },
    });
    expect(expectError(moved, 400, 'invalid_request').map((d) => d.path)).toEqual([
      '/settings/booking/api_key',
    ]);
    const kept = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: {
        booking: { provider: 'calcom', api_key: '********', event_type_id: EVENT_TYPE, base_url: cal.url },
      },
    });
    expect(kept.status).toBe(200);
    const masked = await bare.client.patch(`/api/firms/${bare.slug}`, {
      settings: { booking: { provider: 'calcom', api_key: '********', event_type_id: 1 } },
    });
    expectError(masked, 400, 'invalid_request');
  });
});

describe('availability', () => {
  it("answers Cal.com's free slots in the time zone asked for, with their offset, and caches them", async () => {
    const before = cal.requests.filter((r) => r.path === '/v2/slots').length;
    const res = await availability();
    expect(res.status).toBe(200);
    const starts = (res.body.slots as Array<{ start: string }>).map((s) => s.start);
    expect(starts.length).toBe(7 * 4);
    for (const s of starts) expect(s).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}-0[56]:00$/);
    expect(starts.map(Date.parse)).toEqual(slots.slice(0, 28));
    expect((await availability()).body).toEqual(res.body);
    expect(cal.requests.filter((r) => r.path === '/v2/slots').length).toBe(before + 1);
    expect(cal.requests.at(-1)?.version).toBe('2024-09-04');
  });

  it('refuses more than 14 days, bad dates and time zones (400), another firm (403), no provider (409)', async () => {
    const long = await availability(firm.client, { end: isoDate(slots[0]! + 14 * DAY) });
    expect(expectError(long, 400, 'invalid_request').map((d) => d.path)).toEqual(['/end']);
    expect((await availability(firm.client, { end: isoDate(slots[0]! + 13 * DAY) })).status).toBe(200);
    expectError(await availability(firm.client, { start: '2026-02-30' }), 400, 'invalid_request');
    expectError(await availability(firm.client, { start: 'tomorrow' }), 400, 'invalid_request');
    // Found by the fuzzer: a date of the right shape that is no date at all was a 500.
    const zero = await availability(firm.client, { start: '0000-00-00', end: '0000-00-00' });
    expect(expectError(zero, 400, 'invalid_request').map((d) => d.path)).toEqual(['/start', '/end']);
    // The last day of year 9999: the day after it, where its end is asked for, is no YYYY-MM-DD.
    const last = await availability(firm.client, { start: '9999-12-31', end: '9999-12-31' });
    expect(expectError(last, 400, 'invalid_request').map((d) => d.path)).toEqual(['/end']);
    expectError(await availability(firm.client, { timeZone: 'Mars/Olympus' }), 400, 'invalid_request');
    expectError(await availability(firm.client, { end: isoDate(slots[0]! - DAY) }), 400, 'invalid_request');
    expectError(await availability(other.client), 403, 'forbidden');
    expectError(await availability(bare.client, { firmSlug: bare.slug }), 409, 'booking_not_configured');
  });
});

describe("Cal.com's refusals", () => {
  it('a wrong API key is a 502 booking_provider_error that says to check it, and books nothing', async () => {
    const wrong = await createFirm(stack, {
      booking: {
        provider: 'calcom',
        api_key: 'cal_live_wrong',
        event_type_id: EVENT_TYPE,
        base_url: cal.url,
      },
    });
    const before = cal.bookings.length;
    const slotsRes = await availability(wrong.client, { firmSlug: wrong.slug });
    expect(expectError(slotsRes, 502, 'booking_provider_error')).toEqual([]);
    expect(slotsRes.body.error.message).toContain('settings.booking.api_key');
    const booked = await wrong.client.post('/api/appointments', {
      firmSlug: wrong.slug,
      start: new Date(slots[27]!).toISOString(),
      attendee: person,
    });
    expectError(booked, 502, 'booking_provider_error');
    expect(cal.bookings.length).toBe(before);
  });

  it("Cal.com's rate limiter (429) is a 503 with the wait Cal.com asked for as Retry-After, and books nothing", async () => {
    const limited = await createFirm(stack, {
      booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
    });
    const ask = (timeZone: string) => availability(limited.client, { firmSlug: limited.slug, timeZone });
    // Its Retry-After.
    cal.limitRequests(1, { 'Retry-After': '17' });
    const byRetryAfter = await ask('America/Chicago');
    expectError(byRetryAfter, 503, 'unavailable');
    expect(byRetryAfter.headers.get('retry-after')).toBe('17');
    expect(byRetryAfter.body.error.message).toContain('limiting');
    // No Retry-After: its throttler's reset, the Unix time its window ends.
    const resetAt = Math.floor(Date.now() / 1000) + 42;
    cal.limitRequests(1, {
      'X-RateLimit-Limit-Default': '120',
      'X-RateLimit-Remaining-Default': '0',
      'X-RateLimit-Reset-Default': String(resetAt),
    });
    const byReset = await ask('Europe/Berlin');
    expectError(byReset, 503, 'unavailable');
    expect(Number(byReset.headers.get('retry-after'))).toBeGreaterThanOrEqual(40);
    expect(Number(byReset.headers.get('retry-after'))).toBeLessThanOrEqual(42);
    // Neither: the limiter's window of 60 s. A booking refused so books nothing.
    const before = cal.bookings.length;
    cal.limitRequests(1, {});
    const booked = await limited.client.post('/api/appointments', {
      firmSlug: limited.slug,
      start: new Date(slots[28]!).toISOString(),
      attendee: person,
    });
    expectError(booked, 503, 'unavailable');
    expect(booked.headers.get('retry-after')).toBe('60');
    expect(cal.bookings.length).toBe(before);
    // Once the limiter lets requests through, the same firm is answered.
    expect((await ask('Asia/Tokyo')).status).toBe(200);
  });
});

describe('booking', () => {
  it('books through Cal.com once per Idempotency-Key, and the lead shows it', async () => {
    const lead = await firm.client.post('/api/leads', {
      firmSlug: firm.slug,
      first_name: 'Jane',
      email: person.email,
    });
    expect(lead.status).toBe(200);
    const start = slots[1]!;
    const [first, again] = await Promise.all([
      book(start, 'book-once-1', { lead_id: lead.body.id }),
      book(start, 'book-once-1', { lead_id: lead.body.id }),
    ]);
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(first.body).toMatchObject({ start: new Date(start).toISOString(), status: 'booked' });
    expect(Object.keys(first.body).sort()).toEqual(['booking_uid', 'end', 'start', 'status']);
    const later = await book(start, 'book-once-1', { lead_id: lead.body.id });
    expect(later.body).toEqual(first.body);
    expect(later.headers.get('idempotent-replayed')).toBe('true');
    expect(cal.bookings.filter((b) => b.uid === first.body.booking_uid)).toHaveLength(1);
    expect(cal.bookings.filter((b) => Date.parse(b.start) === start)).toHaveLength(1);
    expect(cal.requests.filter((r) => r.method === 'POST').every((r) => r.version === '2024-08-13')).toBe(
      true,
    );
    const shown = await firm.client.get(`/api/leads/${lead.body.id}`);
    expect(shown.body.appointment).toEqual({
      booking_uid: first.body.booking_uid,
      start: first.body.start,
      status: 'booked',
    });
    // The lead gone since (as a store cleaned by hand would leave it): a repeat with the key still
    // answers the booking it made, looked up before the lead is checked; without the key, 404.
    await stack.services.mongo.db.collection('leads').deleteOne({ _id: lead.body.id });
    const afterGone = await book(start, 'book-once-1', { lead_id: lead.body.id });
    expect({ status: afterGone.status, body: afterGone.body }).toEqual({ status: 200, body: first.body });
    expectError(await book(start, undefined, { lead_id: lead.body.id }), 404, 'lead_not_found');
  });

  it('our own booking for a lead records appointment.booked, once, with no webhook from Cal.com', async () => {
    cal.setWebhook(null);
    try {
      const lead = await firm.client.post('/api/leads', {
        firmSlug: firm.slug,
        first_name: 'Quinn',
        email: 'quinn@example.com',
      });
      const start = slots[33]!;
      const booked = await book(start, 'book-event-1', { lead_id: lead.body.id });
      expect(booked.status).toBe(200);
      expect((await book(start, 'book-event-1', { lead_id: lead.body.id })).body).toEqual(booked.body);
      const events = await eventsOf(stack, firm.slug, lead.body.id);
      expect(events.map((e) => e.type)).toEqual(['lead.created', 'appointment.booked']);
      expect(events[1]!.data).toMatchObject({
        lead_id: lead.body.id,
        booking_uid: booked.body.booking_uid,
        start: new Date(start).toISOString(),
        status: 'booked',
        lead: { id: lead.body.id, appointment: { booking_uid: booked.body.booking_uid, status: 'booked' } },
      });
    } finally {
      cal.setWebhook({ url: `${stack.baseUrl}/api/v2/${firm.slug}/booking-webhook`, secret: BOOKING_SECRET });
    }
  });

  it('a replay answers the booking from its record with the documented fields only', async () => {
    const start = slots[2]!;
    const first = await book(start, 'replay-shape-1');
    expect(first.status).toBe(200);
    // What else a record's stored result may come to hold stays in the record.
    const stored = await stack.services.mongo.db
      .collection('appointments')
      .updateOne(
        { firm: firm.slug, start: new Date(start).toISOString() },
        { $set: { 'booking.result.provider_payload': 'internal-provider-payload' } },
      );
    expect(stored.modifiedCount).toBe(1);
    const replayed = await book(start, 'replay-shape-1');
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(first.body);
    expect(replayed.text).not.toContain('internal-provider-payload');
  });

  it("after Cal.com's BOOKING_CREATED for it, exactly one set of reminders, however often it is sent", async () => {
    const res = await book(slots[24]!, 'reminders-1');
    expect(res.status).toBe(200);
    await cal.settled();
    expect(cal.deliveries.filter((d) => d.uid === res.body.booking_uid)).toEqual([
      { trigger: 'BOOKING_CREATED', uid: res.body.booking_uid, status: 200 },
    ]);
    const rows = await remindersWhen(firm.client, firm.slug, res.body.booking_uid, (r) =>
      expect(r).toHaveLength(2),
    );
    expect(rows.map((r) => r.to)).toEqual([person.email, person.email]);
    expect(rows.map((r) => Date.parse(r.due_at))).toEqual([slots[24]! - DAY, slots[24]! - 3600_000]);
    // Cal.com sends once; a repeat (a replay, a second webhook) must still change nothing.
    const booking = cal.bookings.find((b) => b.uid === res.body.booking_uid)!;
    cal.bookings.splice(cal.bookings.indexOf(booking), 1);
    cal.take(Date.parse(booking.start));
    const { calBookingPayload, calCreated } = await import('../fakes/calcom-fixtures.js');
    const { postSigned } = await import('../bookings/support.js');
    const body = calCreated(calBookingPayload(booking.uid, Date.parse(booking.start), [person]));
    expect((await postSigned(stack, firm.slug, body, BOOKING_SECRET)).status).toBe(200);
    // A repeat is no new job (the job id derives from the event), or one that changes nothing.
    await eventually(async () =>
      expect(await stack.services.queues.bookings.getJobCounts('waiting', 'active', 'prioritized')).toEqual({
        waiting: 0,
        active: 0,
        prioritized: 0,
      }),
    );
    expect(await reminders(firm.client, firm.slug, res.body.booking_uid)).toEqual(rows);
  });

  it('two requests racing for the last free slot of a day: one booking, one 409 slot_unavailable with the next free slots', async () => {
    const start = slots[7]!; // the 4th and last slot of its day
    const [a, b] = await Promise.all([book(start, 'race-a'), book(start, 'race-b')]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([200, 409]);
    const lost = a.status === 409 ? a : b;
    const details = expectError(lost, 409, 'slot_unavailable');
    expect(details.length).toBe(5);
    for (const d of details) {
      expect(d.path).toBe('/start');
      expect(Date.parse(d.message)).toBeGreaterThan(start);
      expect(d.message).toMatch(/-0[56]:00$/); // in the attendee's time zone
    }
    expect(details.map((d) => Date.parse(d.message))).toEqual(slots.slice(8, 13));
    expect(cal.bookings.filter((x) => Date.parse(x.start) === start)).toHaveLength(1);
  });

  it('a slot taken between availability and booking is a 409 whose alternatives leave it out', async () => {
    const start = slots[9]!;
    cal.take(slots[10]!);
    cal.take(start);
    const details = expectError(await book(start), 409, 'slot_unavailable');
    expect(details.map((d) => Date.parse(d.message))).toEqual([slots[11]!, ...slots.slice(12, 16)]);
  });

  it('an answer lost after Cal.com booked: the retry finds that booking instead of booking twice', async () => {
    const start = slots[16]!;
    cal.loseNextAnswer();
    const res = await book(start, 'lost-answer-1');
    expect(res.status).toBe(200);
    const mine = cal.bookings.filter((b) => Date.parse(b.start) === start);
    expect(mine).toHaveLength(1);
    expect(res.body.booking_uid).toBe(mine[0]!.uid);
    expect((await book(start, 'lost-answer-1')).body).toEqual(res.body);
  });

  it('an answer lost and Cal.com unreachable to ask: 502, and the retry with the key finds the booking', async () => {
    const start = slots[17]!;
    cal.loseNextAnswer();
    cal.failSearches(1);
    const first = await book(start, 'lost-answer-2');
    expectError(first, 502, 'booking_provider_error');
    expect(cal.bookings.filter((b) => Date.parse(b.start) === start)).toHaveLength(1);
    const retry = await book(start, 'lost-answer-2');
    expect(retry.status).toBe(200);
    expect(retry.body.booking_uid).toBe(cal.bookings.find((b) => Date.parse(b.start) === start)!.uid);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(cal.bookings.filter((b) => Date.parse(b.start) === start)).toHaveLength(1);
  });

  it('without a key, a lost answer is still one booking: the request asks Cal.com before answering', async () => {
    const start = slots[18]!;
    cal.loseNextAnswer();
    const res = await book(start);
    expect(res.status).toBe(200);
    expect(cal.bookings.filter((b) => Date.parse(b.start) === start).map((b) => b.uid)).toEqual([
      res.body.booking_uid,
    ]);
  });

  it('answers every malformed body 400 in the error shape, another firm 403, a foreign lead 404, no provider 409', async () => {
    const good = { firmSlug: firm.slug, start: new Date(slots[20]!).toISOString(), attendee: person };
    const bad: Array<[unknown, string]> = [
      [{ ...good, start: undefined }, '/start'],
      [{ ...good, start: 'next tuesday' }, '/start'],
      [{ ...good, start: '2020-01-01T10:00:00Z' }, '/start'],
      [{ ...good, attendee: undefined }, '/attendee'],
      [{ ...good, attendee: 'Jane' }, '/attendee'],
      [{ ...good, attendee: { ...person, email: 'nope' } }, '/attendee/email'],
      [{ ...good, attendee: { ...person, timeZone: 'Nowhere/Land' } }, '/attendee/timeZone'],
      [{ ...good, attendee: { ...person, phone: '12' } }, '/attendee/phone'],
      [{ ...good, attendee: { ...person, extra: 1 } }, '/attendee/extra'],
      [{ ...good, attendee: { email: person.email, timeZone: person.timeZone } }, '/attendee/name'],
      [{ ...good, firmSlug: { $ne: null } }, '/firmSlug'],
      [{ ...good, lead_id: 7 }, '/lead_id'],
      [{ ...good, notes: 'x'.repeat(5001) }, '/notes'],
      [{ ...good, start_time: good.start }, '/start_time'],
      [[good], ''],
    ];
    for (const [body, path] of bad) {
      const res = await firm.client.post('/api/appointments', body);
      const details = expectError(res, 400, 'invalid_request');
      if (path !== '') expect(details.map((d) => d.path)).toContain(path);
    }
    const bytes = await firm.client.request('POST', '/api/appointments', {
      rawBody: '{"firmSlug":',
      headers: { 'Content-Type': 'application/json' },
    });
    expectError(bytes, 400, /invalid/);
    expectError(
      await firm.client.post('/api/appointments', good, { 'Idempotency-Key': 'a b' }),
      400,
      'invalid_request',
    );
    expectError(await other.client.post('/api/appointments', good), 403, 'forbidden');
    const foreign = await other.client.post('/api/leads', {
      firmSlug: other.slug,
      first_name: 'X',
      email: 'x@example.com',
    });
    expectError(
      await firm.client.post('/api/appointments', { ...good, lead_id: foreign.body.id }),
      404,
      'lead_not_found',
    );
    expectError(
      await bare.client.post('/api/appointments', { ...good, firmSlug: bare.slug }),
      409,
      'booking_not_configured',
    );
    expect(cal.bookings.filter((b) => Date.parse(b.start) === slots[20]!)).toHaveLength(0);
  });
});

describe('agent tools (Retell custom functions)', () => {
  // The call object as Retell sends it mid-call (retell-sdk's PhoneCallResponse).
  const callObject = (callId: string) =>
    ongoingCall({
      callId,
      direction: 'inbound',
      fromNumber: '+14155552222',
      toNumber: '+14155550100',
      dynamicVariables: { time_zone: 'America/Los_Angeles' },
    });
  const tool = (
    name: string,
    args: Record<string, unknown>,
    callId = 'call_tool_1',
    options: { secret?: string; slug?: string } = {},
  ) => {
    const raw = JSON.stringify({ name, call: callObject(callId), args });
    return stack.api.request('POST', `/api/v2/${options.slug ?? firm.slug}/tools/${name}`, {
      rawBody: raw,
      headers: {
        'Content-Type': 'application/json',
        [RETELL_SIGNATURE_HEADER]: signRetellWebhook(raw, options.secret ?? VOICE_SECRET),
      },
    });
  };

  it('check_availability answers free slots in the caller’s time zone, in words; book_appointment books once per call', async () => {
    const check = await tool('check_availability', {});
    expect(check.status).toBe(200);
    expect(check.body.time_zone).toBe('America/Los_Angeles');
    expect(check.body.slots.length).toBe(5);
    expect(check.body.slots[0].start).toMatch(/-0[78]:00$/);
    expect(check.body.slots[0].spoken).toMatch(
      /^[A-Z][a-z]+day, [A-Z][a-z]+ \d{1,2} at \d{1,2}:\d{2} [AP]M$/,
    );
    expect(check.body.message).toContain(check.body.slots[0].spoken);
    const pick = check.body.slots[0].start as string;
    const args = { start: pick, name: 'Sam Caller', email: 'sam.caller@example.com' };
    const booked = await tool('book_appointment', args);
    expect(booked.status).toBe(200);
    expect(booked.body).toMatchObject({ booked: true, start: new Date(Date.parse(pick)).toISOString() });
    expect(booked.body.message).toMatch(/^Booked: /);
    // Retell retries a function call it got no answer to: the same call books nothing more.
    expect((await tool('book_appointment', args)).body.booking_uid).toBe(booked.body.booking_uid);
    expect(cal.bookings.filter((b) => b.attendee.email === 'sam.caller@example.com')).toHaveLength(1);
  });

  it('when Cal.com cannot be reached, both tools answer 200 with words for the agent and book nothing', async () => {
    // Found by the fuzzer: a firm whose Cal.com host did not resolve made the tool a 502, which
    // gives the model nothing to say to the caller.
    const closed = await createFirm(stack, {
      booking: {
        provider: 'calcom',
        api_key: API_KEY,
        event_type_id: EVENT_TYPE,
        base_url: 'http://127.0.0.1:1',
      },
      voice_webhook_secret: VOICE_SECRET,
    });
    const before = cal.bookings.length;
    const check = await tool('check_availability', {}, 'call_tool_closed', { slug: closed.slug });
    expect(check.status).toBe(200);
    expect(check.body).toEqual({
      slots: [],
      message: expect.stringMatching(/^The calendar cannot be reached/),
    });
    const args = { start: new Date(slots[30]!).toISOString(), name: 'Sam Caller', email: 'sam@example.com' };
    const booked = await tool('book_appointment', args, 'call_tool_closed', { slug: closed.slug });
    expect(booked.status).toBe(200);
    expect(booked.body).toEqual({
      booked: false,
      message: expect.stringMatching(/^The calendar cannot be reached/),
    });
    expect(cal.bookings.length).toBe(before);
  });

  it('refuses a wrong signature (401), another firm’s token (403), missing args and unknown tools (400)', async () => {
    expectError(
      await tool('check_availability', {}, 'c2', { secret: 'not-the-secret-at-all' }),
      401,
      'unauthorized',
    );
    expectError(await tool('check_availability', {}, 'c2', { slug: other.slug }), 401, 'unauthorized');
    const foreign = await other.client.post(`/api/v2/${firm.slug}/tools/check_availability`, {
      name: 'check_availability',
      call: callObject('c3'),
      args: {},
    });
    expectError(foreign, 403, 'forbidden');
    const missing = await tool('book_appointment', { start: new Date(slots[30]!).toISOString() }, 'c4');
    expect(expectError(missing, 400, 'invalid_request').map((d) => d.path)).toEqual([
      '/args/name',
      '/args/email',
    ]);
    expectError(await tool('delete_everything', {}, 'c5'), 400, 'invalid_request');
    // A day so far ahead that the week from it runs past 9999-12-30 names the argument, not a
    // field of the availability query the tool makes of it.
    for (const date of ['9999-12-28', '9999-12-31']) {
      const far = await tool('check_availability', { date }, 'c6');
      expect(expectError(far, 400, 'invalid_request').map((d) => d.path)).toEqual(['/args/date']);
    }
    // No call object: with "Payload: args only" that is the args, and nothing says which call it
    // is from. A 400 would be silence on the line: the agent gets words to say instead
    // (test/appointments/agent-tools-payload.test.ts).
    const noCall = JSON.stringify({ name: 'check_availability', args: {} });
    const res = await stack.api.request('POST', `/api/v2/${firm.slug}/tools/check_availability`, {
      rawBody: noCall,
      headers: {
        'Content-Type': 'application/json',
        [RETELL_SIGNATURE_HEADER]: signRetellWebhook(noCall, VOICE_SECRET),
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ slots: [], message: expect.stringMatching(/will call them back/) });
  });
});
