// The Cal.com fake answers as Cal.com does and as its document says (test/fakes/calcom-server.ts,
// test/fakes/spec/calcom-v2.json): a request off the document is refused with Cal.com's error
// body, GET /v2/slots reads start/end in UTC whatever the timeZone, and an answer the fake builds
// off the document's response schema fails the test that made it.
import { afterEach, describe, expect, it } from 'vitest';
import { calSlotsBound, isoInZone, startFakeCalcom, type FakeCalcom } from './calcom-server.js';
import { loadSpec } from './spec/openapi-spec.js';

const API_KEY = 'cal_live_fake_self_test';
const EVENT_TYPE = 31;
const HOUR = 3600_000;
const DAY = 24 * HOUR;
// Hourly slots over the next three UTC days from tomorrow 00:00Z.
const day0 = Math.floor(Date.now() / DAY) * DAY + DAY;
const slots = Array.from({ length: 72 }, (_, i) => day0 + i * HOUR);
const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);

let cal: FakeCalcom | undefined;
afterEach(async () => {
  await cal?.stop();
  cal = undefined;
});

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${cal!.url}${path}`, { headers });
  return { status: res.status, body: (await res.json()) as any };
}

describe('the Cal.com fake refuses what Cal.com refuses', () => {
  it('GET /v2/slots without cal-api-version: 400 in the error shape, naming the missing header', async () => {
    cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
    const q = new URLSearchParams({ eventTypeId: String(EVENT_TYPE), start: date(day0), end: date(day0) });
    const res = await get(`/v2/slots?${q}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      status: 'error',
      timestamp: expect.any(String),
      path: `/v2/slots?${q}`,
      error: { code: 'BadRequestException', message: expect.any(String) },
    });
    expect(cal.requests.at(-1)!.problems).toEqual(['header parameter "cal-api-version" is required']);
  });

  it('a query parameter the document does not have is refused; POST /v2/bookings without its required fields too', async () => {
    cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
    const v = { 'cal-api-version': '2024-09-04' };
    const q = new URLSearchParams({
      eventTypeId: String(EVENT_TYPE),
      startTime: date(day0),
      end: date(day0),
    });
    const res = await get(`/v2/slots?${q}`, v);
    expect(res.status).toBe(400);
    expect(cal.requests.at(-1)!.problems).toEqual([
      'query parameter "startTime" is not in the document',
      'query parameter "start" is required',
    ]);
    const post = await fetch(`${cal.url}/v2/bookings`, {
      method: 'POST',
      headers: { 'cal-api-version': '2024-08-13', 'content-type': 'application/json' },
      body: JSON.stringify({ start: new Date(slots[30]!).toISOString(), eventTypeId: EVENT_TYPE }),
    });
    expect(post.status).toBe(400);
    expect(cal.requests.at(-1)!.problems.join('\n')).toMatch(/attendee/);
    expect(cal.bookings).toHaveLength(0);
  });

  it("reads a local date's start as 00:00:00Z (Cal.com's UTC), whatever timeZone says: a client sending local dates gets the wrong day", async () => {
    cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
    const day = date(day0 + DAY);
    const q = new URLSearchParams({
      eventTypeId: String(EVENT_TYPE),
      start: day,
      end: day,
      timeZone: 'America/Los_Angeles',
    });
    const res = await get(`/v2/slots?${q}`, { 'cal-api-version': '2024-09-04' });
    expect(res.status).toBe(200);
    const starts = Object.values(res.body.data as Record<string, Array<{ start: string }>>)
      .flat()
      .map((s) => s.start);
    // The UTC day, formatted in Los Angeles: it begins on the day before there (4 PM), and the
    // local day's evening is missing.
    expect(starts.map(Date.parse)).toEqual(slots.filter((ms) => date(ms) === day));
    expect(starts[0]).toBe(isoInZone(Date.parse(`${day}T00:00:00Z`), 'America/Los_Angeles'));
    expect(starts[0]!.slice(0, 10)).not.toBe(day);
    expect(Object.keys(res.body.data).sort()[0]).not.toBe(day);
  });

  it('an end at 00:00:00 is read as 23:59:59 of that day, as slots-input.service.ts does', () => {
    expect(calSlotsBound('2026-12-01', 'start')).toBe(Date.parse('2026-12-01T00:00:00Z'));
    expect(calSlotsBound('2026-12-01', 'end')).toBe(Date.parse('2026-12-01T23:59:59Z'));
    expect(calSlotsBound('2026-12-02T00:00:00Z', 'end')).toBe(Date.parse('2026-12-02T23:59:59Z'));
    expect(calSlotsBound('2026-12-01T08:00:00Z', 'start')).toBe(Date.parse('2026-12-01T08:00:00Z'));
  });

  it('an answer off the document is a violation, and the fake that sent one fails its test when it stops', async () => {
    const fake = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
    const spec = loadSpec('calcom-v2');
    const match = spec.match('GET', '/v2/slots')!;
    expect(
      spec.checkResponse(match, 200, { status: 'success', data: { [date(day0)]: [{ start: 'x' }] } }),
    ).toEqual([]);
    const off = spec.checkResponse(match, 200, {
      status: 'success',
      data: { [date(day0)]: [{ start: 9 }] },
      pagination: { totalItems: 1 },
    });
    expect(off.join('\n')).toMatch(/pagination/);
    expect(off.join('\n')).toMatch(/start/);
    fake.violations.record(off);
    await expect(fake.stop()).rejects.toThrow(/answered off its provider's document/);
  });
});

