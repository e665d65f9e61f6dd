import { randomBytes } from 'node:crypto';
import type { Attempt } from '../../platform/db/effect-records.js';
import { BusyUntilError, leaseRenewMs } from '../../platform/busy-until.js';
import { redisKeys } from '../../platform/redis-keys.js';
import type { Services } from '../../wiring/services.js';
import { reminderIdPart, type SendReminderJob } from '../../../jobs/bookings.js';
import { reminderMail, reminderMessageId } from './reminder-mail.js';
import { readBookingReminders, type ReminderRecord, type ReminderStore } from './reminder-records.js';
import { finishReminder, leaseReminder, renewReminderLease } from './reminder-lease.js';
import { bookingEventWaits } from '../deliveries/outbox-bookings.js';

// Sending a reminder, exactly once as far as SMTP lets anyone: the effect recorder's idea
// (mark, perform, record) on the reminder's own record in Redis rather than through runEffect,
// whose records live on MongoDB documents. The reminder lives in Redis, and the mark must be
// atomic with a cancel (a Lua script: core/domain/bookings/reminder-lease.ts); a MongoDB record
// beside it could not be changed in one step with the Redis one, so a cancel racing a send could
// both succeed. The steps:
//   lease   scheduled → sending, held for a short while and renewed while the send runs; or
//           nothing when cancelled, sent or gone;
//   send    through SMTP;
//   finish  sent (SMTP accepted: never sent again), or back to scheduled when SMTP refused it
//           (nothing went out; the job retries with backoff), or failed on the last attempt.
// An attempt that dies between SMTP's acceptance and `finish` leaves `sending`: once its lease
// is over, the next attempt sends again (SMTP cannot be asked; at least once, never lost), with
// the same Message-ID. An attempt that finds the reminder `sending` under a live lease waits for
// the lease's end (its job delayed until then, no attempt spent) and looks again. Before the
// lease, an attempt whose booking has an event kept in the webhook outbox and not yet applied (a
// cancel acknowledged while Redis was down) waits for it the same way
// (core/domain/deliveries/outbox-bookings.ts).
//
// The lease is short and renewed while the send runs, so a dead attempt's reminder goes out
// about a lease later, not after a lease long enough for the slowest send: the chaos run saw a
// reminder due a minute before its meeting mailed 9 minutes late after a worker was SIGKILLed
// mid-send (a 5-minute lease, and busy attempts backing off exponentially meanwhile).

/** How often a send under way renews its lease (REMINDER_LEASE_MS): as every lease is renewed. */
export const reminderRenewMs = leaseRenewMs;

export const reminderStoreOf = (services: Services): ReminderStore => ({
  redis: services.redis,
  keys: redisKeys(services.config),
});

const DAY_MS = 24 * 3600_000;

/**
 * Counts a reminder's first send against its firm's UTC day (BOOKING_MAILS_PER_FIRM_PER_DAY):
 * reminders go from the platform's MAIL_FROM to any address a booking names, so a firm cannot
 * make the service its mail relay (docs/bookings.md#limits). A retry of the same reminder is not counted
 * again: an SMTP outage does not use up the firms' days. false past the day's limit.
 */
async function countReminderMail(services: Services, firm: string, now: number): Promise<boolean> {
  const day = Math.floor(now / DAY_MS);
  const key = redisKeys(services.config).firmReminderMails(firm, day);
  const replies = await services.redis
    .multi()
    .incr(key)
    .pexpire(key, 2 * DAY_MS)
    .exec();
  const [err, count] = replies?.[0] ?? [new Error('The reminder mail count was not taken.'), 0];
  if (err) throw err;
  return Number(count) <= services.config.bookingMailsPerFirmPerDay;
}

/** Another attempt is sending this reminder right now; this one looks again when its lease ends. */
export class ReminderBusyError extends BusyUntilError {
  constructor(field: string, until: number) {
    super(
      `The reminder ${reminderIdPart(field)} is being sent by another attempt; checking again when its lease ends.`,
      until,
    );
    this.name = 'ReminderBusyError';
  }
}

/** How soon a reminder waiting for its booking's event looks again (the outbox drain runs every second). */
const OUTBOX_RECHECK_MS = 2_000;

/**
 * An event of the reminder's booking was answered and is not applied yet (in its queue, or in the
 * webhook outbox): the reminder looks again at `until`.
 */
export class BookingEventWaitsError extends BusyUntilError {
  constructor(field: string, until: number) {
    super(
      `The reminder ${reminderIdPart(field)} waits for an event of its booking not yet applied (queued, or in the webhook outbox).`,
      until,
    );
    this.name = 'BookingEventWaitsError';
  }
}

