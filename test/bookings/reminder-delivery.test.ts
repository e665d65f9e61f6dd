// Booking reminders reaching a real SMTP server (test/fakes/smtp-server.ts) through the workers:
// sent at their due time, never after a cancel (even with the send job already queued), once per
// reminder whatever the deliveries, retried when SMTP refuses, and never twice once accepted.
// Reminders are made due within seconds by a one-minute offset before a start about a minute ahead.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOBS } from '../../jobs/table.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import {
  readBookingReminders,
  reminderField,
  type BookingRecord,
  type ReminderStore,
} from '../../core/domain/bookings/reminder-records.js';
import { cancelBookingReminders } from '../../core/domain/bookings/reminder-schedule.js';
import { finishReminder, leaseReminder } from '../../core/domain/bookings/reminder-lease.js';
import { sendBookingReminder } from '../../core/domain/bookings/reminders.js';
import { bodyText, type FakeSmtp } from '../fakes/smtp-server.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, rand, type Stack } from '../helpers/stack.js';
import {
  bookingJobs,
  calBooking,
  calEvent,
  postSigned,
  reminderFirm,
  reminders,
  remindersWhen,
  startMailingStack,
  stopMailingStack,
  storeDueReminder,
  uid,
  type Attendee,
} from './support.js';

const SECRET = 'whsec_reminder_delivery_secret';
const desk = 'desk@lawfirm.test';

let smtp: FakeSmtp;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
/** The twin booking the first test had mailed, whose mails the second test reads. */
let mailed: { uid: string; start: number } | undefined;

beforeAll(async () => {
  ({ smtp, stack } = await startMailingStack());
  firm = await reminderFirm(stack, SECRET, desk, 'Asia/Tokyo');
});
afterAll(() => stopMailingStack({ smtp, stack }));

/**
 * A start a minute and `dueInMs` ahead on a whole second: the one-minute reminder is due in about
 * `dueInMs` (long enough for what a test must see before it, no longer: the test waits for it).
 */
const soon = (dueInMs: number) => Math.ceil((Date.now() + 60_000 + dueInMs) / 1000) * 1000;
const send = (slug: string, body: unknown) => postSigned(stack, slug, body, SECRET);
const mailsTo = (address: string) => smtp.messages.filter((m) => m.to.includes(address));
const mailsAbout = (bookingUid: string) => smtp.messages.filter((m) => bodyText(m).includes(bookingUid));

/** "3:30 PM" for a UTC instant shifted by a fixed offset (zones without daylight saving). */
function clock(ms: number, offsetMinutes: number): string {
  const d = new Date(ms + offsetMinutes * 60_000);
  const h = d.getUTCHours();
  return `${h % 12 === 0 ? 12 : h % 12}:${String(d.getUTCMinutes()).padStart(2, '0')} ${h < 12 ? 'AM' : 'PM'}`;
}

/** The id of the send job of a booking's 1-minute reminder to `to`. */
const sendJobId = (slug: string, bookingUid: string, startMs: number, to: string) =>
  JOBS.sendReminder.id!({
    firm: slug,
    booking_uid: bookingUid,
    reminder: reminderField(startMs, 1, to),
    due_at: startMs - 60_000,
  });
const sendJobState = (slug: string, bookingUid: string, startMs: number, to: string) =>
  stack.services.queues.bookings.getJobState(sendJobId(slug, bookingUid, startMs, to));

