import { UnrecoverableError } from 'bullmq';
import type { BookingEventJob, SendReminderJob } from '../../jobs/bookings.js';
import { applyBookingEvent } from '../../core/domain/bookings/booking-event.js';
import {
  ReminderBusyError,
  ReminderRejectedError,
  sendBookingReminder,
} from '../../core/domain/bookings/reminders.js';
import { park } from '../park.js';
import type { JobProcessor } from '../runner.js';

/** Applies one Cal.com booking event to the booking's reminders (job id = trigger + uid + delivery). */
export const bookingEvent: JobProcessor<BookingEventJob> = async (job, { services }) =>
  applyBookingEvent(services, job.data);

/**
 * Sends one due reminder, unless it was cancelled or sent meanwhile (the record in Redis decides).
 * While another attempt's lease holds it, the job sleeps until the lease ends (no attempt spent).
 */
export const sendReminder: JobProcessor<SendReminderJob> = async (job, { services, attempt, token }) => {
  try {
    return await sendBookingReminder(services, job.data, attempt);
  } catch (err) {
    if (err instanceof ReminderRejectedError) throw new UnrecoverableError(err.message);
    if (err instanceof ReminderBusyError) return park(job, token, err.until + 250, services.log);
    throw err;
  }
};
