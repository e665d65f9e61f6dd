// The lead's appointment follows every Cal.com booking event (docs/appointments.md#the-lead), and an
// event type that requires confirmation is a request, never said as booked
// (docs/appointments.md#confirmation). Cal.com here books `pending` and sends BOOKING_REQUESTED
// when its event type requires confirmation; the host's decline is BOOKING_REJECTED; a reschedule
// is a new booking (new uid) with BOOKING_RESCHEDULED naming the old one; a cancel is
// BOOKING_CANCELLED (test/fakes/calcom-server.ts, signed to the firm's booking webhook).
import { describe, expect, it } from 'vitest';
import { createAgent, createChat, say, INTAKE_ANSWERS } from '../chat/chat-helpers.js';
import { dailySlots } from '../fakes/calcom-server.js';
import { eventually } from '../helpers/eventually.js';
import { eventsOf, rerunCompleted } from '../helpers/events.js';
import { callTool, useCalcomFirm } from './support.js';

const API_KEY = 'cal_live_lifecycle_0123456789';
const EVENT_TYPE = 6161;
const BOOKING_SECRET = 'whsec_lifecycle_booking_secret';
const VOICE_SECRET = 'voice_secret_lifecycle_0123';
const DAY = 24 * 3600_000;

const slots = dailySlots(Date.now() + DAY, 6, 6);
const booking = useCalcomFirm({
  apiKey: API_KEY,
  eventTypeId: EVENT_TYPE,
  slots,
  voiceSecret: VOICE_SECRET,
  bookingSecret: BOOKING_SECRET,
  workers: true,
});

async function newLead(email: string): Promise<string> {
  const lead = await booking.firm.client.post('/api/leads', {
    firmSlug: booking.firm.slug,
    first_name: 'Pat',
    email,
  });
  expect(lead.status).toBe(200);
  return lead.body.id as string;
}

const bookFor = (leadId: string, start: number, email: string) =>
  booking.firm.client.post('/api/appointments', {
    firmSlug: booking.firm.slug,
    start: new Date(start).toISOString(),
    attendee: { name: 'Pat Client', email, timeZone: 'America/New_York' },
    lead_id: leadId,
  });

