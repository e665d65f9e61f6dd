// A Cal.com cancel answered 200 is waiting in the bookings queue (or its job is applying the lead's
// appointment first) when the booking's reminder falls due: the reminder waits for it instead of
// being mailed, and finds itself cancelled once the cancel is applied. Before, only a cancel kept
// in the webhook outbox (Redis down) held a reminder back (test/chaos/reminder-outbox-cancel.test.ts),
// and a cancel on the usual path raced its reminder. No worker runs here: the test applies the
// cancel's job itself, when it chooses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from 'bullmq';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { readBookingReminders, type ReminderStore } from '../../core/domain/bookings/reminder-records.js';
import { sendBookingReminder } from '../../core/domain/bookings/reminders.js';
import type { BookingEventJob } from '../../jobs/bookings.js';
import { bookingEvent } from '../../workers/processors/bookings.js';
import { drainOutbox } from '../../core/domain/deliveries/delivery-outbox.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { calBookingPayload, calCancelled, calRescheduled } from '../fakes/calcom-fixtures.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { postSigned, storeDueReminder } from './support.js';

const CAL_SECRET = 'whsec_reminder_queued_secret';

let smtp: FakeSmtp;
let stack: Stack;

beforeAll(async () => {
  smtp = await startFakeSmtp();
  stack = await startStack({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'Reminders <reminders@lawfirm.test>' } });
});
afterAll(async () => {
  await stack?.stop();
  await smtp?.stop();
});

const store = (): ReminderStore => ({ redis: stack.services.redis, keys: redisKeys(stack.config) });
const notes = () => stack.services.mongo.db.collection(COLLECTIONS.webhookOutboxBookings);

/** A booking made earlier, its one reminder due now (storeDueReminder). */
async function bookingWithDueReminder(firm: string) {
  const to = `client-${rand(4)}@example.com`;
  return { to, ...(await storeDueReminder(store(), firm, to, { firmName: 'Queued LLP' })) };
}

/**
 * The bookings queue's jobs for this booking's events, waiting (no worker runs). A delivery whose
 * add took longer than ENQUEUE_TIMEOUT_MS (a loaded machine) was kept in the webhook outbox
 * instead, and, the web's gate then closed, so were later ones: the outbox is first moved into the
 * queue, as a worker's drain would, so the event waits in its queue either way.
 */
async function waitingEvents(uid: string): Promise<Job<BookingEventJob>[]> {
  await drainOutbox(stack.services);
  const jobs = (await stack.services.queues.bookings.getJobs(['waiting'])) as Job<BookingEventJob>[];
  return jobs.filter((j) => j.data.uid === uid || j.data.reschedule_uid === uid);
}

/** Runs the bookingEvent processor on a queued job, as a worker would. */
const apply = (job: Job<BookingEventJob>) =>
  bookingEvent(job, { services: stack.services } as unknown as Parameters<typeof bookingEvent>[1]);

const mailsTo = (to: string) => smtp.messages.filter((m) => m.to.includes(to));

describe('a reminder whose booking was cancelled a moment before it fell due', () => {
  it('is not mailed while the answered cancel waits in its queue, and is cancelled once it is applied', async () => {
    const firm = await createFirm(stack, { booking_webhook_secret: CAL_SECRET, timezone: 'UTC' });
    const { to, uid, startAt, job } = await bookingWithDueReminder(firm.slug);
    const cancel = calCancelled(
      calBookingPayload(uid, startAt, [{ name: 'Client', email: to, timeZone: 'UTC' }]),
      new Date(),
    );
    const res = await postSigned(stack, firm.slug, cancel, CAL_SECRET);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [queued, ...others] = await waitingEvents(uid);
    expect(others).toEqual([]);

    // Due now, the cancel answered and not applied: the reminder waits, nothing is mailed.
    await expect(sendBookingReminder(stack.services, job, { lastAttempt: false })).rejects.toMatchObject({
      name: 'BookingEventWaitsError',
    });
    expect(mailsTo(to)).toHaveLength(0);

    // The cancel applied: the reminder finds itself cancelled, and no note is left behind.
    await apply(queued!);
    expect(await sendBookingReminder(stack.services, job, { lastAttempt: false })).toEqual({
      outcome: 'cancelled',
    });
    expect((await readBookingReminders(store(), firm.slug, uid)).reminders[0]!.status).toBe('cancelled');
    expect(mailsTo(to)).toHaveLength(0);
    expect(await notes().countDocuments({ _id: { $regex: `^${firm.slug}\\|` } } as never)).toBe(0);
  });

  it('a reschedule holds the old booking’s reminder back too; a reminder of a booking with no event waiting is mailed', async () => {
    const firm = await createFirm(stack, { booking_webhook_secret: CAL_SECRET, timezone: 'UTC' });
    const old = await bookingWithDueReminder(firm.slug);
    const untouched = await bookingWithDueReminder(firm.slug);
    const newUid = `bk${rand(6)}`;
    const reschedule = calRescheduled(
      old.uid,
      old.startAt,
      calBookingPayload(newUid, old.startAt + 86_400_000, [
        { name: 'Client', email: old.to, timeZone: 'UTC' },
      ]),
      new Date(),
    );
    const res = await postSigned(stack, firm.slug, reschedule, CAL_SECRET);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await waitingEvents(old.uid)).toHaveLength(1);

    await expect(sendBookingReminder(stack.services, old.job, { lastAttempt: false })).rejects.toMatchObject({
      name: 'BookingEventWaitsError',
    });
    expect(mailsTo(old.to)).toHaveLength(0);
    // Another booking of the firm, with nothing waiting: its reminder goes out at once.
    expect(await sendBookingReminder(stack.services, untouched.job, { lastAttempt: false })).toMatchObject({
      outcome: 'sent',
    });
    expect(mailsTo(untouched.to)).toHaveLength(1);
  });
});
