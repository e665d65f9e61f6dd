// Availability is cached 30 s (docs/appointments.md#availability), but not past a booking made
// through the service itself: a client that books a slot with POST /api/appointments and asks
// for availability at once is not offered the slot it just took (nor is an agent that checks
// again after booking), against a local Cal.com speaking API v2 (test/fakes/calcom-server.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';

const API_KEY = 'cal_live_test_key_availability_after';
const EVENT_TYPE = 4343;
const DAY = 24 * 3600_000;

let stack: Stack;
let cal: FakeCalcom;
let firm: Awaited<ReturnType<typeof createFirm>>;
const slots = dailySlots(Date.now(), 3, 4);
const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

beforeAll(async () => {
  stack = await startStack();
  cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
  firm = await createFirm(stack, {
    booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
  });
});
afterAll(async () => {
  await cal?.stop();
  await stack?.stop();
});

const offered = async (): Promise<number[]> => {
  const q = new URLSearchParams({
    firmSlug: firm.slug,
    start: isoDate(slots[0]!),
    end: isoDate(slots[0]! + 2 * DAY),
    timeZone: 'UTC',
  });
  const res = await firm.client.get(`/api/appointments/availability?${q}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body.slots as Array<{ start: string }>).map((s) => Date.parse(s.start));
};

describe('availability after a booking made here', () => {
  it('no longer offers the slot just booked, though the answer before it is cached', async () => {
    const taken = slots[2]!;
    expect(await offered()).toContain(taken);
    const booked = await firm.client.post('/api/appointments', {
      firmSlug: firm.slug,
      start: new Date(taken).toISOString(),
      attendee: { name: 'Jane Roe', email: 'jane.roe@example.com', timeZone: 'UTC' },
    });
    expect(booked.status, JSON.stringify(booked.body)).toBe(200);
    // At once, with no wait for the cache to lapse.
    const after = await offered();
    expect(after).not.toContain(taken);
    expect(after).toEqual(slots.filter((s) => s !== taken));
  });
});
