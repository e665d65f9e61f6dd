import { sha256Hex } from '../../platform/crypto.js';
import { invalidRequest, type ErrorDetail } from '../../platform/errors.js';
import { shorten } from '../../platform/text.js';
import { isTimeZone } from '../../platform/time-zone.js';
import type { Services } from '../../wiring/services.js';
import { enqueue } from '../../../jobs/define.js';
import type { BookingEventJob, BookingPerson, BookingTrigger } from '../../../jobs/bookings.js';
import { JOBS } from '../../../jobs/table.js';
import { normalizeEmail } from '../contact-points/emails.js';
import { getFirm, type FirmDoc } from '../firms/firms.js';
import {
  BOOKING_HORIZON_MS,
  bookingExpiry,
  type BookingRecord,
  type ReminderRecord,
} from './reminder-records.js';
import { cancelBookingReminders, MAX_BOOKING_ATTENDEES, storeBookingReminders } from './reminder-schedule.js';
import { reminderStoreOf } from './reminders.js';
import { followBookingEvent } from '../appointments/lead-appointment.js';

// Cal.com booking events (docs/bookings.md#events): the webhook keeps a bounded snapshot and enqueues
// it; a worker moves the appointment of the lead the booking is for (lead-appointment.ts), applies
// it to the booking's reminders in Redis and schedules a delayed job per reminder. BOOKING_CREATED stores one reminder per offset and recipient (offsets already past
// when the event arrived are skipped); BOOKING_RESCHEDULED cancels the old booking's and stores
// the new one's; BOOKING_CANCELLED cancels them. Every step is idempotent: a repeat changes
// nothing, and a cancel wins over a CREATED delivered after it.
//
// What one signed event can make is bounded (docs/bookings.md#limits): a start
// more than a year ahead gets no reminders, a booking at most 20 attendees', and a firm at most
// BOOKING_REMINDERS_PER_FIRM reminders to come. Cal.com sends each event once and does not retry,
// so an event past a bound is still acknowledged and applied as far as it may be; the job's
// result and a warning say what was left out.
//
// Seated events (docs/bookings.md#seats) share one uid: a CREATED for a known uid and start adds the new
// attendees' reminders (the firm's exist already: one field per recipient); a CANCELLED, or the
// old side of a RESCHEDULED, of a seated booking that names only some of its attendees, or one,
// cancels only theirs and leaves the booking active. One naming two or more and all those known,
// or any on an ordinary booking, cancels the whole booking.

/** What the webhook validated of Cal.com's payload (api/routes/bookings/schema.ts). */
export interface BookingPayloadInput {
  uid: string;
  startTime: string;
  endTime?: string;
  title?: string | null;
  location?: string | null;
  rescheduleUid?: string | null;
  /** BOOKING_RESCHEDULED: the replaced booking's start and end. */
  rescheduleStartTime?: string | null;
  rescheduleEndTime?: string | null;
  attendees?: Array<{ email?: string | null; name?: string | null; timeZone?: string | null }>;
  organizer?: { name?: string | null; email?: string | null };
  /** Cal.com's CalendarEvent fields read as they come (unvalidated: checked here). */
  seatsPerTimeSlot?: unknown;
  metadata?: unknown;
  videoCallData?: unknown;
}

/** Attendees a snapshot keeps: a seated cancel may name more than a booking gets reminders for. */
const MAX_ATTENDEES = 100;

/** A time Cal.com sent (`...Z` or `...+00:00`) in ms; 400 naming the field when it is no real time. */
function parseTime(value: string, path: string, problems: ErrorDetail[]): number {
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) problems.push({ path, message: 'is not a valid date-time' });
  return ms;
}

const timeOf = (value: string | null | undefined): number | undefined =>
  typeof value === 'string' ? Date.parse(value) : undefined;

const text = (value: unknown, max: number): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? shorten(value, max) : undefined;

const MAX_URL = 2000;

/** An absolute http(s) URL with nothing a mail client could misread; else undefined. */
export function httpUrl(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  // No whitespace or control characters: a URL in a mail is one word.
  if (trimmed === '' || trimmed.length > MAX_URL || /[\s\p{Cc}]/u.test(trimmed)) return undefined;
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  return url.href.length > MAX_URL ? undefined : url.href;
}

