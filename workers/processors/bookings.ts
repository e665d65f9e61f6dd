import { UnrecoverableError } from 'bullmq';
import type { BookingEventJob, SendReminderJob } from '../../jobs/bookings.js';
import { applyBookingEvent } from '../../core/domain/bookings/booking-event.js';
import { ReminderRejectedError, sendBookingReminder } from '../../core/domain/bookings/reminders.js';
import type { JobProcessor } from '../runner.js';

/** Applies one Cal.com booking event to the booking's reminders (job id = trigger + uid + delivery). */
export const bookingEvent: JobProcessor<BookingEventJob> = async (job, { services }) =>
  applyBookingEvent(services, job.data);

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
