// Found by the chaos run (seed 42): a worker SIGKILLed while it mailed a reminder due a minute
// before its meeting left the reminder `sending` under a 5-minute lease, and the job's next
// attempts, finding it busy, failed and backed off exponentially: the reminder would have gone
// out 9 minutes late (the run ended with it still `sending`). The lease is now short and renewed
// while a send runs, and an attempt that finds a live lease sleeps until it ends, spending no
// attempt. The dead attempt is left here as a SIGKILLed worker leaves it: its lease in Redis.
import { redisKeys } from '../../core/platform/redis-keys.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBookingReminders, type ReminderStore } from '../../core/domain/bookings/reminder-records.js';
import { leaseReminder, renewReminderLease } from '../../core/domain/bookings/reminder-lease.js';
import { reminderRenewMs, sendBookingReminder } from '../../core/domain/bookings/reminders.js';
import { enqueue } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { eventually } from '../helpers/eventually.js';
import { rand, startStack, type Stack } from '../helpers/stack.js';
import { storeDueReminder } from '../bookings/support.js';

let smtp: FakeSmtp;
let stack: Stack;
const firm = `dead-sender-${rand(3)}`;
/**
 * The reminder lease here (30 s by default), renewed every third of it: short, so the test waits
 * little for a dead attempt's lease, and long enough that a loaded machine's job pickup comes
 * before it ends (else the job never finds it live) and one look at a renewed lease comes before
 * the next renewal.
 */
const REMINDER_LEASE_MS = 8000;
const REMINDER_RENEW_MS = reminderRenewMs(REMINDER_LEASE_MS);

beforeAll(async () => {
  smtp = await startFakeSmtp();
  stack = await startStack({
    workers: true,
    env: {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Reminders <reminders@lawfirm.test>',
      REMINDER_LEASE_MS: String(REMINDER_LEASE_MS),
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  await smtp?.stop();
});

const store = (): ReminderStore => ({ redis: stack.services.redis, keys: redisKeys(stack.config) });

/** A booking in an hour with one reminder, due now, to `to` (storeDueReminder). */
const dueReminder = (to: string) => storeDueReminder(store(), firm, to, { firmName: 'Dead Sender LLP' });

const recordOf = async (uid: string) => (await readBookingReminders(store(), firm, uid)).reminders[0]!;

describe('a reminder whose sender died mid-send', () => {
  it('is mailed once when the dead attempt’s lease ends; the job waits for it without spending attempts', async () => {
    const to = `dead-${rand(4)}@example.com`;
    const { uid, field, dueAt } = await dueReminder(to);
    // The attempt that leased it was SIGKILLed before SMTP answered.
    const leasedAt = Date.now();
    const dead = await leaseReminder(store(), firm, uid, field, {
      now: leasedAt,
      leaseMs: REMINDER_LEASE_MS,
      token: 'dead',
    });
    expect(dead.outcome).toBe('leased');

    const data = { firm, booking_uid: uid, reminder: field, due_at: dueAt };
    await enqueue(stack.services.queues, JOBS.sendReminder, data);
    const job = { id: JOBS.sendReminder.id!(data) };
    const queue = stack.services.queues.bookings;
    // The job found the live lease and sleeps until it ends: delayed, no attempt failed.
    await eventually(
      async () => {
        expect(await queue.getJobState(job.id)).toBe('delayed');
        expect((await queue.getJob(job.id))?.attemptsStarted).toBeGreaterThan(0);
      },
      30_000,
      50,
    );
    expect((await queue.getJob(job.id))?.attemptsMade).toBe(0);
    expect(smtp.messages.filter((m) => m.to.includes(to))).toHaveLength(0);

    await eventually(
      async () => expect((await recordOf(uid)).status).toBe('sent'),
      REMINDER_LEASE_MS + 30_000,
    );
    const mails = smtp.messages.filter((m) => m.to.includes(to));
    expect(mails).toHaveLength(1);
    // Not before the dead attempt's lease ended: never two senders under one lease.
    expect(mails[0]!.at).toBeGreaterThanOrEqual(leasedAt + REMINDER_LEASE_MS);
    // The job completes once its processor has returned, a moment after the reminder shows sent.
    await eventually(async () => expect(await queue.getJobState(job.id)).toBe('completed'), 30_000);
    const done = await queue.getJob(job.id);
    expect(done?.failedReason ?? null).toBeNull();
    expect(done?.attemptsMade).toBeLessThanOrEqual(1);
  });

  it('a send slower than the lease keeps the reminder: its lease is renewed while SMTP takes its time', async () => {
    const to = `slow-${rand(4)}@example.com`;
    const { uid, field, dueAt } = await dueReminder(to);
    const release = smtp.hold();
    let sending: Promise<Record<string, unknown>> | undefined;
    try {
      const startedAt = Date.now();
      sending = sendBookingReminder(
        stack.services,
        { firm, booking_uid: uid, reminder: field, due_at: dueAt },
        { lastAttempt: false },
      );
      await eventually(async () => expect(smtp.held()).toBe(1), 10_000, 20);
      const leased = await recordOf(uid);
      expect(leased.status).toBe('sending');
      // Past the first renewal: the lease reaches beyond where the lease alone set it. (The wait
      // is the lease's length only to stop a hang; when the renewal came is checked below.)
      await eventually(
        async () => expect((await recordOf(uid)).lease_until).toBeGreaterThan(leased.lease_until!),
        REMINDER_LEASE_MS,
        200,
      );
      const renewedUntil = (await recordOf(uid)).lease_until!;
      expect(renewedUntil).toBeGreaterThanOrEqual(startedAt + REMINDER_RENEW_MS + REMINDER_LEASE_MS);
      // Another attempt when the first lease would have ended finds the reminder still held.
      const other = await leaseReminder(store(), firm, uid, field, {
        now: leased.lease_until! + 1,
        leaseMs: REMINDER_LEASE_MS,
        token: 'other',
      });
      // (The holder may have renewed once more since: the lease only ever reaches further.)
      expect(other).toEqual({ outcome: 'busy', leaseUntil: expect.any(Number) });
      expect((other as { leaseUntil: number }).leaseUntil).toBeGreaterThanOrEqual(renewedUntil);
      // Only the holder renews: another's renewal (to 1 ms from now) is refused and changes nothing.
      expect(
        await renewReminderLease(store(), firm, uid, field, { token: 'other', now: Date.now(), leaseMs: 1 }),
      ).toBe(false);
      expect((await recordOf(uid)).lease_until).toBeGreaterThanOrEqual(renewedUntil);
    } finally {
      release();
    }
    expect(await sending).toMatchObject({ outcome: 'sent' });
    expect(smtp.messages.filter((m) => m.to.includes(to))).toHaveLength(1);
    expect((await recordOf(uid)).status).toBe('sent');
  });
});
