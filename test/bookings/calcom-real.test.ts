// Cal.com as it really sends (docs/bookings.md#seats, docs/bookings.md#video-links-and-ping), with bodies
// built as Cal.com builds them (test/fakes/calcom-fixtures.ts): seated bookings sharing one uid, the "Ping
// test" signed "no-secret-provided", and video meetings whose join link is in metadata.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachAppointment } from '../../core/domain/appointments/lead-appointment.js';
import { signCalWebhook } from '../../core/integrations/booking/cal-signature.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { bodyText, type FakeSmtp } from '../fakes/smtp-server.js';
import {
  CAL_NO_SECRET,
  calAttendee,
  calBookingPayload,
  calCancelled,
  calCreated,
  calPing,
  calRescheduled,
  calSeatPayload,
  calVideoFields,
  type CalPerson,
} from '../fakes/calcom-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, type Stack } from '../helpers/stack.js';
import {
  bookingEventsApplied as appliedBookingEvents,
  bookingJobs,
  postSigned,
  reminderFirm,
  reminders,
  remindersWhen,
  startMailingStack,
  stopMailingStack,
  uid,
  type ReminderRow,
} from './support.js';

const SECRET = 'whsec_calcom_real_secret';
const desk = 'desk@lawfirm.test';
const DAY = 24 * 3600_000;

let smtp: FakeSmtp;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let unsigned: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  ({ smtp, stack } = await startMailingStack());
  firm = await reminderFirm(stack, SECRET, desk, 'UTC');
  unsigned = await createFirm(stack);
});
afterAll(() => stopMailingStack({ smtp, stack }));

const send = (body: unknown) => postSigned(stack, firm.slug, body, SECRET);
const person = (name: string): CalPerson => ({
  name,
  email: `${name.toLowerCase().replace(/ /g, '.')}@example.com`,
  timeZone: 'Europe/Berlin',
});
/** A seated session `inMs` ahead (on a whole second, as Cal.com sends times), and event times from now. */
function seatedSession(inMs: number) {
  const t0 = Date.now();
  return {
    clinic: uid(),
    start: Math.ceil((t0 + inMs) / 1000) * 1000,
    at: (s: number) => new Date(t0 + s * 1000),
  };
}
/** status by recipient, one reminder each (one offset). */
const byRecipient = (rows: ReminderRow[]) => Object.fromEntries(rows.map((r) => [r.to, r.status]));
/**
 * No booking event waits or runs, in the queue or in the webhook outbox, where an add slower than
 * ENQUEUE_TIMEOUT_MS (a loaded machine) keeps a delivery until the workers' drain moves it
 * (reminders days ahead stay delayed meanwhile).
 */
const bookingEventsApplied = () => appliedBookingEvents(stack);
const bookingEventCount = async () =>
  (await bookingJobs(stack)).filter((j) => j.name === 'booking-event').length;