describe('the Cal.com fake seats several people into one booking, as Cal.com does', () => {
  const v = { 'cal-api-version': '2024-08-13', 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${cal!.url}${path}`, { method: 'POST', headers: v, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const seatIn = (startMs: number, name: string) =>
    post('/v2/bookings', {
      start: new Date(startMs).toISOString(),
      eventTypeId: EVENT_TYPE,
      attendee: { name, email: `${name.toLowerCase()}@example.com`, timeZone: 'UTC', language: 'en' },
      metadata: { who: name },
    });
  const seated = () => startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots, seats: 3 });

  it('seats share one uid, each answered with its own seatUid; the booking lists every seat; a full time is refused', async () => {
    cal = await seated();
    const ann = await seatIn(slots[30]!, 'Ann');
    const bob = await seatIn(slots[30]!, 'Bob');
    expect([ann.status, bob.status], JSON.stringify(bob.body)).toEqual([201, 201]);
    expect(bob.body.data.uid).toBe(ann.body.data.uid);
    expect(ann.body.data.seatUid).toEqual(expect.any(String));
    expect(bob.body.data.seatUid).not.toBe(ann.body.data.seatUid);
    expect(bob.body.data.bookingFieldsResponses).toBeUndefined();
    const read = await get(`/v2/bookings/${ann.body.data.uid}`, v);
    expect(read.body.data.seatUid).toBeUndefined();
    expect(read.body.data.attendees.map((a: any) => [a.email, a.seatUid])).toEqual([
      ['ann@example.com', ann.body.data.seatUid],
      ['bob@example.com', bob.body.data.seatUid],
    ]);
    expect((await seatIn(slots[30]!, 'Bob')).body.error.message).toBe(
      'already_signed_up_for_this_booking_error',
    );
    expect((await seatIn(slots[30]!, 'Cem')).status).toBe(201);
    const full = await seatIn(slots[30]!, 'Dee');
    expect([full.status, full.body.error.message]).toEqual([400, 'booking_seats_full_error']);
  });

  it("a reschedule with a seatUid moves that seat alone; without one, the owner's, the whole booking", async () => {
    cal = await seated();
    const ann = (await seatIn(slots[31]!, 'Ann')).body.data;
    const bob = (await seatIn(slots[31]!, 'Bob')).body.data;
    const moved = await post(`/v2/bookings/${ann.uid}/reschedule`, {
      start: new Date(slots[40]!).toISOString(),
      seatUid: bob.seatUid,
    });
    expect(moved.status).toBe(201);
    expect(moved.body.data.uid).not.toBe(ann.uid);
    expect(moved.body.data.attendees.map((a: any) => a.email)).toEqual(['bob@example.com']);
    expect(moved.body.data.seatUid).toBe(moved.body.data.attendees[0].seatUid);
    const left = cal.bookings.find((b) => b.uid === ann.uid)!;
    expect([left.status, left.start, left.seats!.map((s) => s.attendee.email)]).toEqual([
      'accepted',
      new Date(slots[31]!).toISOString(),
      ['ann@example.com'],
    ]);

    // Cal.com's pipe refuses what a seat's body does not have, and a seat it does not know.
    const reason = await post(`/v2/bookings/${ann.uid}/reschedule`, {
      start: new Date(slots[41]!).toISOString(),
      seatUid: ann.seatUid,
      reschedulingReason: 'Another time suits',
    });
    expect([reason.status, reason.body.error.message]).toEqual([
      400,
      'reschedulingReason property is wrong,property reschedulingReason should not exist ',
    ]);
    const unknown = await post(`/v2/bookings/${ann.uid}/reschedule`, {
      start: new Date(slots[41]!).toISOString(),
      seatUid: 'no-such-seat',
    });
    expect([unknown.status, unknown.body.error.message]).toEqual([
      404,
      'Seat with uid=no-such-seat does not exist.',
    ]);

    // Without a seatUid every seat moves with the booking, which keeps its uid.
    await seatIn(slots[31]!, 'Cem');
    const whole = await post(`/v2/bookings/${ann.uid}/reschedule`, {
      start: new Date(slots[42]!).toISOString(),
    });
    expect(whole.status).toBe(201);
    expect(whole.body.data.uid).toBe(ann.uid);
    expect(whole.body.data.attendees.map((a: any) => a.email)).toEqual([
      'ann@example.com',
      'cem@example.com',
    ]);
    expect(cal.bookings.find((b) => b.uid === ann.uid)!.start).toBe(new Date(slots[42]!).toISOString());
  });

  it('a cancel with a seatUid takes that seat alone; with a reason too it is refused; a seat not on it is refused', async () => {
    cal = await seated();
    const ann = (await seatIn(slots[32]!, 'Ann')).body.data;
    const bob = (await seatIn(slots[32]!, 'Bob')).body.data;
    const both = await post(`/v2/bookings/${ann.uid}/cancel`, {
      seatUid: bob.seatUid,
      cancellationReason: 'x',
    });
    expect([both.status, both.body.error.message]).toEqual([
      400,
      'cancellationReason property is wrong,property cancellationReason should not exist ',
    ]);
    const stranger = await post(`/v2/bookings/${ann.uid}/cancel`, { seatUid: 'no-such-seat' });
    expect([stranger.status, stranger.body.error.message]).toEqual([400, 'User not a part of this booking']);
    const out = await post(`/v2/bookings/${ann.uid}/cancel`, { seatUid: bob.seatUid });
    expect(out.status).toBe(200);
    expect(out.body.data).toMatchObject({ uid: ann.uid, status: 'accepted' });
    expect(out.body.data.attendees.map((a: any) => a.email)).toEqual(['ann@example.com']);
    // The last seat's cancel cancels the booking (Cal.com's cancelAttendeeSeat leaves it whole).
    const last = await post(`/v2/bookings/${ann.uid}/cancel`, { seatUid: ann.seatUid });
    expect(last.body.data).toMatchObject({ status: 'cancelled', attendees: [] });
  });
});
