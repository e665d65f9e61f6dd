import type { RedisClient } from '../../platform/redis.js';
import type { RedisKeys } from '../../platform/redis-keys.js';

// Booking reminders live in Redis (docs/bookings.md#redis-layout), one hash per booking:
//
//   bookingReminders(firm, uid)             (core/platform/redis-keys.ts)
//     booking                              JSON: the booking (state active | cancelled | rescheduled,
//                                          start, end, title, ..., the event time that set it)
//     r|<start ms>|<offset min>|<email>    JSON: one reminder (due_at, to, time zone, status, ...)
//
// The hash expires 30 days after the booking ends (or after the last write, if that is later),
// and never later than a year and 30 days ahead: memory is bounded by the bookings of the last
// month and the coming year's, each at most 10 offsets × (20 attendees + the firm's addresses),
// and by the firm's cap on reminders to come (BOOKING_REMINDERS_PER_FIRM). No other index exists: the delayed BullMQ job of each reminder
// is its schedule, and reads are by booking uid. A cancelled booking keeps its hash (state
// `cancelled`, its reminders `cancelled`) until it expires: the tombstone makes the cancel win
// over a repeated or late BOOKING_CREATED, and `GET .../reminders` still shows what happened.
//
// Every change is one Lua script (reminder-schedule.ts: the booking events' side,
// reminder-lease.ts: the sender's), so it is atomic against every other: a reminder is sent
// only after its send attempt leased it (moved it from `scheduled` to `sending`), and a cancel
// moves only `scheduled` reminders to `cancelled`. A cancel racing a send therefore either comes
// first (nothing is sent) or finds the reminder `sending` (the mail goes out, the reminder ends
// `sent`; were the send to fail, it ends `cancelled` instead of being retried). Never both.

export type ReminderStatus = 'scheduled' | 'sending' | 'sent' | 'cancelled' | 'failed';

export interface ReminderRecord {
  booking_uid: string;
  /** ms since epoch. */
  due_at: number;
  offset_minutes: number;
  channel: 'email';
  to: string;
  name?: string;
  /** The IANA time zone the mail shows times in. */
  time_zone: string;
  role: 'attendee' | 'firm';
  status: ReminderStatus;
  attempts?: number;
  /** While `sending`: the attempt holding it, and until when. */
  token?: string;
  lease_until?: number;
  /** A cancel arrived while the reminder was being sent: if that send fails, it is not retried. */
  cancel_requested?: boolean;
  sent_at?: number;
  message_id?: string;
  cancelled_at?: number;
  last_error?: string;
}

export type BookingState = 'active' | 'cancelled' | 'rescheduled';

export interface BookingRecord {
  state: BookingState;
  start_at: number;
  end_at?: number;
  title: string;
  location?: string;
  /** The meeting's join link: an http(s) URL (checked when the event was snapshot). */
  join_url?: string;
  organizer?: string;
  /** "Name <email>, ..." of the attendees, for the firm's mail. */
  attendees: string;
  /** The attendees one by one (normalized email, "Name <email>"): seats join and leave. */
  people?: Array<{ email: string; label: string }>;
  /** A seated booking: a cancel naming only some attendees cancels only theirs. */
  seated?: boolean;
  /** Attendees who left a seated booking: email → the time of the event that removed them. */
  left?: Record<string, number>;
  firm_name: string;
  /** When the event that set this record was made: an older event cannot move the booking back. */
  event_at: number;
  cancelled_at?: number;
  rescheduled_to?: string;
}

const RETENTION_MS = 30 * 24 * 3600_000;

/**
 * How far ahead a booking may start and still get reminders: a start in 2099 made 72-year keys
 * (docs/bookings.md#limits). A booking further away is acknowledged and kept, without reminders.
 */
export const BOOKING_HORIZON_MS = 366 * 24 * 3600_000;

/** A reminder's field: the booking's start, the offset and the recipient make it unique. */
export const reminderField = (startAt: number, offsetMinutes: number, to: string): string =>
  `r|${startAt}|${offsetMinutes}|${to}`;

/**
 * When a booking's hash may go: 30 days after the booking ends, never before now + 30 days, and
 * never after the horizon + 30 days (whatever times the sender wrote).
 */
export const bookingExpiry = (endOrStart: number, now: number): number =>
  Math.min(Math.max(endOrStart, now), now + BOOKING_HORIZON_MS) + RETENTION_MS;

/** Where a firm's reminders live: the Redis connection and the deployment's keys. */
export interface ReminderStore {
  redis: RedisClient;
  keys: RedisKeys;
}

/** A booking's stored reminders, in field order (unsorted). */
export async function readBookingReminders(
  store: ReminderStore,
  firm: string,
  uid: string,
): Promise<{ booking: BookingRecord | null; reminders: ReminderRecord[] }> {
  const all = await store.redis.hgetall(store.keys.bookingReminders(firm, uid));
  const reminders: ReminderRecord[] = [];
  let booking: BookingRecord | null = null;
  for (const [field, value] of Object.entries(all)) {
    if (field === 'booking') booking = JSON.parse(value) as BookingRecord;
    else if (field.startsWith('r|')) reminders.push(JSON.parse(value) as ReminderRecord);
  }
  return { booking, reminders };
}
