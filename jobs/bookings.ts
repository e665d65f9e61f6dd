import { sha256Hex } from '../core/platform/crypto.js';
import { QUEUE } from './queues.js';
import { capped, RETRY_AFTER } from './backoff.js';
import { defineJob, jobId } from './define.js';

/**
 * The Cal.com triggers that change a booking's reminders or a lead's appointment (a booking that
 * needs confirmation is REQUESTED, then CREATED when the host accepts or REJECTED); others are
 * acknowledged and dropped.
 */
export const BOOKING_TRIGGERS = [
  'BOOKING_CREATED',
  'BOOKING_REQUESTED',
  'BOOKING_REJECTED',
  'BOOKING_RESCHEDULED',
  'BOOKING_CANCELLED',
] as const;
export type BookingTrigger = (typeof BOOKING_TRIGGERS)[number];

export function isBookingTrigger(trigger: string): trigger is BookingTrigger {
  return (BOOKING_TRIGGERS as readonly string[]).includes(trigger);
}

/** A person of a booking as Cal.com names them, bounded (core/domain/bookings/booking-event.ts). */
export interface BookingPerson {
  email: string;
  name?: string;
  /** IANA time zone as the sender gave it (checked when a reminder is rendered). */
  time_zone?: string;
}

/**
 * One Cal.com booking event, as much of it as reminders use (the webhook body is untrusted and
 * may be large; this snapshot is bounded).
 */
export interface BookingEventJob {
  firm: string;
  trigger: BookingTrigger;
  uid: string;
  /** BOOKING_RESCHEDULED: the uid of the booking this one replaces. */
  reschedule_uid?: string;
  /** BOOKING_RESCHEDULED: the replaced booking's start and end (ms since epoch), when Cal.com sent them. */
  reschedule_start_at?: number;
  reschedule_end_at?: number;
  title: string;
  /** ms since epoch. */
  start_at: number;
  end_at?: number;
  location?: string;
  /** The meeting's join link (an http(s) URL), when Cal.com sent one. */
  join_url?: string;
  /** A seated event (Cal.com's seatsPerTimeSlot): attendees join and leave one by one. */
  seated?: boolean;
  attendees: BookingPerson[];
  organizer?: { name?: string; email?: string };
  /** When the sender made the event (Cal.com's `createdAt`), else when we received it: orders events. */
  event_at: number;
  received_at: number;
  /** The delivery's identity: SHA-256 of the raw body, so a repeated delivery adds no second job. */
  delivery: string;
}

/** Sends one reminder (the record in Redis decides whether it still should). */
export interface SendReminderJob {
  firm: string;
  booking_uid: string;
  /** The reminder's field in the booking's Redis hash (core/domain/bookings/reminder-records.ts). */
  reminder: string;
  /** ms since epoch, for Bull Board readers; the delay was computed from it. */
  due_at: number;
}

/**
 * A booking uid as one part of a job id: as it is when it is plain (Cal.com's uids are), else a
 * digest, so that uids differing only in characters job ids cannot hold never share an id.
 */
export function bookingIdPart(uid: string): string {
  return /^[A-Za-z0-9_.-]{1,100}$/.test(uid) ? uid : `h-${sha256Hex(uid).slice(0, 40)}`;
}

/**
 * A reminder as one part of a job id: a digest of its field, never the field itself, whose last
 * part is the recipient's email (job ids go into traces and the "job failed" log line). Also how
 * logs and errors name a reminder.
 */
export function reminderIdPart(field: string): string {
  return `r-${sha256Hex(field).slice(0, 32)}`;
}

export const bookingJobs = {
  bookingEvent: defineJob<BookingEventJob>({
    queue: QUEUE.bookings,
    name: 'booking-event',
    // Trigger + booking + the delivery's own identity: the same event delivered again adds
    // nothing; another event of the same booking (a second reschedule) is a new job. The
    // reminder store makes a repeat a no-op anyway once this job is no longer retained.
    id: (job) => jobId('booking', job.firm, job.trigger, bookingIdPart(job.uid), job.delivery),
    // Cal.com sends once, and every failure here is the service's own (MongoDB or Redis down):
    // the event outlasts an outage of about an hour (jobs/backoff.ts).
    options: capped(),
  }),
  sendReminder: defineJob<SendReminderJob>({
    queue: QUEUE.bookings,
    name: 'send-reminder',
    // The reminder field names the booking's start, the offset and the recipient: the id has its digest.
    id: (job) => jobId('reminder', job.firm, bookingIdPart(job.booking_uid), reminderIdPart(job.reminder)),
    // An SMTP outage is retried for about an hour (1 s, 2 s, ... 2048 s); the record in Redis
    // keeps a reminder accepted by SMTP from being sent again.
    options: { attempts: 13, backoff: { type: RETRY_AFTER, delay: 1000 } },
  }),
};