/** The lead's appointment once it equals `expected` (the webhook's job runs in a worker). */
async function appointmentBecomes(leadId: string, expected: Record<string, unknown>) {
  await booking.cal.settled();
  await eventually(async () => {
    const lead = await booking.firm.client.get(`/api/leads/${leadId}`);
    expect(lead.body.appointment).toEqual(expected);
  });
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Waits until the lead's appointment events are `expected` (each is recorded just after its move). */
const appointmentEventsBecome = (leadId: string, expected: string[][]) =>
  eventually(async () => expect(await appointmentEvents(leadId)).toEqual(expected));

/** The lead's appointment.* events (docs/events.md#event-types): [type, booking uid, start], in order. */
async function appointmentEvents(leadId: string): Promise<string[][]> {
  const events = await eventsOf(booking.stack, booking.firm.slug, leadId);
  for (const e of events.filter((e) => e.type.startsWith('appointment.'))) {
    expect(e.data.lead_id).toBe(leadId);
    expect(e.data.lead).toMatchObject({ id: leadId, firm: booking.firm.slug });
    expect(e.type).toBe(`appointment.${e.data.status}`);
  }
  return events
    .filter((e) => e.type.startsWith('appointment.'))
    .map((e) => [e.type, e.data.booking_uid, e.data.start]);
}

describe("the lead's appointment follows every booking event", () => {
  it('a pending booking (confirmation required) is "requested", then "rejected" when the host declines', async () => {
    booking.cal.setRules({ requiresConfirmation: true });
    try {
      const leadId = await newLead('pending.client@example.com');
      const booked = await bookFor(leadId, slots[0]!, 'pending.client@example.com');
      expect(booked.status).toBe(200);
      // Said as the lead says it: a request, never "booked" (nor Cal.com's own "pending").
      expect(booked.body.status).toBe('requested');
      const uid = booked.body.booking_uid as string;
      await appointmentBecomes(leadId, { booking_uid: uid, start: iso(slots[0]!), status: 'requested' });
      expect(booking.cal.deliveries.filter((d) => d.uid === uid).map((d) => [d.trigger, d.status])).toEqual([
        ['BOOKING_REQUESTED', 200],
      ]);
      booking.cal.reject(uid);
      await appointmentBecomes(leadId, { booking_uid: uid, start: iso(slots[0]!), status: 'rejected' });
      await appointmentEventsBecome(leadId, [
        ['appointment.requested', uid, iso(slots[0]!)],
        ['appointment.rejected', uid, iso(slots[0]!)],
      ]);
    } finally {
      booking.cal.setRules({ requiresConfirmation: false });
    }
  });

  it('a booked appointment is "booked", "rescheduled" (new uid and start), then "cancelled"', async () => {
    const leadId = await newLead('moving.client@example.com');
    const booked = await bookFor(leadId, slots[1]!, 'moving.client@example.com');
    expect(booked.status).toBe(200);
    const uid = booked.body.booking_uid as string;
    await appointmentBecomes(leadId, { booking_uid: uid, start: iso(slots[1]!), status: 'booked' });
    const moved = booking.cal.reschedule(uid, slots[8]!);
    await appointmentBecomes(leadId, { booking_uid: moved, start: iso(slots[8]!), status: 'rescheduled' });
    // An event of the booking it moved away from changes nothing: the lead follows the new one.
    booking.cal.cancel(uid);
    await booking.cal.settled();
    booking.cal.cancel(moved);
    await appointmentBecomes(leadId, { booking_uid: moved, start: iso(slots[8]!), status: 'cancelled' });
    expect(booking.cal.deliveries.filter((d) => d.uid === moved).map((d) => d.trigger)).toEqual([
      'BOOKING_RESCHEDULED',
      'BOOKING_CANCELLED',
    ]);
    // One event per move of the lead's appointment; the cancel of the booking it moved from is none.
    const expected = [
      ['appointment.booked', uid, iso(slots[1]!)],
      ['appointment.rescheduled', moved, iso(slots[8]!)],
      ['appointment.cancelled', moved, iso(slots[8]!)],
    ];
    await appointmentEventsBecome(leadId, expected);
    // The booking events' jobs run again (a retry after they were applied): nothing new.
    expect(await rerunCompleted(booking.stack, 'bookingEvent')).toBeGreaterThanOrEqual(4);
    expect(await appointmentEvents(leadId)).toEqual(expected);
  });

  it('a request the host accepts becomes "booked" (Cal.com sends BOOKING_CREATED then)', async () => {
    booking.cal.setRules({ requiresConfirmation: true });
    try {
      const leadId = await newLead('accepted.client@example.com');
      const booked = await bookFor(leadId, slots[3]!, 'accepted.client@example.com');
      const uid = booked.body.booking_uid as string;
      await appointmentBecomes(leadId, { booking_uid: uid, start: iso(slots[3]!), status: 'requested' });
      await appointmentEventsBecome(leadId, [['appointment.requested', uid, iso(slots[3]!)]]);
      booking.cal.confirm(uid);
      await appointmentBecomes(leadId, { booking_uid: uid, start: iso(slots[3]!), status: 'booked' });
      await appointmentEventsBecome(leadId, [
        ['appointment.requested', uid, iso(slots[3]!)],
        ['appointment.booked', uid, iso(slots[3]!)],
      ]);
    } finally {
      booking.cal.setRules({ requiresConfirmation: false });
    }
  });

  it('a lead without an appointment shows null', async () => {
    const leadId = await newLead('nobody@example.com');
    expect((await booking.firm.client.get(`/api/leads/${leadId}`)).body.appointment).toBeNull();
  });
});

describe('an event type that requires confirmation is a request, never said as booked', () => {
  it('the caller hears "requested, the firm will confirm" (booked: false, status requested)', async () => {
    booking.cal.setRules({ requiresConfirmation: true });
    try {
      const res = await callTool(
        booking.stack,
        { slug: booking.firm.slug, voiceSecret: VOICE_SECRET },
        'book_appointment',
        { start: iso(slots[2]!), name: 'Sam Caller', email: 'sam.requested@example.com' },
        {
          callId: 'call_requested_1',
          direction: 'inbound',
          fromNumber: '+14155550100',
          toNumber: '+14155552222',
        },
      );
      expect(res.status).toBe(200);
      expect(res.body.booked).toBe(false);
      expect(res.body.status).toBe('requested');
      expect(res.body.message).toMatch(/^Requested: .*the firm will confirm/);
      expect(res.body.message).not.toMatch(/\bbooked\b/i);
    } finally {
      booking.cal.setRules({ requiresConfirmation: false });
    }
  });

  it('the chat says the consultation is requested and the firm will confirm it', async () => {
    booking.cal.setRules({ requiresConfirmation: true });
    try {
      const agent = await createAgent(booking.firm.client, booking.firm.slug);
      const chat = await createChat(booking.firm.client, booking.firm.slug, agent.agent_id);
      let offer = '';
      for (const answer of INTAKE_ANSWERS) offer = await say(booking.firm.client, chat.chat_id, answer);
      expect(offer).toContain('Would you like a free consultation?');
      const reply = await say(booking.firm.client, chat.chat_id, '1');
      expect(reply).toMatch(/^Your consultation is requested for .*the firm will confirm/);
      expect(reply).not.toMatch(/\bbooked\b/i);
    } finally {
      booking.cal.setRules({ requiresConfirmation: false });
    }
  });
});
