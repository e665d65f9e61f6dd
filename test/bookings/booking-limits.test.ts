// Booking limits (docs/bookings.md#limits): booking webhooks once amplified into long-lived Redis data and a
// mail relay. 100 attendees, a start in 2099 and 10 reminder offsets: 5 signed events made 5,050 delayed jobs
// and keys with a 72-year TTL; reminders carried a sender's "verify at https://evil.example/login" from the
// platform's MAIL_FROM to any address. Each bound below, through the real webhook, workers, Redis and an SMTP
// server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { bodyText, startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { expectOutboxEmpty } from '../helpers/webhook-outbox.js';
import { bookingJobs, calBooking, calEvent, postSigned, reminders, uid, type Attendee } from './support.js';

const SECRET = 'whsec_booking_limits_secret';
const PER_FIRM = 40;
const MAILS_PER_DAY = 3;
const DAY = 24 * 3600_000;
const TEN_OFFSETS = [60, 120, 180, 240, 300, 360, 420, 480, 540, 600];

let smtp: FakeSmtp;
let stack: Stack;

beforeAll(async () => {
  smtp = await startFakeSmtp();
  stack = await startStack({
    workers: true,
    env: {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Reminders <reminders@platform.test>',
      BOOKING_REMINDERS_PER_FIRM: String(PER_FIRM),
      BOOKING_MAILS_PER_FIRM_PER_DAY: String(MAILS_PER_DAY),
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  await smtp?.stop();
});

const firmWith = (settings: Record<string, unknown>) =>
  createFirm(stack, { booking_webhook_secret: SECRET, ...settings });
const people = (n: number, tag: string): Attendee[] =>
  Array.from({ length: n }, (_, i) => ({
    email: `${tag}${i}@example.com`,
    name: `Guest ${i}`,
    timeZone: 'UTC',
  }));
async function deliver(slug: string, trigger: string, payload: Record<string, unknown>): Promise<void> {
  const res = await postSigned(stack, slug, calEvent(trigger, payload), SECRET);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  // Applied: nothing waiting or running (the reminders' own jobs stay delayed), and nothing kept
  // in the webhook outbox, where an add slower than ENQUEUE_TIMEOUT_MS (a loaded machine) sends a
  // delivery, and the stack's later ones too, until the workers' drain moves them to the queue.
  await eventually(async () => {
    await expectOutboxEmpty(stack);
    const counts = await stack.services.queues.bookings.getJobCounts('waiting', 'active', 'prioritized');
    expect(counts).toEqual({ waiting: 0, active: 0, prioritized: 0 });
  });
}
const sendJobsOf = async (slug: string) =>
  (await bookingJobs(stack, ['delayed', 'waiting'])).filter(
    (j) => j.name === 'send-reminder' && j.data.firm === slug,
  );
const bookingKey = (slug: string, bookingUid: string) =>
  redisKeys(stack.config).bookingReminders(slug, bookingUid);
/**
 * A start about 63 s ahead on a whole second: a one-minute reminder is due in about 3 s (a
 * reminder due before the event arrives would be skipped; the tests wait for the due time).
 */
const soon = () => Math.ceil((Date.now() + 63_000) / 1000) * 1000;

describe('what one booking event can make is bounded', () => {
  it('a booking starting more than a year ahead is acknowledged, schedules nothing, and no key outlives about a year', async () => {
    const firm = await firmWith({
      reminder_offsets_minutes: TEN_OFFSETS,
      notification_emails: ['desk@firm.test'],
    });
    const far = Date.parse('2099-01-01T15:00:00Z');
    const created = uid();
    await deliver(firm.slug, 'BOOKING_CREATED', calBooking(created, far, people(3, 'far')));
    expect(await reminders(firm.client, firm.slug, created)).toEqual([]);
    expect(await sendJobsOf(firm.slug)).toEqual([]);
    // A cancel of a far booking never seen leaves a tombstone: it too expires within the horizon.
    const cancelled = uid();
    await deliver(firm.slug, 'BOOKING_CANCELLED', calBooking(cancelled, far, people(1, 'gone')));
    const yearAndAMonth = (366 + 31) * DAY;
    for (const key of [bookingKey(firm.slug, created), bookingKey(firm.slug, cancelled)]) {
      const ttl = await stack.services.redis.pttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      expect(ttl, key).toBeLessThanOrEqual(yearAndAMonth);
    }
    // Within the year, reminders are scheduled as ever.
    const near = uid();
    await deliver(firm.slug, 'BOOKING_CREATED', calBooking(near, Date.now() + 300 * DAY, people(1, 'near')));
    expect(await reminders(firm.client, firm.slug, near)).toHaveLength(TEN_OFFSETS.length * 2);
  });

  it('a booking naming 100 attendees gets reminders for 20 of them (and the firm); seats stop at 20 too', async () => {
    const firm = await firmWith({ reminder_offsets_minutes: [60], notification_emails: ['desk@firm.test'] });
    const big = uid();
    await deliver(firm.slug, 'BOOKING_CREATED', calBooking(big, Date.now() + 30 * DAY, people(100, 'crowd')));
    const rows = await reminders(firm.client, firm.slug, big);
    expect(rows.map((r) => r.to)).toContain('desk@firm.test');
    expect(rows).toHaveLength(21);

    // A seated event: each seat's BOOKING_CREATED names its own attendee. (Another firm: the
    // first booking's 21 reminders count against this one's 40.)
    const seatFirm = await firmWith({
      reminder_offsets_minutes: [60],
      notification_emails: ['desk@firm.test'],
    });
    const seated = uid();
    const start = Date.now() + 31 * DAY;
    for (const [i, seat] of people(25, 'seat').entries()) {
      await deliver(
        seatFirm.slug,
        'BOOKING_CREATED',
        calBooking(seated, start, [seat], { seatsPerTimeSlot: 30, bookingId: 1000 + i }),
      );
    }
    const seats = await reminders(seatFirm.client, seatFirm.slug, seated);
    expect(seats.filter((r) => r.to !== 'desk@firm.test')).toHaveLength(20);
  }, 120_000);

  it('a firm has at most BOOKING_REMINDERS_PER_FIRM reminders to come; a cancel frees room; other firms are unaffected', async () => {
    const firm = await firmWith({ reminder_offsets_minutes: TEN_OFFSETS });
    const other = await firmWith({ reminder_offsets_minutes: [60] });
    const uids: string[] = [];
    for (let i = 0; i < 5; i++) {
      uids.push(uid());
      await deliver(
        firm.slug,
        'BOOKING_CREATED',
        calBooking(uids[i]!, Date.now() + (10 + i) * DAY, people(20, `b${i}x`)),
      );
    }
    // Before the bound: 5 × 20 × 10 = 1,000 delayed jobs.
    expect(await sendJobsOf(firm.slug)).toHaveLength(PER_FIRM);
    expect(await stack.services.redis.zcard(redisKeys(stack.config).firmRemindersDue(firm.slug))).toBe(
      PER_FIRM,
    );
    const otherUid = uid();
    await deliver(other.slug, 'BOOKING_CREATED', calBooking(otherUid, Date.now() + 10 * DAY, people(1, 'o')));
    expect(await reminders(other.client, other.slug, otherUid)).toHaveLength(1);

    // The first booking holds all 40; its cancel makes room for the next.
    await deliver(firm.slug, 'BOOKING_CANCELLED', calBooking(uids[0]!, Date.now() + 10 * DAY, []));
    const next = uid();
    await deliver(firm.slug, 'BOOKING_CREATED', calBooking(next, Date.now() + 20 * DAY, people(1, 'next')));
    const rows = await reminders(firm.client, firm.slug, next);
    expect(rows).toHaveLength(TEN_OFFSETS.length);
    expect(rows.every((r) => r.status === 'scheduled')).toBe(true);
  }, 120_000);

  it('a firm sends at most BOOKING_MAILS_PER_FIRM_PER_DAY reminder mails a day; the others are failed', async () => {
    const firm = await firmWith({ reminder_offsets_minutes: [1] });
    const booking = uid();
    await deliver(firm.slug, 'BOOKING_CREATED', calBooking(booking, soon(), people(5, `daily${booking}`)));
    const rows = await eventually(async () => {
      const now = await reminders(firm.client, firm.slug, booking);
      expect(now.filter((r) => r.status === 'scheduled')).toEqual([]);
      return now;
    }, 45_000);
    expect(rows.filter((r) => r.status === 'sent')).toHaveLength(MAILS_PER_DAY);
    expect(rows.filter((r) => r.status === 'failed')).toHaveLength(5 - MAILS_PER_DAY);
    expect(smtp.messages.filter((m) => m.to.some((to) => to.startsWith(`daily${booking}`)))).toHaveLength(
      MAILS_PER_DAY,
    );
  });

  it('links in the sender’s text are not made clickable in the reminder; the join link is', async () => {
    const firm = await firmWith({ reminder_offsets_minutes: [1], notification_emails: ['desk@firm.test'] });
    const booking = uid();
    const to = `victim${booking}@example.com`;
    await deliver(
      firm.slug,
      'BOOKING_CREATED',
      calBooking(booking, soon(), [{ email: to, name: 'See www.evil.example', timeZone: 'UTC' }], {
        title: 'Your account is locked: verify at https://evil.example/login',
        location: 'https://evil.example/login',
        organizer: { name: 'Support http://evil.example', email: 'alex@lawfirm.test' },
      }),
    );
    const mails = await eventually(async () => {
      const found = smtp.messages.filter((m) => m.to.includes(to) || bodyText(m).includes(booking));
      expect(found).toHaveLength(2);
      return found;
    }, 45_000);
    for (const mail of mails) {
      const text = `${mail.header('subject')}\n${bodyText(mail)}`;
      expect(text).not.toMatch(/https?:\/\/evil/);
      expect(text).not.toMatch(/evil\.example/);
      expect(text).toContain('verify at evil[.]example/login');
      expect(text).toContain('Join: https://cal.com/video/abc123');
      expect(mail.header('content-type') ?? '').not.toMatch(/html|multipart/i);
    }
  });
});
