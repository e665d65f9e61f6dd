// Cal.com's refusals of a booking, told apart (docs/appointments.md#refusals): its API v2 answers
// 400 with the reason in words (errors.service.ts, bookings.service.ts in calcom/cal.com): a start
// within the event type's minimum notice (booking_time_out_of_bounds_error), an attendee phone
// number the event type requires, the booker's limit of upcoming bookings. Each is something to
// say, with the next free times where the time was the problem — not "the calendar cannot be
// reached". The caller's own number goes to Cal.com as attendee.phoneNumber when the agent gave none.
import { describe, expect, it } from 'vitest';
import { CAL_MESSAGES } from '../fakes/calcom-server.js';
import { capturingLogger } from '../helpers/capturing-logger.js';
import { expectError } from '../helpers/expect-error.js';
import { callTool, useCalcomFirm } from './support.js';

const API_KEY = 'cal_live_refusals_0123456789';
const EVENT_TYPE = 7171;
const VOICE_SECRET = 'voice_secret_refusals_0123';
const HOUR = 3600_000;

const captured = capturingLogger();
// Hourly slots from 3 hours ahead for three days.
const base = Math.ceil(Date.now() / HOUR) * HOUR + 3 * HOUR;
const slots = Array.from({ length: 72 }, (_, i) => base + i * HOUR);
const booking = useCalcomFirm({
  apiKey: API_KEY,
  eventTypeId: EVENT_TYPE,
  slots,
  voiceSecret: VOICE_SECRET,
  // What the service logs, kept to read Cal.com's own words in it.
  onStack: (stack) => ((stack.services as { log: unknown }).log = captured.log),
});

const person = (email: string) => ({ name: 'Lee Client', email, timeZone: 'America/New_York' });
const book = (start: number, email: string) =>
  booking.firm.client.post('/api/appointments', {
    firmSlug: booking.firm.slug,
    start: new Date(start).toISOString(),
    attendee: person(email),
  });
const tool = (args: Record<string, unknown>, callId: string) =>
  callTool(booking.stack, { slug: booking.firm.slug, voiceSecret: VOICE_SECRET }, 'book_appointment', args, {
    callId,
    direction: 'inbound',
    fromNumber: '+14155550123',
    toNumber: '+14155552222',
  });
/** Whether the service logged Cal.com's own words for a refused booking. */
const logged = (text: string) =>
  captured.lines.some((l) => (l as { calcom?: string }).calcom === text && /refused the booking/.test(l.msg));

describe("Cal.com's refusals, told apart", () => {
  it('too soon (minimum notice): 409 slot_not_bookable with the next bookable times; the agent says so and offers them', async () => {
    booking.cal.setRules({ minimumNoticeMinutes: 24 * 60 });
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
      expect(booking.cal.bookings).toHaveLength(0);
    } finally {
      booking.cal.setRules({ minimumNoticeMinutes: 0 });
    }
  });

  it("a required attendee phone: the caller's number is sent when the agent gave none; without one, a sayable 400", async () => {
    booking.cal.setRules({ requirePhone: true });
    try {
      const said = await tool(
        { start: new Date(slots[10]!).toISOString(), name: 'Pho Caller', email: 'phone.caller@example.com' },
        'call_refusal_phone',
      );
      expect(said.status).toBe(200);
      expect(said.body.booked).toBe(true);
      const made = booking.cal.bookings.find((b) => b.attendee.email === 'phone.caller@example.com')!;
      expect(made.attendee.phoneNumber).toBe('+14155550123');
      const res = await book(slots[11]!, 'nophone@example.com');
      expect(expectError(res, 400, 'attendee_phone_required').map((d) => d.path)).toEqual([
        '/attendee/phone',
      ]);
      expect(res.body.error.message).toMatch(/phone/);
      expect(logged(CAL_MESSAGES.phoneRequired)).toBe(true);
    } finally {
      booking.cal.setRules({ requirePhone: false });
    }
  });

  it("the booker's limit of upcoming bookings: 409 booking_limit_reached, and the agent says the person already has one", async () => {
    booking.cal.setRules({ bookerActiveBookingsLimit: 1 });
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
      expect(booking.cal.bookings.filter((b) => b.attendee.email === 'limit@example.com')).toHaveLength(1);
    } finally {
      booking.cal.setRules({ bookerActiveBookingsLimit: undefined });
    }
  });
});