describe('reminders sent when due', () => {
  it('a cancelled booking’s reminder is never mailed, even with its send queued; its uncancelled twin’s is mailed at its due time and shows sent', async () => {
    // The twin's is due in 5 s. Only the two POSTs and the twin's listing as scheduled must come
    // before it (about 0.1 s here: the twin is listed first, and what follows may run past its
    // due time); 5 s has room for even a delivery kept in the webhook outbox (an add slower than
    // ENQUEUE_TIMEOUT_MS, 2 s, then the drain's second). The cancelled one's in 10 minutes, so no
    // stall of a loaded machine lets it come before the cancel: once the cancel is applied, its
    // sends are made due.
    const startMs = soon(5000);
    const due = startMs - 60_000;
    const cancelledStart = soon(600_000);
    const ann: Attendee = { email: 'ann@example.com', name: 'Ann Lee', timeZone: 'Asia/Kolkata' };
    const bob: Attendee = { email: 'bob@example.com', name: 'Bob Stone', timeZone: 'Asia/Kolkata' };
    const cancelled = uid();
    const twin = uid();
    expect(
      (await send(firm.slug, calEvent('BOOKING_CREATED', calBooking(twin, startMs, [bob])))).status,
    ).toBe(200);
    expect(
      (await send(firm.slug, calEvent('BOOKING_CREATED', calBooking(cancelled, cancelledStart, [ann]))))
        .status,
    ).toBe(200);
    for (const [bookingUid, to, start] of [
      [twin, bob.email, startMs],
      [cancelled, ann.email, cancelledStart],
    ] as const) {
      await remindersWhen(firm.client, firm.slug, bookingUid, (rows) =>
        expect(rows).toEqual(
          [desk, to].sort().map((address) => ({
            booking_uid: bookingUid,
            due_at: new Date(start - 60_000).toISOString(),
            channel: 'email',
            to: address,
            status: 'scheduled',
          })),
        ),
      );
    }
    // The send job of the booking about to be cancelled is already queued, waiting for its time.
    await eventually(async () =>
      expect(await sendJobState(firm.slug, cancelled, cancelledStart, ann.email)).toBe('delayed'),
    );

    const cancel = calEvent(
      'BOOKING_CANCELLED',
      calBooking(cancelled, cancelledStart, [ann], { status: 'CANCELLED' }),
    );
    expect((await send(firm.slug, cancel)).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, cancelled, (rows) =>
      expect(rows.map((r) => r.status)).toEqual(['cancelled', 'cancelled']),
    );
    // Still before the due time: the cancel did not race the send here (the race is tested below).
    // Its queued sends run now, as they would at their time.
    for (const to of [ann.email, desk]) {
      expect(await sendJobState(firm.slug, cancelled, cancelledStart, to)).toBe('delayed');
      await (await stack.services.queues.bookings.getJob(
        sendJobId(firm.slug, cancelled, cancelledStart, to),
      ))!.promote();
    }

    await eventually(() => Promise.resolve(expect(mailsTo(bob.email).length).toBe(1)), 60_000);
    await remindersWhen(firm.client, firm.slug, twin, (rows) =>
      expect(rows.map((r) => r.status)).toEqual(['sent', 'sent']),
    );
    // The queued sends of the cancelled booking ran, and sent nothing.
    await eventually(async () => {
      expect(await sendJobState(firm.slug, cancelled, cancelledStart, ann.email)).toBe('completed');
      expect(await sendJobState(firm.slug, cancelled, cancelledStart, desk)).toBe('completed');
    });
    expect(mailsTo(ann.email)).toEqual([]);
    expect(mailsAbout(cancelled)).toEqual([]);
    expect(mailsAbout(twin).length).toBe(1); // the firm's copy
    expect(await reminders(firm.client, firm.slug, cancelled)).toEqual(
      [desk, ann.email].sort().map((to) => expect.objectContaining({ to, status: 'cancelled' })),
    );

    // Mailed at its due time, not before: the Date header is set when the mail is made.
    const bobMail = mailsTo(bob.email)[0]!;
    expect(Date.parse(bobMail.header('date')!)).toBeGreaterThanOrEqual(Math.floor(due / 1000) * 1000);
    const { reminders: stored } = await readBookingReminders(
      { redis: stack.services.redis, keys: redisKeys(stack.config) },
      firm.slug,
      twin,
    );
    for (const r of stored) expect(r.sent_at).toBeGreaterThanOrEqual(due);
    mailed = { uid: twin, start: startMs };
  });

  it('the mail: the booking’s title and time in the attendee’s time zone; the firm’s copy in the firm’s', async () => {
    // The mails of the previous test: Bob in Asia/Kolkata (UTC+5:30), the firm in Asia/Tokyo (UTC+9).
    expect(mailed, 'runs after the previous test').toBeDefined();
    const { uid: twinUid, start } = mailed!;
    const bob = mailsTo('bob@example.com')[0]!;
    const text = bodyText(bob);
    expect(bob.header('subject')).toContain('Reminder: Initial consultation');
    expect(bob.header('subject')).toContain(`${clock(start, 330)} GMT+5:30`);
    expect(bob.header('from')).toBe('Reminders <reminders@lawfirm.test>');
    expect(bob.header('message-id')).toMatch(/^<reminder\.[0-9a-f]{32}@lawfirm\.test>$/);
    expect(text).toContain('Hello Bob Stone,');
    expect(text).toContain('"Initial consultation"');
    expect(text).toContain(`at ${clock(start, 330)} GMT+5:30 (Asia/Kolkata)`);
    expect(text).toContain('Duration: 30 minutes');
    expect(text).toContain('With: Alex Counsel');
    // The location is the meeting's link (metadata.videoCallUrl too): shown once, to join.
    expect(text).toContain('Join: https://cal.com/video/abc123');
    expect(text).not.toContain('Where:');
    expect(text).toContain(`Firm ${firm.slug}`);

    const copy = mailsTo(desk).find((m) => bodyText(m).includes(twinUid))!;
    const copyText = bodyText(copy);
    expect(copy.to).toEqual([desk]);
    expect(copyText).toContain(`at ${clock(start, 540)} GMT+9 (Asia/Tokyo)`);
    expect(copyText).toContain('Attendees: Bob Stone <bob@example.com>');
    expect(copy.header('subject')).toContain('with Bob Stone <bob@example.com>');
  });

  it('a duplicated delivery, 5 times at once and 3 times later, mails each reminder once', async () => {
    const startMs = soon(3000);
    const cat: Attendee = { email: 'cat@example.com', name: 'Cat Wu', timeZone: 'Europe/Paris' };
    const bookingUid = uid();
    const event = calEvent('BOOKING_CREATED', calBooking(bookingUid, startMs, [cat]));
    await Promise.all(Array.from({ length: 5 }, () => send(firm.slug, event)));
    await remindersWhen(firm.client, firm.slug, bookingUid, (rows) => expect(rows.length).toBe(2));
    for (let i = 0; i < 3; i++) expect((await send(firm.slug, event)).status).toBe(200);
    await remindersWhen(firm.client, firm.slug, bookingUid, (rows) =>
      expect(rows.map((r) => r.status)).toEqual(['sent', 'sent']),
    );
    await eventually(async () => {
      const pending = await bookingJobs(stack, ['waiting', 'active', 'delayed']);
      expect(pending.filter((j) => j.data.uid === bookingUid || j.data.booking_uid === bookingUid)).toEqual(
        [],
      );
    });
    expect(mailsTo(cat.email).length).toBe(1);
    expect(mailsAbout(bookingUid).length).toBe(1);
  });
});