const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;

/**
 * The meeting's join link as Cal.com gives it: `metadata.videoCallUrl` (Cal.com's own link to
 * the call, also for "integrations:daily"), else `videoCallData.url` (the video app's room),
 * else a `location` that is itself a URL.
 */
export function joinUrlOf(payload: BookingPayloadInput): string | undefined {
  return (
    httpUrl(field(payload.metadata, 'videoCallUrl')) ??
    httpUrl(field(payload.videoCallData, 'url')) ??
    httpUrl(payload.location)
  );
}

/** The part of a Cal.com booking event reminders use, bounded; 400 for times that are no times. */
export function snapshotBookingEvent(input: {
  firm: string;
  trigger: BookingTrigger;
  createdAt: unknown;
  payload: BookingPayloadInput;
  rawBody: string;
  receivedAt: number;
}): BookingEventJob {
  const { payload } = input;
  const problems: ErrorDetail[] = [];
  const start = parseTime(payload.startTime, '/payload/startTime', problems);
  const end =
    payload.endTime === undefined ? undefined : parseTime(payload.endTime, '/payload/endTime', problems);
  if (problems.length > 0) {
    throw invalidRequest(
      `The booking's ${problems.map((p) => p.path).join(' and ')} is not a valid time.`,
      problems,
    );
  }
  const created = typeof input.createdAt === 'string' ? Date.parse(input.createdAt) : NaN;
  const attendees: BookingPerson[] = [];
  for (const a of (payload.attendees ?? []).slice(0, MAX_ATTENDEES)) {
    if (typeof a.email !== 'string') continue;
    const name = text(a.name, 200);
    const zone = text(a.timeZone, 64);
    attendees.push({
      email: a.email.slice(0, 320),
      ...(name === undefined ? {} : { name }),
      ...(zone === undefined ? {} : { time_zone: zone }),
    });
  }
  const organizerName = text(payload.organizer?.name, 200);
  const organizerEmail = text(payload.organizer?.email, 320);
  const location = text(payload.location, 300);
  const joinUrl = joinUrlOf(payload);
  const seated = typeof payload.seatsPerTimeSlot === 'number' && payload.seatsPerTimeSlot > 0;
  const rescheduleUid =
    typeof payload.rescheduleUid === 'string' && payload.rescheduleUid !== ''
      ? payload.rescheduleUid
      : undefined;
  // The replaced booking's time, when Cal.com sent it (the schema checked its form).
  const oldStart = rescheduleUid === undefined ? undefined : timeOf(payload.rescheduleStartTime);
  const oldEnd = oldStart === undefined ? undefined : timeOf(payload.rescheduleEndTime);
  return {
    firm: input.firm,
    trigger: input.trigger,
    uid: payload.uid,
    ...(rescheduleUid === undefined ? {} : { reschedule_uid: rescheduleUid }),
    ...(oldStart === undefined ? {} : { reschedule_start_at: oldStart }),
    ...(oldEnd === undefined || oldStart === undefined || oldEnd < oldStart
      ? {}
      : { reschedule_end_at: oldEnd }),
    title: text(payload.title, 200) ?? 'Appointment',
    start_at: start,
    ...(end === undefined || end < start ? {} : { end_at: end }),
    // Cal.com's location is a text, a URL or an app reference ("integrations:daily"): only the
    // first two mean something to a person.
    ...(location === undefined || location.startsWith('integrations:') ? {} : { location }),
    ...(joinUrl === undefined ? {} : { join_url: joinUrl }),
    ...(seated ? { seated: true } : {}),
    attendees,
    ...(organizerName === undefined && organizerEmail === undefined
      ? {}
      : {
          organizer: {
            ...(organizerName === undefined ? {} : { name: organizerName }),
            ...(organizerEmail === undefined ? {} : { email: organizerEmail }),
          },
        }),
    event_at: Number.isFinite(created) ? created : input.receivedAt,
    received_at: input.receivedAt,
    delivery: sha256Hex(input.rawBody).slice(0, 32),
  };
}

