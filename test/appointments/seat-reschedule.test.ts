// Moving one seat of a seated session (docs/appointments.md#moving-a-seat). Cal.com answers every
// seat of one time with one booking uid; its reschedule by that uid alone moves the whole booking,
// every seat with it. An agent moving its conversation's booking ("make it Thursday instead")
// moves the conversation's seat alone, with the seatUid Cal.com answered when it was booked, or,
// for a booking recorded before seats were kept, the seat Cal.com lists for the address we booked
// with. The other people on the session keep their time, their reminders and their lead's state.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appointmentOfLead } from '../../core/domain/appointments/lead-appointment.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { bookingJobs, remindersWhen, type ReminderRow } from '../bookings/support.js';
import { eventually } from '../helpers/eventually.js';
import { callTool, type BookingFirm } from './support.js';

const API_KEY = 'cal_live_seats_0123456789';
const EVENT_TYPE = 9191;
const VOICE_SECRET = 'voice_secret_seats_0123';
const BOOKING_SECRET = 'whsec_seats_booking_secret';
const DESK = 'desk@seats.test';
const DAY = 24 * 3600_000;

const slots = dailySlots(Date.now() + DAY, 4, 4);
let stack: Stack;
let cal: FakeCalcom;
let firm: BookingFirm;

beforeAll(async () => {
  stack = await startStack({ workers: true });
  cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots, seats: 5 });
  firm = await createFirm(stack, {
    booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
    voice_webhook_secret: VOICE_SECRET,
    booking_webhook_secret: BOOKING_SECRET,
    notification_emails: [DESK],
    reminder_offsets_minutes: [60],
  });
  cal.setWebhook({ url: `${stack.baseUrl}/api/v2/${firm.slug}/booking-webhook`, secret: BOOKING_SECRET });
});
afterAll(async () => {
  await cal?.stop();
  await stack?.stop();
});

const book = (callId: string, name: string, start: number) =>
  callTool(
    stack,
    { slug: firm.slug, voiceSecret: VOICE_SECRET },
    'book_appointment',
    { start: new Date(start).toISOString(), name, email: `${callId}@example.com` },
    { callId, direction: 'inbound', fromNumber: '+14155550100', toNumber: '+14155552222' },
  );
/** The lead of a call's seat: Cal.com's events find it by the seat's key (lead-appointment.ts). */
const leads = new Map<string, string>();
const leadOf = (callId: string) => leads.get(callId)!;
async function noteLead(session: string, callId: string) {
  const key = `${firm.slug}|${session}|seat|${callId}@example.com`;
  const doc = await stack.services.mongo.db
    .collection<{ _id: string; lead_id: string }>(COLLECTIONS.bookingLeads)
    .findOne({ _id: key });
  leads.set(callId, doc!.lead_id);
}
const iso = (ms: number) => new Date(ms).toISOString();
/** status by recipient (one reminder each). */
const byRecipient = (rows: ReminderRow[]) => Object.fromEntries(rows.map((r) => [r.to, r.status]));
/** Every booking event Cal.com sent so far has been applied (reminders days ahead stay delayed). */
async function eventsApplied() {
  await cal.settled();
  await eventually(async () => {
    const pending = await bookingJobs(stack, ['waiting', 'active', 'prioritized']);
    expect(pending.filter((j) => j.name === 'booking-event')).toEqual([]);
  });
}

/** Two calls booked into one seated session: its uid, and each caller's seat in the fake. */
async function twoSeats(a: string, b: string, start: number) {
  const first = await book(a, 'Ann Seat', start);
  const second = await book(b, 'Bob Seat', start);
  expect([first.body.booked, second.body.booked]).toEqual([true, true]);
  const session = first.body.booking_uid as string;
  expect(second.body.booking_uid).toBe(session);
  await noteLead(session, a);
  await noteLead(session, b);
  await eventsApplied();
  await remindersWhen(firm.client, firm.slug, session, (rows) =>
    expect(byRecipient(rows)).toEqual({
      [`${a}@example.com`]: 'scheduled',
      [`${b}@example.com`]: 'scheduled',
      [DESK]: 'scheduled',
    }),
  );
  const seats = new Map(
    cal.bookings.find((x) => x.uid === session)!.seats!.map((s) => [s.attendee.email, s.seatUid]),
  );
  const seatOf = (callId: string) => seats.get(`${callId}@example.com`);
  return { session, seatOf };
}