describe('send failures', () => {
  it('SMTP refusing twice (451): retried with backoff, mailed once, shows sent; a later run of the send mails nothing', async () => {
    const quiet = await createFirm(stack, { booking_webhook_secret: SECRET, reminder_offsets_minutes: [1] });
    const dan: Attendee = { email: 'dan@example.com', name: 'Dan Ruiz', timeZone: 'America/Denver' };
    // Due in 3 s: only the webhook's receipt must come before it (a reminder already due when its
    // event arrives is skipped), one POST, a few milliseconds here. Nothing is asserted before
    // the send: SMTP is told to refuse before the booking comes (a loaded machine could take
    // longer than those 3 s to see the reminder listed).
    const startMs = soon(3000);
    const bookingUid = uid();
    smtp.failNext(2);
    await send(quiet.slug, calEvent('BOOKING_CREATED', calBooking(bookingUid, startMs, [dan])));
    await remindersWhen(quiet.client, quiet.slug, bookingUid, (rows) => expect(rows.length).toBe(1));
    await remindersWhen(quiet.client, quiet.slug, bookingUid, (rows) =>
      expect(rows.map((r) => r.status)).toEqual(['sent']),
    );
    expect(mailsTo(dan.email).length).toBe(1);
    const store: ReminderStore = { redis: stack.services.redis, keys: redisKeys(stack.config) };
    const [record] = (await readBookingReminders(store, quiet.slug, bookingUid)).reminders;
    expect(record).toMatchObject({ status: 'sent', attempts: 3 });
    expect(record!.last_error).toBeUndefined();

    // The job run again (a stalled job taken over, a retry after a lost reply): nothing is sent.
    const again = await sendBookingReminder(
      stack.services,
      {
        firm: quiet.slug,
        booking_uid: bookingUid,
        reminder: reminderField(startMs, 1, dan.email),
        due_at: startMs - 60_000,
      },
      { lastAttempt: false },
    );
    expect(again).toEqual({ outcome: 'sent' });
    expect(mailsTo(dan.email).length).toBe(1);
  });
});

