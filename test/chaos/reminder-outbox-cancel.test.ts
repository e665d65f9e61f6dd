// Found by the chaos run (seed 42): reminders mailed for bookings whose cancel had been
// acknowledged. The cancel came while Redis was down and was kept in the MongoDB outbox; FerretDB
// then stopped before the outbox drained, and the reminder, scheduled in Redis before, fired
// first. A reminder now waits while an event of its booking is kept in the outbox or queued and
// not yet applied. Here no worker runs until the test says so: the outbox waits as long as the
// run's did, without stopping FerretDB.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { drainOutbox } from '../../core/domain/deliveries/delivery-outbox.js';
import { readBookingReminders, type ReminderStore } from '../../core/domain/bookings/reminder-records.js';
import { sendBookingReminder } from '../../core/domain/bookings/reminders.js';
import { enqueue } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import type { Workers } from '../../workers/runner.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { calBookingPayload, calCancelled } from '../fakes/calcom-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { createFirm, rand, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { postSigned, storeDueReminder } from '../bookings/support.js';

const CAL_SECRET = 'whsec_reminder_outbox_secret';

let smtp: FakeSmtp;
let redis: PrivateRedis;
let stack: Stack;
let workers: Workers | undefined;

beforeAll(async () => {
  smtp = await startFakeSmtp();
  // A private Redis, so stopping it does not disturb test files running in parallel; it keeps
  // its data across the stop, as a production Redis does (the reminder is scheduled in it).
  redis = await startPrivateRedis({ persistent: true });
  // No workers: nothing drains the outbox or applies an event until the test says so.
  stack = await startStack({
    env: { REDIS_URL: redis.url, SMTP_URL: smtp.url, MAIL_FROM: 'Reminders <reminders@lawfirm.test>' },
  });
});
afterAll(async () => {
  await workers?.stop();
  await stack?.stop();
  await redis?.remove();
  await smtp?.stop();
});

const store = (): ReminderStore => ({ redis: stack.services.redis, keys: redisKeys(stack.config) });

describe('a reminder whose booking was cancelled while Redis was down', () => {
  it('is not mailed while the cancel waits in the outbox or its queue, and is cancelled once it is applied', async () => {
    const firm = await createFirm(stack, { booking_webhook_secret: CAL_SECRET, timezone: 'UTC' });
    const to = `client-${rand(4)}@example.com`;
    // The booking was made with Redis up: its reminder, due now, is scheduled.
    const { uid, startAt, job } = await storeDueReminder(store(), firm.slug, to, { firmName: 'Outbox LLP' });

    // Redis stops; Cal.com's cancel is acknowledged into the outbox.
    await redis.stop();
    await eventually(async () => expect(stack.services.redis.status).not.toBe('ready'));
    const cancel = calCancelled(
      calBookingPayload(uid, startAt, [{ name: 'Client', email: to, timeZone: 'UTC' }]),
      new Date(),
    );
    const res = await postSigned(stack, firm.slug, cancel, CAL_SECRET);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const outbox = stack.services.mongo.db.collection(COLLECTIONS.webhookOutbox);
    expect(await outbox.countDocuments({})).toBe(1);

    // Redis is back, the outbox not yet drained: the reminder comes due and waits.
    await redis.start();
    await eventually(async () => expect(stack.services.redis.status).toBe('ready'), 20_000);
    await expect(sendBookingReminder(stack.services, job, { lastAttempt: false })).rejects.toMatchObject({
      name: 'BookingEventWaitsError',
    });
    expect(smtp.messages.filter((m) => m.to.includes(to))).toHaveLength(0);

    // Moved into its queue but not applied yet (no worker): still waiting.
    expect(await drainOutbox(stack.services)).toBe(1);
    expect(await outbox.countDocuments({})).toBe(0);
    await expect(sendBookingReminder(stack.services, job, { lastAttempt: false })).rejects.toMatchObject({
      name: 'BookingEventWaitsError',
    });

    // The reminder's job and a worker: the cancel is applied, and the job finds the reminder cancelled.
    await enqueue(stack.services.queues, JOBS.sendReminder, job);
    workers = startInProcessWorkers(stack);
    const queue = stack.services.queues.bookings;
    const id = JOBS.sendReminder.id!(job);
    await eventually(async () => expect(await queue.getJobState(id)).toBe('completed'), 30_000, 50);
    expect((await queue.getJob(id))?.returnvalue).toEqual({ outcome: 'cancelled' });
    expect((await readBookingReminders(store(), firm.slug, uid)).reminders[0]!.status).toBe('cancelled');
    expect(smtp.messages.filter((m) => m.to.includes(to))).toHaveLength(0);
    // Nothing is left to wait for.
    expect(
      await stack.services.mongo.db.collection(COLLECTIONS.webhookOutboxBookings).countDocuments({}),
    ).toBe(0);
  });
});