/** Applies one booking event to the firm's reminders (the bookingEvent job). */
export async function applyBookingEvent(
  services: Services,
  event: BookingEventJob,
): Promise<Record<string, unknown>> {
  const firm = await getFirm(services.mongo.db, event.firm);
  if (firm === null) return { outcome: 'firm_not_found' };
  // The lead whose appointment this booking is follows it (docs/appointments.md#the-lead).
  const leads = await followBookingEvent(services, event);
  const followed = leads.length === 0 ? {} : { leads };
  if (event.trigger === 'BOOKING_REQUESTED' || event.trigger === 'BOOKING_REJECTED') {
    // A request has no reminders until the host accepts (Cal.com then sends BOOKING_CREATED).
    return { uid: event.uid, outcome: 'no_reminders', ...followed };
  }
  const now = Date.now();
  const booking = bookingRecord(firm, event);
  const expireAt = bookingExpiry(event.end_at ?? event.start_at, now);
  if (event.trigger === 'BOOKING_CANCELLED') {
    const cancelled = await cancelBookingReminders(reminderStoreOf(services), firm._id, event.uid, {
      state: 'cancelled',
      tombstone: { ...booking, state: 'cancelled', cancelled_at: now },
      named: namedEmails(event),
      seated: event.seated === true,
      eventAt: event.event_at,
      now,
      expireAt,
    });
    return { uid: event.uid, ...cancelled, ...followed };
  }
  let previous: Record<string, unknown> = {};
  if (event.trigger === 'BOOKING_RESCHEDULED' && event.reschedule_uid !== undefined) {
    // Rescheduling the booking onto its own uid is a new time for it: the store handles that.
    if (event.reschedule_uid !== event.uid) {
      const replaced = replacedBooking(booking, event);
      const old = await cancelBookingReminders(reminderStoreOf(services), firm._id, event.reschedule_uid, {
        state: 'rescheduled',
        tombstone: { ...replaced, state: 'rescheduled', cancelled_at: now, rescheduled_to: event.uid },
        // With its own time, a seated booking never seen stays open for its other seats.
        ownTime: event.reschedule_start_at !== undefined,
        rescheduledTo: event.uid,
        // A seat moved to another time leaves the old booking; the others stay on it.
        named: namedEmails(event),
        seated: event.seated === true,
        eventAt: event.event_at,
        now,
        // Kept as long as the later of the two bookings.
        expireAt: Math.max(expireAt, bookingExpiry(replaced.end_at ?? replaced.start_at, now)),
      });
      previous = { previous: { uid: event.reschedule_uid, ...old } };
    }
  }
  // Kept without reminders when it starts too far ahead: its uid is known, a cancel finds it.
  const tooFar = event.start_at > event.received_at + BOOKING_HORIZON_MS;
  const reminders = tooFar ? [] : remindersOf(firm, event);
  const stored = await storeBookingReminders(reminderStoreOf(services), firm._id, event.uid, {
    booking,
    reminders,
    now,
    expireAt,
    maxDue: services.config.bookingRemindersPerFirm,
  });
  for (const { field, due_at } of stored.due) {
    await enqueue(
      services.queues,
      JOBS.sendReminder,
      { firm: firm._id, booking_uid: event.uid, reminder: field, due_at },
      { delay: due_at - Date.now() },
    );
  }
  const limited = tooFar
    ? { not_scheduled: 'start_beyond_horizon' }
    : stored.refused > 0
      ? { not_scheduled: 'firm_reminder_limit', refused: stored.refused }
      : {};
  if ('not_scheduled' in limited) {
    services.log.warn(
      { firm: firm._id, uid: event.uid, start_at: event.start_at, ...limited },
      tooFar
        ? 'booking reminders not scheduled: the booking starts more than a year ahead'
        : 'booking reminders not scheduled: the firm has BOOKING_REMINDERS_PER_FIRM reminders to come',
    );
  }
  return {
    uid: event.uid,
    outcome: stored.outcome,
    scheduled: stored.due.length,
    ...limited,
    ...previous,
    ...followed,
  };
}

/**
 * The booking a BOOKING_RESCHEDULED replaces, as far as the event tells it: at its own time when
 * Cal.com sent it (rescheduleStartTime), else at the new one's. Its place and join link are the
 * new booking's, not its own: left out, they come with its other seats' events.
 */
