import type { Redis } from 'ioredis';
import { loadRedisScript } from '../../platform/redis-script.js';
import { redisKeys } from '../../platform/redis-keys.js';

// Booking reminders live in Redis (CONTRACT §3.11), one hash per booking:
//
//   bookingReminders(firm, uid)             (core/platform/redis-keys.ts)
//     booking                              JSON: the booking (state active | cancelled | rescheduled,
//                                          start, end, title, ..., the event time that set it)
//     r|<start ms>|<offset min>|<email>    JSON: one reminder (due_at, to, time zone, status, ...)
//
// The hash expires 30 days after the booking ends (or after the last write, if that is later):
// memory is bounded by the bookings of the last month and the coming ones, each at most
// 10 offsets × 100 recipients. No other index exists: the delayed BullMQ job of each reminder
// is its schedule, and reads are by booking uid. A cancelled booking keeps its hash (state
// `cancelled`, its reminders `cancelled`) until it expires: the tombstone makes the cancel win
// over a repeated or late BOOKING_CREATED, and `GET .../reminders` still shows what happened.
//
// Every change is one Lua script, so it is atomic against every other: a reminder is sent only
// after `claim` moved it from `scheduled` to `sending`, and a cancel moves only `scheduled`
// reminders to `cancelled`. A cancel racing a send therefore either comes first (nothing is
// sent) or finds the reminder `sending` (the mail goes out, the reminder ends `sent`; were the
// send to fail, it ends `cancelled` instead of being retried). Never both.

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
  organizer?: string;
  /** "Name <email>, ..." of the attendees, for the firm's mail. */
  attendees: string;
  firm_name: string;
  /** When the event that set this record was made: an older event cannot move the booking back. */
  event_at: number;
  cancelled_at?: number;
  rescheduled_to?: string;
}

const RETENTION_MS = 30 * 24 * 3600_000;

/** A reminder's field: the booking's start, the offset and the recipient make it unique. */
export const reminderField = (startAt: number, offsetMinutes: number, to: string): string =>
  `r|${startAt}|${offsetMinutes}|${to}`;

/** When a booking's hash may go: 30 days after the booking ends, and never before now + 30 days. */
export const bookingExpiry = (endOrStart: number, now: number): number =>
  Math.max(endOrStart, now) + RETENTION_MS;

const script = (file: string) => new URL(`./${file}`, import.meta.url);
const FUNCTIONS = script('reminder-functions.lua');
const STORE = loadRedisScript(script('store-booking-reminders.lua'), {
  keys: ['booking'],
  args: ['booking_json', 'start_at', 'event_at', 'now', 'expire_at'],
  include: [FUNCTIONS],
});
const CANCEL = loadRedisScript(script('cancel-booking-reminders.lua'), {
  keys: ['booking'],
  args: ['state', 'booking_json', 'now', 'expire_at', 'rescheduled_to'],
  include: [FUNCTIONS],
});
const CLAIM = loadRedisScript(script('claim-reminder.lua'), {
  keys: ['booking'],
  args: ['field', 'now', 'lease_ms', 'token'],
});
const RENEW = loadRedisScript(script('renew-reminder.lua'), {
  keys: ['booking'],
  args: ['field', 'token', 'now', 'lease_ms'],
});
const FINISH = loadRedisScript(script('finish-reminder.lua'), {
  keys: ['booking'],
  args: ['field', 'token', 'outcome', 'now', 'detail'],
});

/** Where a firm's reminders live: the Redis connection and the deployment's key prefix. */
export interface ReminderStore {
  redis: Redis;
  prefix: string;
}

export type StoreOutcome = 'stored' | 'unchanged' | 'moved' | 'stale' | BookingState;

/**
 * Stores a booking and its reminders, unless the booking was cancelled (the cancel wins), is
 * already stored for this start (a repeat changes nothing), or was set by a later event. A
 * newer event with another start cancels the reminders of the old one.
 */
export async function storeBookingReminders(
  store: ReminderStore,
  firm: string,
  uid: string,
  input: { booking: BookingRecord; reminders: ReminderRecord[]; now: number; expireAt: number },
): Promise<{ outcome: StoreOutcome; due: Array<{ field: string; due_at: number }> }> {
  const { booking } = input;
  const pairs = input.reminders.flatMap((r) => [
    reminderField(booking.start_at, r.offset_minutes, r.to),
    JSON.stringify(r),
  ]);
  const reply = (await STORE.run(
    store.redis,
    { booking: redisKeys(store.prefix).bookingReminders(firm, uid) },
    {
      booking_json: JSON.stringify(booking),
      start_at: booking.start_at,
      event_at: booking.event_at,
      now: input.now,
      expire_at: input.expireAt,
    },
    pairs,
  )) as string[];
  const [outcome, ...rest] = reply;
  const due: Array<{ field: string; due_at: number }> = [];
  for (let i = 0; i + 1 < rest.length; i += 2) due.push({ field: rest[i]!, due_at: Number(rest[i + 1]) });
  return { outcome: outcome as StoreOutcome, due };
}