describe('Cal.com seated bookings share one uid', () => {
  it('a new seat adds its attendee’s reminders (the firm’s not doubled); a seat cancel cancels only the leaver’s and leaves the uid open; a seat reschedule moves only that seat; a whole cancel cancels all; repeats change nothing', async () => {
    const { clinic, start, at } = seatedSession(3 * DAY);
    const [ann, bob, cem, dee, eve] = ['Ann Lee', 'Bob Stone', 'Cem Kaya', 'Dee Park', 'Eve Moss'].map(
      person,
    );

    // First seat.
    const annSeat = calSeatPayload(clinic, start, ann!, 'seat-ann');
    expect((await send(calCreated(annSeat, at(0)))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(byRecipient(rows)).toEqual({ [ann!.email]: 'scheduled', [desk]: 'scheduled' }),
    );

    // Second and third seats: same uid, same start, each naming only its own attendee.
    const bobCreated = calCreated(calSeatPayload(clinic, start, bob!, 'seat-bob'), at(1));
    expect((await send(bobCreated)).status).toBe(200);
    expect((await send(calCreated(calSeatPayload(clinic, start, cem!, 'seat-cem'), at(2)))).status).toBe(200);
    const seated = await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(byRecipient(rows)).toEqual({
        [ann!.email]: 'scheduled',
        [bob!.email]: 'scheduled',
        [cem!.email]: 'scheduled',
        [desk]: 'scheduled',
      }),
    );
    expect(seated.length).toBe(4); // the firm's reminder once, not once per seat
    expect(new Set(seated.map((r) => r.due_at))).toEqual(new Set([new Date(start - 60_000).toISOString()]));

    // A repeated delivery of a seat, and a repeat of the first seat: nothing changes.
    const jobs = await bookingEventCount();
    expect((await send(bobCreated)).status).toBe(200);
    expect((await send(calCreated(annSeat, at(0)))).status).toBe(200);
    await bookingEventsApplied();
    expect(await bookingEventCount()).toBe(jobs);
    expect(await reminders(firm.client, firm.slug, clinic)).toEqual(seated);

    // Bob leaves: a BOOKING_CANCELLED of the booking naming only him.
    expect((await send(calCancelled(calSeatPayload(clinic, start, bob!, 'seat-bob'), at(3)))).status).toBe(
      200,
    );
    await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(byRecipient(rows)).toEqual({
        [ann!.email]: 'scheduled',
        [bob!.email]: 'cancelled',
        [cem!.email]: 'scheduled',
        [desk]: 'scheduled',
      }),
    );

    // Bob's seat delivered again afterwards, re-serialized (so a new delivery, not a job
    // repeat): it was made before he left, so he stays out.
    const reserialized = JSON.stringify(bobCreated, null, 1);
    expect((await postSigned(stack, firm.slug, bobCreated, SECRET, { raw: reserialized })).status).toBe(200);
    await bookingEventsApplied();
    expect(byRecipient(await reminders(firm.client, firm.slug, clinic))[bob!.email]).toBe('cancelled');

    // The uid is not blocked: a new seat still gets its reminders.
    expect((await send(calCreated(calSeatPayload(clinic, start, dee!, 'seat-dee'), at(4)))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(byRecipient(rows)[dee!.email]).toBe('scheduled'),
    );

    // Cem moves his seat to another time: a new booking for him; the others stay.
    const later = start + DAY;
    const moved = uid();
    const cemMoved = calRescheduled(clinic, start, calSeatPayload(moved, later, cem!, 'seat-cem'), at(5));
    expect((await send(cemMoved)).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(byRecipient(rows)).toEqual({
        [ann!.email]: 'scheduled',
        [bob!.email]: 'cancelled',
        [cem!.email]: 'cancelled',
        [dee!.email]: 'scheduled',
        [desk]: 'scheduled',
      }),
    );
    await remindersWhen(firm.client, firm.slug, moved, (rows) => {
      expect(byRecipient(rows)).toEqual({ [cem!.email]: 'scheduled', [desk]: 'scheduled' });
      expect(rows[0]!.due_at).toBe(new Date(later - 60_000).toISOString());
    });

    // The host cancels the whole booking: Cal.com names every attendee left.
    const whole = calSeatPayload(clinic, start, ann!, 'seat-ann');
    whole.attendees = [ann!, dee!].map(calAttendee);
    expect((await send(calCancelled(whole, at(6)))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(rows.every((r) => r.status === 'cancelled')).toBe(true),
    );
    // Now the uid is closed: a late seat adds nothing. The moved seat's booking is untouched.
    expect((await send(calCreated(calSeatPayload(clinic, start, eve!, 'seat-eve'), at(7)))).status).toBe(200);
    await bookingEventsApplied();
    const closed = await reminders(firm.client, firm.slug, clinic);
    expect(closed.map((r) => r.to)).not.toContain(eve!.email);
    expect(closed.every((r) => r.status === 'cancelled')).toBe(true);
    expect(byRecipient(await reminders(firm.client, firm.slug, moved))).toEqual({
      [cem!.email]: 'scheduled',
      [desk]: 'scheduled',
    });
  });

  it("a seat's cancel that arrives before its booking's CREATEDs: the later seats get their reminders, the leaver none (and the firm only with a seat)", async () => {
    const { clinic, start, at } = seatedSession(3 * DAY);
    const [ann, bob] = ['Ann Vale', 'Bob Crane'].map(person);
    // Cal.com made Ann's and Bob's seats, then Bob cancelled his; the cancel comes first.
    expect((await send(calCancelled(calSeatPayload(clinic, start, bob!, 'seat-bob'), at(3)))).status).toBe(
      200,
    );
    await bookingEventsApplied();
    expect((await send(calCreated(calSeatPayload(clinic, start, bob!, 'seat-bob'), at(1)))).status).toBe(200);
    await bookingEventsApplied();
    // Bob left by a later event, and no one is on the booking: no reminder, the firm's neither.
    expect(await reminders(firm.client, firm.slug, clinic)).toEqual([]);
    expect((await send(calCreated(calSeatPayload(clinic, start, ann!, 'seat-ann'), at(0)))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(byRecipient(rows)).toEqual({ [ann!.email]: 'scheduled', [desk]: 'scheduled' }),
    );
  });

  it("a seat's cancel applied after its own seat's CREATED and before another seat's: that seat still gets its reminders, and the firm's come back with it", async () => {
    const { clinic, start, at } = seatedSession(3 * DAY);
    const [ann, bob] = ['Ann Dorr', 'Bob Sime'].map(person);
    // Cal.com made Ann's seat, then Bob's, then Bob cancelled his (a seat's cancel names him
    // only); Bob's two events come in order, Ann's CREATED last.
    expect((await send(calCreated(calSeatPayload(clinic, start, bob!, 'seat-bob'), at(1)))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(byRecipient(rows)).toEqual({ [bob!.email]: 'scheduled', [desk]: 'scheduled' }),
    );
    expect((await send(calCancelled(calSeatPayload(clinic, start, bob!, 'seat-bob'), at(3)))).status).toBe(
      200,
    );
    // No one is on it now: nothing is to be sent, the firm's reminder neither (as for a whole
    // cancel of a booking with one seat, which names its one attendee too).
    await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(byRecipient(rows)).toEqual({ [bob!.email]: 'cancelled', [desk]: 'cancelled' }),
    );
    expect((await send(calCreated(calSeatPayload(clinic, start, ann!, 'seat-ann'), at(0)))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, clinic, (rows) =>
      expect(byRecipient(rows)).toEqual({
        [ann!.email]: 'scheduled',
        [bob!.email]: 'cancelled',
        [desk]: 'scheduled',
      }),
    );
  });

  it("a seat's cancel that arrives before that seat's CREATED, on a booking known: the late seat stays out", async () => {
    const { clinic, start, at } = seatedSession(3 * DAY);
    const [ann, bob] = ['Ann Reed', 'Bob Hale'].map(person);
    expect((await send(calCreated(calSeatPayload(clinic, start, ann!, 'seat-ann'), at(0)))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, clinic, (rows) => expect(rows.length).toBe(2));
    expect((await send(calCancelled(calSeatPayload(clinic, start, bob!, 'seat-bob'), at(2)))).status).toBe(
      200,
    );
    await bookingEventsApplied();
    expect((await send(calCreated(calSeatPayload(clinic, start, bob!, 'seat-bob'), at(1)))).status).toBe(200);
    await bookingEventsApplied();
    expect(byRecipient(await reminders(firm.client, firm.slug, clinic))).toEqual({
      [ann!.email]: 'scheduled',
      [desk]: 'scheduled',
    });
  });

  it("a seat's reschedule that arrives before its old booking's CREATEDs: the old booking's other seats get their reminders at its own time, the mover only at the new one", async () => {
    // A start about 65 s ahead: the one-minute reminders of the old booking are due in about 5 s.
    // Ann's must still be listed scheduled before then: three deliveries, each applied, and the
    // listings (about 0.35 s here), so 5 s is over ten times that, and has room for a delivery
    // kept in the webhook outbox (an add slower than ENQUEUE_TIMEOUT_MS, 2 s, then the drain's second).
    const { clinic, start, at } = seatedSession(65_000);
    const later = start + DAY;
    const moved = uid();
    const [ann, bob] = ['Ann Quill', 'Bob Fenn'].map(person);
    // Cal.com made Ann's and Bob's seats, then Bob moved his seat a day later (a new booking; Cal.com
    // sends the old uid and the old booking's time with it). The reschedule comes first; its new
    // booking has a video link of its own.
    const bobMoved = calRescheduled(
      clinic,
      start,
      calSeatPayload(moved, later, bob!, 'seat-bob', calVideoFields(moved)),
      at(3),
    );
    expect(bobMoved.payload.rescheduleStartTime).toBe(new Date(start).toISOString().replace('.000Z', 'Z'));
    expect((await send(bobMoved)).status).toBe(200);
    await bookingEventsApplied();
    expect((await send(calCreated(calSeatPayload(clinic, start, bob!, 'seat-bob'), at(1)))).status).toBe(200);
    await bookingEventsApplied();
    // Bob left the old booking by a later event, and no one is on it yet: nothing there.
    expect(await reminders(firm.client, firm.slug, clinic)).toEqual([]);
    const annSeat = calSeatPayload(clinic, start, ann!, 'seat-ann', { location: 'Room 4, 1 Main St' });
    expect((await send(calCreated(annSeat, at(0)))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, clinic, (rows) => {
      expect(byRecipient(rows)).toEqual({ [ann!.email]: 'scheduled', [desk]: 'scheduled' });
      // At the old booking's own time, not the new one's.
      expect(rows.every((r) => r.due_at === new Date(start - 60_000).toISOString())).toBe(true);
    });
    await remindersWhen(firm.client, firm.slug, moved, (rows) =>
      expect(byRecipient(rows)).toEqual({ [bob!.email]: 'scheduled', [desk]: 'scheduled' }),
    );
    // Ann's reminder names her booking's place, not the link of the booking Bob moved to.
    const annText = await eventually(async () => {
      const mail = smtp.messages.find((m) => m.to.includes(ann!.email));
      expect(mail).toBeDefined();
      return bodyText(mail!);
    }, 60_000);
    expect(annText).toContain('Where: Room 4, 1 Main St');
    expect(annText).not.toContain('Join:');
  });

  it('a seated booking first seen by a cancel naming all its attendees is cancelled whole: its late seats get nothing', async () => {
    const { clinic, start, at } = seatedSession(3 * DAY);
    const [ann, bob] = ['Ann Moor', 'Bob Lark'].map(person);
    const whole = calSeatPayload(clinic, start, ann!, 'seat-ann');
    whole.attendees = [ann!, bob!].map(calAttendee);
    expect((await send(calCancelled(whole, at(3)))).status).toBe(200);
    await bookingEventsApplied();
    expect((await send(calCreated(calSeatPayload(clinic, start, ann!, 'seat-ann'), at(0)))).status).toBe(200);
    await bookingEventsApplied();
    expect(await reminders(firm.client, firm.slug, clinic)).toEqual([]);
  });

  it('an ordinary (unseated) booking cancelled is cancelled for everyone', async () => {
    const bookingUid = uid();
    const start = Date.now() + 3 * DAY;
    const [gus, hal] = ['Gus Ray', 'Hal Wu'].map(person);
    const payload = calBookingPayload(bookingUid, start, [gus!, hal!]);
    expect((await send(calCreated(payload))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, bookingUid, (rows) => expect(rows.length).toBe(3));
    // Even a cancel naming one attendee: without seats, the booking is one.
    expect((await send(calCancelled({ ...payload, attendees: [payload.attendees[0]!] }))).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, bookingUid, (rows) =>
      expect(rows.map((r) => r.status)).toEqual(['cancelled', 'cancelled', 'cancelled']),
    );
  });
});

describe('Cal.com seated bookings: each lead follows its own seat', () => {
  it("two leads booked into one seated slot share its uid: a seat's cancel or reschedule moves only that seat's lead, a whole cancel every lead still on it", async () => {
    const { clinic, start, at } = seatedSession(3 * DAY);
    const [ann, bob, cy] = ['Ann Lowe', 'Bob Marsh', 'Cy Penn'].map(person);
    const lead = async (p: CalPerson) => {
      const [first_name, last_name] = p.name.split(' ');
      const res = await firm.client.post('/api/leads', {
        firmSlug: firm.slug,
        first_name,
        last_name,
        email: p.email,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.id as string;
    };
    const [annLead, bobLead, cyLead] = [await lead(ann!), await lead(bob!), await lead(cy!)];
    // We booked each of them into the same session (Cal.com answers every seat with the one
    // booking uid and a seatUid of its own), Ann first; the attendee's address as we sent it.
    const booked = { booking_uid: clinic, start: new Date(start).toISOString(), status: 'booked' as const };
    await attachAppointment(stack.services, firm.slug, annLead, booked, ann!.email);
    await attachAppointment(stack.services, firm.slug, bobLead, booked, bob!.email.toUpperCase());
    await attachAppointment(stack.services, firm.slug, cyLead, booked, cy!.email);
    const appointmentOf = async (leadId: string) =>
      (await firm.client.get(`/api/leads/${leadId}`)).body.appointment as Record<string, unknown>;

    // Ann cancels her seat: Cal.com's seat cancel names her only.
    expect((await send(calCancelled(calSeatPayload(clinic, start, ann!, 'seat-ann'), at(1)))).status).toBe(
      200,
    );
    await bookingEventsApplied();
    expect(await appointmentOf(annLead)).toMatchObject({ booking_uid: clinic, status: 'cancelled' });
    expect(await appointmentOf(bobLead)).toMatchObject({ booking_uid: clinic, status: 'booked' });
    expect(await appointmentOf(cyLead)).toMatchObject({ booking_uid: clinic, status: 'booked' });

    // Bob moves his seat a day later: a new booking for him; Cy stays.
    const moved = uid();
    const bobMoved = calRescheduled(
      clinic,
      start,
      calSeatPayload(moved, start + DAY, bob!, 'seat-bob'),
      at(2),
    );
    expect((await send(bobMoved)).status).toBe(200);
    await bookingEventsApplied();
    expect(await appointmentOf(bobLead)).toMatchObject({ booking_uid: moved, status: 'rescheduled' });
    expect(await appointmentOf(cyLead)).toMatchObject({ booking_uid: clinic, status: 'booked' });
    // Bob's new booking is his: its cancel reaches him.
    const bobOut = calCancelled(calSeatPayload(moved, start + DAY, bob!, 'seat-bob'), at(3));
    expect((await send(bobOut)).status).toBe(200);
    await bookingEventsApplied();
    expect(await appointmentOf(bobLead)).toMatchObject({ booking_uid: moved, status: 'cancelled' });

    // The host cancels the session: Cal.com names every attendee left.
    const whole = calSeatPayload(clinic, start, cy!, 'seat-cy');
    whole.attendees = [cy!, person('Dee Walk')].map(calAttendee);
    expect((await send(calCancelled(whole, at(4)))).status).toBe(200);
    await bookingEventsApplied();
    expect(await appointmentOf(cyLead)).toMatchObject({ booking_uid: clinic, status: 'cancelled' });
    expect(await appointmentOf(annLead)).toMatchObject({ booking_uid: clinic, status: 'cancelled' });
  });
  it('a seated booking mapped to its lead by an earlier release (no attendee on the mapping) is followed as before', async () => {
    const { clinic, start } = seatedSession(3 * DAY);
    const eve = person('Eve Holt');
    const made = await firm.client.post('/api/leads', {
      firmSlug: firm.slug,
      first_name: 'Eve',
      email: eve.email,
    });
    const leadId = made.body.id as string;
    await attachAppointment(stack.services, firm.slug, leadId, {
      booking_uid: clinic,
      start: new Date(start).toISOString(),
      status: 'booked',
    });
    // As the release before seats wrote it: the uid alone.
    await stack.services.mongo.db
      .collection(COLLECTIONS.bookingLeads)
      .replaceOne({ _id: `${firm.slug}|${clinic}` as never }, { firm: firm.slug, lead_id: leadId });
    expect((await send(calCancelled(calSeatPayload(clinic, start, eve, 'seat-eve')))).status).toBe(200);
    await bookingEventsApplied();
    expect((await firm.client.get(`/api/leads/${leadId}`)).body.appointment).toMatchObject({
      booking_uid: clinic,
      status: 'cancelled',
    });
  });
});

describe('Cal.com’s "Ping test"', () => {
  const post = (slug: string, body: unknown, signature?: string) => {
    const raw = JSON.stringify(body);
    return stack.api.request('POST', `/api/v2/${slug}/booking-webhook`, {
      rawBody: raw,
      headers: {
        'Content-Type': 'application/json',
        ...(signature === undefined ? {} : { 'X-Cal-Signature-256': signature }),
      },
    });
  };

  it('PING signed "no-secret-provided" (or unsigned, or badly signed, or well signed) answers 200 {received: true} and does nothing', async () => {
    const before = await bookingEventCount();
    const ping = calPing();
    const raw = JSON.stringify(ping);
    for (const res of [
      await post(firm.slug, ping, CAL_NO_SECRET),
      await post(unsigned.slug, ping, CAL_NO_SECRET),
      await post(firm.slug, ping),
      await post(firm.slug, ping, signCalWebhook(raw, 'not-the-secret')),
      await post(firm.slug, ping, signCalWebhook(raw, SECRET)),
    ]) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ received: true });
    }
    expect(await bookingEventCount()).toBe(before);
  });

  it('only PING is let in so: a booking event signed "no-secret-provided" is still 401, and a PING to an unknown firm 200 as to a known one', async () => {
    const bookingUid = uid();
    const created = calCreated(calBookingPayload(bookingUid, Date.now() + 3 * DAY, [person('Ivy Fox')]));
    expectError(await post(firm.slug, created, CAL_NO_SECRET), 401, 'unauthorized');
    expectError(await post(unsigned.slug, created, CAL_NO_SECRET), 401, 'unauthorized');
    expectError(await post(firm.slug, created), 401, 'unauthorized');
    // A booking trigger dressed up with a PING elsewhere in the body is no PING.
    expectError(
      await post(firm.slug, { ...created, note: { triggerEvent: 'PING' } }, CAL_NO_SECRET),
      401,
      'unauthorized',
    );
    // A large body is not read as a PING.
    const padded = { ...calPing(), pad: 'x'.repeat(20_000) };
    expectError(await post(firm.slug, padded, CAL_NO_SECRET), 401, 'unauthorized');
    // Whether a firm exists is not told to a sender without credentials (docs/webhooks.md).
    const unknown = await post('no-such-firm-here', calPing(), CAL_NO_SECRET);
    expect([unknown.status, unknown.body]).toEqual([200, { received: true }]);
    await bookingEventsApplied();
    expect(await reminders(firm.client, firm.slug, bookingUid)).toEqual([]);
  });
});

describe('Cal.com video meetings', () => {
  it('reminder mails carry the join link (metadata.videoCallUrl, else videoCallData.url, else a URL location), the place otherwise, and never a non-http link', async () => {
    // A start about 63 s ahead: the one-minute reminders are due in about 3 s. Only the webhook's
    // receipt of each booking must come before that (a reminder already due when its event arrives
    // is skipped); nothing is looked at before the mails. The four are sent at once, so a slow
    // delivery does not hold back the receipt of the next.
    const start = Math.ceil((Date.now() + 63_000) / 1000) * 1000;
    const [kim, lou, max, ned] = ['Kim Ode', 'Lou Iva', 'Max Orr', 'Ned Ash'].map(person);
    const daily = uid();
    const room = uid();
    const office = uid();
    const hostile = uid();
    const roomOnly = calBookingPayload(room, start, [lou!], calVideoFields(room));
    roomOnly.metadata = {};
    const bodies = [
      calCreated(calBookingPayload(daily, start, [kim!], calVideoFields(daily))),
      calCreated(roomOnly),
      calCreated(calBookingPayload(office, start, [max!])),
      calCreated(
        calBookingPayload(hostile, start, [ned!], {
          location: 'javascript:alert(1)',
          metadata: { videoCallUrl: 'javascript:alert(document.cookie)' },
          videoCallData: {
            type: 'daily_video',
            id: 'x',
            password: 'x',
            url: 'data:text/html,<script>1</script>',
          },
        }),
      ),
    ];
    for (const res of await Promise.all(bodies.map(send))) expect(res.status).toBe(200);
    const mailTo = (to: string, bookingUid: string) =>
      eventually(async () => {
        const mail = smtp.messages.find(
          (m) => m.to.includes(to) && (to !== desk || bodyText(m).includes(bookingUid)),
        );
        expect(mail).toBeDefined();
        return bodyText(mail!);
      }, 60_000);

    const kimText = await mailTo(kim!.email, daily);
    expect(kimText).toContain(`Join: https://app.cal.com/video/${daily}`);
    expect(kimText).not.toContain('integrations:daily');
    const deskDaily = await mailTo(desk, daily);
    expect(deskDaily).toContain(`Join: https://app.cal.com/video/${daily}`);

    expect(await mailTo(lou!.email, room)).toContain(`Join: https://meetco.daily.co/room${room}`);

    const maxText = await mailTo(max!.email, office);
    expect(maxText).toContain('Where: 12 Main St, Suite 400');
    expect(maxText).not.toContain('Join:');

    const nedText = await mailTo(ned!.email, hostile);
    expect(nedText).not.toContain('Join:');
    expect(nedText).not.toContain('data:text');
    expect(nedText).not.toMatch(/javascript:alert\(document/);
  });
});