/** The mail server refused the reminder for good (a 5xx reply): the job should not retry. */
export class ReminderRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReminderRejectedError';
  }
}

/** An SMTP reply of 5xx: the server refused for good (a bad address); retrying cannot help. */
const isPermanent = (err: unknown): boolean => {
  const code = (err as { responseCode?: unknown }).responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
};

/** Sends one due reminder unless it was cancelled or already sent (the sendReminder job). */
export async function sendBookingReminder(
  services: Services,
  job: SendReminderJob,
  attempt: Attempt,
): Promise<Record<string, unknown>> {
  // A stopping worker sends nothing new: the job is parked before the lease and handed back
  // (core/platform/db/effect-gate.ts); a send under way may finish and record.
  const pass = await attempt.gate?.enter();
  try {
    return await leaseAndSend(services, job, attempt);
  } finally {
    pass?.();
  }
}

async function leaseAndSend(
  services: Services,
  job: SendReminderJob,
  attempt: Attempt,
): Promise<Record<string, unknown>> {
  const store = reminderStoreOf(services);
  const { firm, booking_uid: uid, reminder: field } = job;
  // A cancel or reschedule of the booking answered and not yet applied (waiting in its queue, or
  // kept in the webhook outbox while Redis was down): the reminder waits for it rather than racing it.
  if (await bookingEventWaits(services, firm, uid)) {
    throw new BookingEventWaitsError(field, Date.now() + OUTBOX_RECHECK_MS);
  }
  const token = randomBytes(9).toString('base64url');
  const leaseMs = services.config.reminderLeaseMs;
  const lease = await leaseReminder(store, firm, uid, field, { now: Date.now(), leaseMs, token });
  if (lease.outcome === 'busy') throw new ReminderBusyError(field, lease.leaseUntil);
  if (lease.outcome !== 'leased') return { outcome: lease.outcome };

  const finish = (outcome: 'sent' | 'retry' | 'failed', detail: string) =>
    finishReminder(store, firm, uid, field, { token, outcome, now: Date.now(), detail });
  if (services.mailer === null) {
    const status = await finish('failed', 'Email is not configured (SMTP_URL is not set).');
    services.log.warn(
      { firm, uid, reminder: reminderIdPart(field) },
      'booking reminder not sent: SMTP_URL is not set',
    );
    return { outcome: status };
  }
  if (lease.reminder.attempts === 1 && !(await countReminderMail(services, firm, Date.now()))) {
    const status = await finish(
      'failed',
      'The firm sent its reminder mails for today (BOOKING_MAILS_PER_FIRM_PER_DAY).',
    );
    services.log.warn(
      { firm, uid, reminder: reminderIdPart(field) },
      'booking reminder not sent: the firm reached its mails for the day',
    );
    return { outcome: status, reason: 'daily_mail_limit' };
  }
  const messageId = reminderMessageId(services.config.mailFrom, firm, uid, field);
  let sent: { messageId: string };
  const renewal = setInterval(() => {
    // A failed renewal (Redis away) is not this send's failure: the send goes on.
    renewReminderLease(store, firm, uid, field, { token, now: Date.now(), leaseMs }).catch(() => undefined);
  }, reminderRenewMs(leaseMs));
  try {
    sent = await services.mailer.send(reminderMail(lease.reminder, lease.booking, messageId));
  } catch (err) {
    const final = attempt.lastAttempt || isPermanent(err);
    const message = err instanceof Error ? err.message : String(err);
    // SMTP answered with an error, or never took the message: nothing was accepted.
    await finish(final ? 'failed' : 'retry', message);
    if (isPermanent(err)) throw new ReminderRejectedError(message);
    throw err;
  } finally {
    clearInterval(renewal);
  }
  // The worker's Redis connection waits out an outage here rather than failing: the record of
  // an accepted mail is what keeps it from being sent twice.
  const status = await finish('sent', sent.messageId);
  return { outcome: status, message_id: sent.messageId };
}

/** A booking's reminders, by due time then recipient; [] for a booking with none. */
export async function listBookingReminders(
  services: Services,
  firm: string,
  uid: string,
): Promise<ReminderRecord[]> {
  const { reminders } = await readBookingReminders(reminderStoreOf(services), firm, uid);
  return reminders.sort((a, b) => a.due_at - b.due_at || (a.to < b.to ? -1 : a.to > b.to ? 1 : 0));
}