/** The other caller kept their seat, time, reminders and lead state; the mover has their own booking. */
async function onlyTheMoverMoved(session: string, mover: string, stayer: string, from: number, to: number) {
  const kept = cal.bookings.find((x) => x.uid === session)!;
  expect({ start: kept.start, status: kept.status, seats: kept.seats!.map((s) => s.attendee.email) }).toEqual(
    {
      start: iso(from),
      status: 'accepted',
      seats: [`${stayer}@example.com`],
    },
  );
  const moved = cal.bookings.find(
    (x) => x.uid !== session && x.seats?.some((s) => s.attendee.email === `${mover}@example.com`),
  )!;
  expect(moved.start).toBe(iso(to));
  await eventsApplied();
  expect(await appointmentOfLead(stack.services.mongo.db, leadOf(stayer))).toEqual({
    booking_uid: session,
    start: iso(from),
    status: 'booked',
  });
  expect(await appointmentOfLead(stack.services.mongo.db, leadOf(mover))).toEqual({
    booking_uid: moved.uid,
    start: iso(to),
    status: 'rescheduled',
  });
  await remindersWhen(firm.client, firm.slug, session, (rows) =>
    expect(byRecipient(rows)).toEqual({
      [`${mover}@example.com`]: 'cancelled',
      [`${stayer}@example.com`]: 'scheduled',
      [DESK]: 'scheduled',
    }),
  );
  await remindersWhen(firm.client, firm.slug, session, (rows) => {
    for (const r of rows) expect(r.due_at).toBe(iso(from - 3600_000));
  });
  await remindersWhen(firm.client, firm.slug, moved.uid, (rows) =>
    expect(byRecipient(rows)).toEqual({ [`${mover}@example.com`]: 'scheduled', [DESK]: 'scheduled' }),
  );
}

const reschedules = () => cal.requests.filter((r) => r.path.endsWith('/reschedule'));

describe('an agent moving its conversation’s seat of a seated session', () => {
  it('moves that seat alone, with its seatUid: the other lead’s seat, time, reminders and appointment stay', async () => {
    const { session, seatOf } = await twoSeats('call_seat_a', 'call_seat_b', slots[1]!);
    const moved = await book('call_seat_a', 'Ann Seat', slots[6]!);
    expect(moved.body).toMatchObject({ booked: true, status: 'rescheduled', start: iso(slots[6]!) });
    expect(moved.body.booking_uid).not.toBe(session);
    expect(reschedules().map((r) => [r.path, r.body])).toEqual([
      [`/v2/bookings/${session}/reschedule`, { start: iso(slots[6]!), seatUid: seatOf('call_seat_a') }],
    ]);
    await onlyTheMoverMoved(session, 'call_seat_a', 'call_seat_b', slots[1]!, slots[6]!);
  });

  it('a seat booked before seats were kept is found by the address it was booked with, and moved alone', async () => {
    const { session, seatOf } = await twoSeats('call_seat_c', 'call_seat_d', slots[2]!);
    // As an earlier release recorded it: no seat on the lead's appointment.
    await stack.services.mongo.db
      .collection<{ _id: string }>(COLLECTIONS.leadAppointments)
      .updateOne({ _id: leadOf('call_seat_d') }, { $unset: { seat_uid: '' } });
    const before = reschedules().length;
    const moved = await book('call_seat_d', 'Bob Seat', slots[7]!);
    expect(moved.body).toMatchObject({ booked: true, status: 'rescheduled', start: iso(slots[7]!) });
    expect(
      reschedules()
        .slice(before)
        .map((r) => r.body),
    ).toEqual([{ start: iso(slots[7]!), seatUid: seatOf('call_seat_d') }]);
    await onlyTheMoverMoved(session, 'call_seat_d', 'call_seat_c', slots[2]!, slots[7]!);
  });

  it('a seat Cal.com no longer lists under that address is not moved, and neither is anyone else', async () => {
    const { session } = await twoSeats('call_seat_e', 'call_seat_f', slots[3]!);
    await stack.services.mongo.db
      .collection<{ _id: string }>(COLLECTIONS.leadAppointments)
      .updateOne({ _id: leadOf('call_seat_e') }, { $unset: { seat_uid: '' } });
    // The attendee's address was changed on Cal.com since.
    const seat = cal.bookings
      .find((x) => x.uid === session)!
      .seats!.find((s) => s.attendee.email === 'call_seat_e@example.com')!;
    seat.attendee = { ...seat.attendee, email: 'ann.new@example.com' };
    const before = reschedules().length;
    const refused = await book('call_seat_e', 'Ann Seat', slots[8]!);
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ booked: false, reason: 'cannot_move' });
    expect(reschedules()).toHaveLength(before);
    expect(cal.bookings.find((x) => x.uid === session)).toMatchObject({
      start: iso(slots[3]!),
      status: 'accepted',
    });
    expect(await appointmentOfLead(stack.services.mongo.db, leadOf('call_seat_f'))).toEqual({
      booking_uid: session,
      start: iso(slots[3]!),
      status: 'booked',
    });
  });
});
