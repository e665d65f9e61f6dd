// Cal.com's refusals of a booking, told apart (docs/appointments.md#refusals): its API v2 answers
// 400 with the reason in words (errors.service.ts, bookings.service.ts in calcom/cal.com): a start
// within the event type's minimum notice (booking_time_out_of_bounds_error), an attendee phone
// number the event type requires, the booker's limit of upcoming bookings. Each is something to
// say, with the next free times where the time was the problem — not "the calendar cannot be
// reached". The caller's own number goes to Cal.com as attendee.phoneNumber when the agent gave none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RETELL_SIGNATURE_HEADER,
  signRetellWebhook,
} from '../../core/integrations/voice/webhook-signature.js';
import { CAL_MESSAGES, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { capturingLogger } from '../helpers/capturing-logger.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

const API_KEY = 'cal_live_refusals_0123456789';
const EVENT_TYPE = 7171;
const VOICE_SECRET = 'voice_secret_refusals_0123';
const HOUR = 3600_000;

let stack: Stack;
let cal: FakeCalcom;
let firm: Awaited<ReturnType<typeof createFirm>>;
const captured = capturingLogger();
// Hourly slots from 3 hours ahead for three days.
const base = Math.ceil(Date.now() / HOUR) * HOUR + 3 * HOUR;
const slots = Array.from({ length: 72 }, (_, i) => base + i * HOUR);

beforeAll(async () => {
  stack = await startStack();
  // What the service logs, kept to read Cal.com's own words in it.
  (stack.services as { log: unknown }).log = captured.log;
  cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
  firm = await createFirm(stack, {
    booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
    voice_webhook_secret: VOICE_SECRET,
  });
});
afterAll(async () => {
  await cal?.stop();
  await stack?.stop();
});

const person = (email: string) => ({ name: 'Lee Client', email, timeZone: 'America/New_York' });
const book = (start: number, email: string) =>
  firm.client.post('/api/appointments', {
    firmSlug: firm.slug,
    start: new Date(start).toISOString(),
    attendee: person(email),
  });
const tool = (args: Record<string, unknown>, callId: string) => {
  const raw = JSON.stringify({
    name: 'book_appointment',
    call: {
      call_id: callId,
      call_type: 'phone_call',
      direction: 'inbound',
      agent_id: 'agent_x',
      call_status: 'ongoing',
      from_number: '+14155550123',
      to_number: '+14155552222',
    },
    args,
  });
  return stack.api.request('POST', `/api/v2/${firm.slug}/tools/book_appointment`, {
    rawBody: raw,
    headers: {
      'Content-Type': 'application/json',
      [RETELL_SIGNATURE_HEADER]: signRetellWebhook(raw, VOICE_SECRET),
    },
  });
};
/** Whether the service logged Cal.com's own words for a refused booking. */
const logged = (text: string) =>
  captured.lines.some((l) => (l as { calcom?: string }).calcom === text && /refused the booking/.test(l.msg));

describe("Cal.com's refusals, told apart", () => {
  it('too soon (minimum notice): 409 slot_not_bookable with the next bookable times; the agent says so and offers them', async () => {
    cal.setRules({ minimumNoticeMinutes: 24 * 60 });
    try {
      const res = await book(slots[2]!, 'soon@example.com');
      const details = expectError(res, 409, 'slot_not_bookable');
      expect(res.body.error.message).toMatch(/notice|too soon/i);
      expect(details.length).toBeGreaterThan(0);
      for (const d of details)
        expect(Date.parse(d.message)).toBeGreaterThanOrEqual(Date.now() + 24 * HOUR - HOUR);
      expect(logged(CAL_MESSAGES.outOfBounds)).toBe(true);
      const said = await tool(
        { start: new Date(slots[3]!).toISOString(), name: 'Lee Caller', email: 'soon.caller@example.com' },
        'call_refusal_soon',
      );
      expect(said.status).toBe(200);
      expect(said.body.booked).toBe(false);
      expect(said.body.reason).toBe('too_soon_or_far');
      expect(said.body.alternatives.length).toBeGreaterThan(0);
      expect(said.body.message).not.toMatch(/cannot be reached/);
      expect(said.body.message).toMatch(/notice/);
      expect(cal.bookings).toHaveLength(0);
    } finally {
      cal.setRules({ minimumNoticeMinutes: 0 });
    }
  });

  it("a required attendee phone: the caller's number is sent when the agent gave none; without one, a sayable 400", async () => {
    cal.setRules({ requirePhone: true });
    try {
      const said = await tool(
        { start: new Date(slots[10]!).toISOString(), name: 'Pho Caller', email: 'phone.caller@example.com' },
        'call_refusal_phone',
      );
      expect(said.status).toBe(200);
      expect(said.body.booked).toBe(true);
      const made = cal.bookings.find((b) => b.attendee.email === 'phone.caller@example.com')!;
      expect(made.attendee.phoneNumber).toBe('+14155550123');
      const res = await book(slots[11]!, 'nophone@example.com');
      expect(expectError(res, 400, 'attendee_phone_required').map((d) => d.path)).toEqual([
        '/attendee/phone',
      ]);
      expect(res.body.error.message).toMatch(/phone/);
      expect(logged(CAL_MESSAGES.phoneRequired)).toBe(true);
    } finally {
      cal.setRules({ requirePhone: false });
    }
  });

  it("the booker's limit of upcoming bookings: 409 booking_limit_reached, and the agent says the person already has one", async () => {
    cal.setRules({ bookerActiveBookingsLimit: 1 });
    try {
      expect((await book(slots[20]!, 'limit@example.com')).status).toBe(200);
      const res = await book(slots[21]!, 'limit@example.com');
      expectError(res, 409, 'booking_limit_reached');
      expect(logged(CAL_MESSAGES.bookerLimit)).toBe(true);
      const said = await tool(
        { start: new Date(slots[22]!).toISOString(), name: 'Lim Caller', email: 'limit@example.com' },
        'call_refusal_limit',
      );
      expect(said.status).toBe(200);
      expect(said.body).toMatchObject({ booked: false, reason: 'booking_limit_reached' });
      expect(said.body.message).toMatch(/already has/);
      expect(cal.bookings.filter((b) => b.attendee.email === 'limit@example.com')).toHaveLength(1);
    } finally {
      cal.setRules({ bookerActiveBookingsLimit: undefined });
    }
  });
});
