import { UnrecoverableError } from 'bullmq';
import type { BookingEventJob, SendReminderJob } from '../../jobs/bookings.js';
import { applyBookingEvent } from '../../core/domain/bookings/booking-event.js';
import { ReminderRejectedError, sendBookingReminder } from '../../core/domain/bookings/reminders.js';
import type { JobProcessor } from '../runner.js';
import { clearOutboxBookingEvent } from '../../core/domain/deliveries/outbox-bookings.js';
import { JOBS } from '../../jobs/table.js';

/**
 * Applies one Cal.com booking event to the booking's reminders (job id = trigger + uid + delivery);
 * then the booking's reminders no longer wait for it if it came through the webhook outbox.
 */
export const bookingEvent: JobProcessor<BookingEventJob> = async (job, { services }) => {
  const applied = await applyBookingEvent(services, job.data);
  await clearOutboxBookingEvent(services, job.data, job.id ?? JOBS.bookingEvent.id!(job.data));
  return applied;
};

/**
 * Sends one due reminder, unless it was cancelled or sent meanwhile (the record in Redis decides).
 * While another attempt's lease holds it, the job sleeps until the lease ends (no attempt spent:
 * the runner parks a job that meets a BusyUntilError).
 */
export const sendReminder: JobProcessor<SendReminderJob> = async (job, { services, attempt }) => {
  try {
    return await sendBookingReminder(services, job.data, attempt);
  } catch (err) {
    if (err instanceof ReminderRejectedError) throw new UnrecoverableError(err.message);
    throw err;
  }
};