describe('a cancel racing a send (the Redis record, atomically)', () => {
  const store = (): ReminderStore => ({ redis: stack.services.redis, keys: redisKeys(stack.config) });
  const raceFirm = `race-${rand(3)}`;

  const stored = () =>
    storeDueReminder(store(), raceFirm, 'x@example.com', {
      firmName: 'Race firm',
      maxDue: stack.config.bookingRemindersPerFirm,
    });
  const cancel = (bookingUid: string) =>
    cancelBookingReminders(store(), raceFirm, bookingUid, {
      state: 'cancelled',
      tombstone: {} as BookingRecord,
      now: Date.now(),
      expireAt: Date.now() + 3600_000,
    });
  const lease = (bookingUid: string, field: string, token: string, now = Date.now()) =>
    leaseReminder(store(), raceFirm, bookingUid, field, { now, leaseMs: 60_000, token });
  const status = async (bookingUid: string) =>
    (await readBookingReminders(store(), raceFirm, bookingUid)).reminders[0]!.status;

  it('cancel first: the lease finds it cancelled and nothing is sent', async () => {
    const { uid: u, field } = await stored();
    expect(await cancel(u)).toEqual({ outcome: 'cancelled', stopped: 1 });
    expect(await lease(u, field, 't1')).toEqual({ outcome: 'cancelled' });
  });

  it('lease first: the cancel cannot stop a mail in flight; the reminder ends sent, or cancelled if the send failed', async () => {
    const a = await stored();
    expect((await lease(a.uid, a.field, 't1')).outcome).toBe('leased');
    expect(await cancel(a.uid)).toEqual({ outcome: 'cancelled', stopped: 1 });
    expect(await lease(a.uid, a.field, 't2')).toMatchObject({ outcome: 'busy' });
    await finishReminder(store(), raceFirm, a.uid, a.field, {
      token: 't1',
      outcome: 'sent',
      now: Date.now(),
      detail: '<m@x>',
    });
    expect(await status(a.uid)).toBe('sent');

    const b = await stored();
    expect((await lease(b.uid, b.field, 't1')).outcome).toBe('leased');
    await cancel(b.uid);
    await finishReminder(store(), raceFirm, b.uid, b.field, {
      token: 't1',
      outcome: 'retry',
      now: Date.now(),
      detail: '451',
    });
    expect(await status(b.uid)).toBe('cancelled');
    expect(await lease(b.uid, b.field, 't2')).toEqual({ outcome: 'cancelled' });
  });

  it('concurrent lease and cancel: exactly one of them wins, every time', async () => {
    for (let i = 0; i < 25; i++) {
      const { uid: u, field } = await stored();
      const [leased, cancelled] = await Promise.all([lease(u, field, `t${i}`), cancel(u)]);
      if (leased.outcome === 'leased') {
        await finishReminder(store(), raceFirm, u, field, {
          token: `t${i}`,
          outcome: 'sent',
          now: Date.now(),
          detail: '<m@x>',
        });
        expect(await status(u)).toBe('sent');
      } else {
        expect(leased.outcome).toBe('cancelled');
        expect(await status(u)).toBe('cancelled');
      }
      expect(cancelled.outcome).toBe('cancelled');
    }
  });

  it('a reminder still unsent when the booking is over is not sent: it is recorded failed', async () => {
    const { uid: u, field } = await stored();
    expect(await lease(u, field, 'late', Date.now() + 2 * 3600_000 + 1)).toEqual({ outcome: 'expired' });
    expect(await status(u)).toBe('failed');
    expect(await lease(u, field, 'again')).toEqual({ outcome: 'failed' });
  });

  it('an attempt that died mid-send: after its lease, the send is repeated (at least once) unless a cancel came', async () => {
    const a = await stored();
    expect((await lease(a.uid, a.field, 'dead')).outcome).toBe('leased');
    const later = Date.now() + 61_000;
    expect((await lease(a.uid, a.field, 'next', later)).outcome).toBe('leased');
    // The dead attempt's late report of a failure does not undo the new attempt's lease.
    expect(
      await finishReminder(store(), raceFirm, a.uid, a.field, {
        token: 'dead',
        outcome: 'retry',
        now: later,
        detail: 'x',
      }),
    ).toBe('superseded');

    const b = await stored();
    expect((await lease(b.uid, b.field, 'dead')).outcome).toBe('leased');
    await cancel(b.uid);
    expect(await lease(b.uid, b.field, 'next', Date.now() + 61_000)).toEqual({ outcome: 'cancelled' });
    expect(await stack.services.redis.exists(redisKeys(stack.config).bookingReminders(raceFirm, b.uid))).toBe(
      1,
    );
  });
});
