// The simulator's caller who asks for a consultation (a number ending 2222,
// docs/appointments.md#the-simulator): during the call it calls the firm's check_availability and
// book_appointment tools as Retell calls custom functions (signed x-retell-signature), then ends the call
// normally. One booking at the local Cal.com, the call's lead carries it, and Cal.com's BOOKING_CREATED makes
// exactly one set of reminders.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { remindersWhen } from '../bookings/support.js';
import { createAgent, waitForCall } from '../calls/support.js';

const API_KEY = 'cal_live_sim_key_0123456789';
const EVENT_TYPE = 77;
const BOOKING_SECRET = 'whsec_sim_booking_secret';
const DAY = 24 * 3600_000;

let stack: Stack;
let cal: FakeCalcom;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;
// From the day after tomorrow: both reminder offsets (a day and an hour before) are still ahead.
const slots = dailySlots(Date.now() + DAY, 5, 3);

beforeAll(async () => {
  stack = await startStack({ workers: true });
  cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
  firm = await createFirm(stack, {
    booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
    booking_webhook_secret: BOOKING_SECRET,
    reminder_offsets_minutes: [1440, 60],
  });
  cal.setWebhook({ url: `${stack.baseUrl}/api/v2/${firm.slug}/booking-webhook`, secret: BOOKING_SECRET });
  agentId = await createAgent(firm.client, firm.slug);
});
afterAll(async () => {
  await cal?.stop();
  await stack?.stop();
});

describe('a simulated call that books (number ending 2222)', () => {
  it('checks availability, books the first free slot, ends normally; the lead carries the booking; one set of reminders', async () => {
    const created = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155552222',
      agentId,
      firmSlug: firm.slug,
      dynamicVariables: { full_name: 'Maria Lopez', email: 'maria.lopez@example.com' },
    });
    expect(created.status).toBe(200);
    const callId = created.body.call_id as string;
    const ended = await waitForCall(
      firm.client,
      callId,
      (c) =>
        c.status === 'ended' && c.call_analysis !== null && !Object.values(c.effects).includes('pending'),
    );
    expect(ended.disconnection_reason).toBe('user_hangup');
    expect(ended.effects.lead).toBe('done');
    // The tools were called as Retell calls them: one look at the slots, one booking.
    expect(cal.requests.filter((r) => r.path === '/v2/slots')).toHaveLength(1);
    expect(cal.bookings).toHaveLength(1);
    const booking = cal.bookings[0]!;
    expect(booking).toMatchObject({
      start: new Date(slots[0]!).toISOString(),
      attendee: { name: 'Maria Lopez', email: 'maria.lopez@example.com' },
    });
    expect(ended.transcript).toContain('User: Can I book a consultation with an attorney?');
    expect(ended.transcript).toContain('Agent: Booked: ');

    const lead = await firm.client.get(`/api/leads/${ended.lead_id}`);
    expect(lead.status).toBe(200);
    expect(lead.body.appointment).toEqual({
      booking_uid: booking.uid,
      start: booking.start,
      status: 'booked',
    });

    await cal.settled();
    expect(cal.deliveries).toEqual([{ trigger: 'BOOKING_CREATED', uid: booking.uid, status: 200 }]);
    const rows = await remindersWhen(firm.client, firm.slug, booking.uid, (r) => expect(r).toHaveLength(2));
    expect(rows.map((r) => [r.to, Date.parse(r.due_at)])).toEqual([
      ['maria.lopez@example.com', slots[0]! - DAY],
      ['maria.lopez@example.com', slots[0]! - 3600_000],
    ]);
  });

  it('a firm without a booking provider: the agent says it cannot book, and the call ends as any other', async () => {
    const plain = await createFirm(stack);
    const plainAgent = await createAgent(plain.client, plain.slug);
    const created = await plain.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155552222',
      agentId: plainAgent,
      firmSlug: plain.slug,
    });
    const ended = await waitForCall(
      plain.client,
      created.body.call_id,
      (c) =>
        c.status === 'ended' && c.call_analysis !== null && !Object.values(c.effects).includes('pending'),
    );
    expect(ended.disconnection_reason).toBe('user_hangup');
    expect(ended.transcript).toContain('User: Can I book a consultation with an attorney?');
    expect(ended.transcript).not.toContain('Booked: ');
    expect(ended.effects.lead).toBe('done');
    expect((await plain.client.get(`/api/leads/${ended.lead_id}`)).body.appointment).toBeNull();
    expect(cal.bookings).toHaveLength(1);
  });

  it('a call to another number books nothing', async () => {
    const created = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId,
      firmSlug: firm.slug,
    });
    const ended = await waitForCall(
      firm.client,
      created.body.call_id,
      (c) =>
        c.status === 'ended' && c.call_analysis !== null && !Object.values(c.effects).includes('pending'),
    );
    expect(ended.transcript).not.toContain('consultation');
    expect(cal.bookings).toHaveLength(1);
    expect((await firm.client.get(`/api/leads/${ended.lead_id}`)).body.appointment).toBeNull();
  });
});