function replacedBooking(booking: BookingRecord, event: BookingEventJob): BookingRecord {
  const start = event.reschedule_start_at;
  if (start === undefined) return booking;
  const { location: _location, join_url: _joinUrl, end_at: _endAt, ...rest } = booking;
  return {
    ...rest,
    start_at: start,
    ...(event.reschedule_end_at === undefined ? {} : { end_at: event.reschedule_end_at }),
  };
}

/** The attendees an event names, by normalized address (each once). */
function namedEmails(event: BookingEventJob): string[] {
  const emails = new Set<string>();
  for (const a of event.attendees) {
    const email = normalizeEmail(a.email);
    if (email !== null) emails.add(email);
  }
  return [...emails];
}

/**
 * The attendees a booking has reminders for: the first MAX_BOOKING_ATTENDEES distinct valid
 * addresses (normalized), with what the event says of each.
 */
function bookingAttendees(event: BookingEventJob): Array<{ email: string; person: BookingPerson }> {
  const kept: Array<{ email: string; person: BookingPerson }> = [];
  for (const person of event.attendees) {
    if (kept.length === MAX_BOOKING_ATTENDEES) break;
    const email = normalizeEmail(person.email);
    if (email !== null && !kept.some((k) => k.email === email)) kept.push({ email, person });
  }
  return kept;
}

const label = (a: BookingPerson): string => (a.name === undefined ? a.email : `${a.name} <${a.email}>`);

function bookingRecord(firm: FirmDoc, event: BookingEventJob): BookingRecord {
  const organizer = event.organizer?.name ?? event.organizer?.email;
  const people = bookingAttendees(event).map(({ email, person }) => ({ email, label: label(person) }));
  return {
    state: 'active',
    start_at: event.start_at,
    ...(event.end_at === undefined ? {} : { end_at: event.end_at }),
    title: event.title,
    ...(event.location === undefined ? {} : { location: event.location }),
    ...(event.join_url === undefined ? {} : { join_url: event.join_url }),
    ...(organizer === undefined ? {} : { organizer }),
    attendees: people
      .map((p) => p.label)
      .join(', ')
      .slice(0, 2000),
    people,
    ...(event.seated === true ? { seated: true } : {}),
    firm_name: firm.name,
    event_at: event.event_at,
  };
}

interface Recipient {
  to: string;
  name?: string;
  time_zone: string;
  role: 'attendee' | 'firm';
}

/**
 * The booking's attendees (bookingAttendees: times in their own time zone, else the firm's), then
 * the firm's notification_emails (in the firm's time zone); an address appears once.
 */
function recipientsOf(firm: FirmDoc, event: BookingEventJob): Recipient[] {
  const firmZone = firm.settings.timezone;
  const seen = new Set<string>();
  const recipients: Recipient[] = [];
  const add = (recipient: Recipient) => {
    if (seen.has(recipient.to)) return;
    seen.add(recipient.to);
    recipients.push(recipient);
  };
  for (const { email: to, person: attendee } of bookingAttendees(event)) {
    const zone =
      attendee.time_zone !== undefined && isTimeZone(attendee.time_zone) ? attendee.time_zone : firmZone;
    add({
      to,
      ...(attendee.name === undefined ? {} : { name: attendee.name }),
      time_zone: zone,
      role: 'attendee',
    });
  }
  for (const email of firm.settings.notification_emails) {
    const to = normalizeEmail(email);
    if (to !== null) add({ to, name: firm.name, time_zone: firmZone, role: 'firm' });
  }
  return recipients;
}

/** One reminder per offset and recipient, due at start − offset; those due by the event's arrival are skipped. */
function remindersOf(firm: FirmDoc, event: BookingEventJob): ReminderRecord[] {
  const recipients = recipientsOf(firm, event);
  const reminders: ReminderRecord[] = [];
  for (const offset of firm.settings.reminder_offsets_minutes) {
    const due = event.start_at - offset * 60_000;
    if (due <= event.received_at) continue;
    for (const r of recipients) {
      reminders.push({
        booking_uid: event.uid,
        due_at: due,
        offset_minutes: offset,
        channel: 'email',
        to: r.to,
        ...(r.name === undefined ? {} : { name: r.name }),
        time_zone: r.time_zone,
        role: r.role,
        status: 'scheduled',
      });
    }
  }
  return reminders;
}