/**
 * Cancels a booking's reminders and leaves its tombstone (state `cancelled`, or `rescheduled`
 * with the new uid), also for a booking never seen: a late BOOKING_CREATED then stores nothing.
 */
export async function cancelBookingReminders(
  store: ReminderStore,
  firm: string,
  uid: string,
  input: {
    state: 'cancelled' | 'rescheduled';
    tombstone: BookingRecord;
    rescheduledTo?: string;
    now: number;
    expireAt: number;
  },
): Promise<{ outcome: 'cancelled' | 'unchanged'; stopped: number }> {
  const [outcome, stopped] = (await CANCEL.run(
    store.redis,
    { booking: redisKeys(store.prefix).bookingReminders(firm, uid) },
    {
      state: input.state,
      booking_json: JSON.stringify(input.tombstone),
      now: input.now,
      expire_at: input.expireAt,
      rescheduled_to: input.rescheduledTo ?? '',
    },
  )) as [string, number];
  return { outcome: outcome as 'cancelled' | 'unchanged', stopped: Number(stopped) };
}

export type ClaimResult =
  | { outcome: 'claimed'; reminder: ReminderRecord; booking: BookingRecord }
  /** Another attempt holds it until `leaseUntil` (ms since epoch). */
  | { outcome: 'busy'; leaseUntil: number }
  | { outcome: 'missing' | 'expired' | 'sent' | 'cancelled' | 'failed' | 'scheduled' };

/** Takes a due reminder for one send attempt (scheduled → sending), atomically with any cancel. */
export async function claimReminder(
  store: ReminderStore,
  firm: string,
  uid: string,
  field: string,
  input: { now: number; leaseMs: number; token: string },
): Promise<ClaimResult> {
  const [outcome, reminder, booking] = (await CLAIM.run(
    store.redis,
    { booking: redisKeys(store.prefix).bookingReminders(firm, uid) },
    { field, now: input.now, lease_ms: input.leaseMs, token: input.token },
  )) as string[];
  if (outcome === 'claimed') {
    return {
      outcome,
      reminder: JSON.parse(reminder!) as ReminderRecord,
      booking: JSON.parse(booking!) as BookingRecord,
    };
  }
  if (outcome === 'busy') return { outcome, leaseUntil: Number(reminder) };
  return { outcome: outcome as Exclude<ClaimResult['outcome'], 'claimed' | 'busy'> };
}

/** Extends the lease of a reminder this attempt (`token`) is sending; false when it is not its own. */
export async function renewReminder(
  store: ReminderStore,
  firm: string,
  uid: string,
  field: string,
  input: { token: string; now: number; leaseMs: number },
): Promise<boolean> {
  const renewed = await RENEW.run(
    store.redis,
    { booking: redisKeys(store.prefix).bookingReminders(firm, uid) },
    { field, token: input.token, now: input.now, lease_ms: input.leaseMs },
  );
  return renewed === 1;
}

/**
 * Records how a send attempt ended: `sent` (SMTP accepted it; never sent again), `retry` (it
 * was refused, so nothing went out: back to scheduled, or cancelled if a cancel came meanwhile),
 * `failed` (given up).
 */
export async function finishReminder(
  store: ReminderStore,
  firm: string,
  uid: string,
  field: string,
  input: { token: string; outcome: 'sent' | 'retry' | 'failed'; now: number; detail: string },
): Promise<string> {
  return (await FINISH.run(
    store.redis,
    { booking: redisKeys(store.prefix).bookingReminders(firm, uid) },
    { field, token: input.token, outcome: input.outcome, now: input.now, detail: input.detail.slice(0, 500) },
  )) as string;
}

/** A booking's stored reminders, in field order (unsorted). */
export async function readBookingReminders(
  store: ReminderStore,
  firm: string,
  uid: string,
): Promise<{ booking: BookingRecord | null; reminders: ReminderRecord[] }> {
  const all = await store.redis.hgetall(redisKeys(store.prefix).bookingReminders(firm, uid));
  const reminders: ReminderRecord[] = [];
  let booking: BookingRecord | null = null;
  for (const [field, value] of Object.entries(all)) {
    if (field === 'booking') booking = JSON.parse(value) as BookingRecord;
    else if (field.startsWith('r|')) reminders.push(JSON.parse(value) as ReminderRecord);
  }
  return { booking, reminders };
}
