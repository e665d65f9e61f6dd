import { loadRedisScript } from '../../platform/redis-script.js';
import {
  reminderField,
  type BookingRecord,
  type BookingState,
  type ReminderRecord,
  type ReminderStore,
} from './reminder-records.js';

// The booking events' side of the reminder store (reminder-records.ts): storing a booking's
// reminders, and cancelling them (a cancel, a reschedule), each one Lua script.

const FUNCTIONS = new URL('./reminder-functions.lua', import.meta.url);
const STORE = loadRedisScript(new URL('./store-booking-reminders.lua', import.meta.url), {
  keys: ['booking', 'due'],
  args: ['booking_json', 'start_at', 'event_at', 'now', 'expire_at', 'max_due', 'max_people'],
  include: [FUNCTIONS],
});
const CANCEL = loadRedisScript(new URL('./cancel-booking-reminders.lua', import.meta.url), {
  keys: ['booking', 'due'],
  args: [
    'state',
    'booking_json',
    'now',
    'expire_at',
    'rescheduled_to',
    'seated',
    'named_json',
    'event_at',
    'own_time',
  ],
  include: [FUNCTIONS],
});

export type StoreOutcome = 'stored' | 'unchanged' | 'joined' | 'moved' | 'stale' | BookingState;

/** The most attendees one booking has reminders for (seats past it get none). */
export const MAX_BOOKING_ATTENDEES = 20;

/**
 * Stores a booking and its reminders, unless the booking was cancelled (the cancel wins), is
 * already stored for this start (a repeat changes nothing), or was set by a later event. A
 * newer event with another start cancels the reminders of the old one. For the same start,
 * attendees not on the booking yet join it with their reminders ('joined': a new seat), up to
 * MAX_BOOKING_ATTENDEES. A reminder that would take the firm past `maxDue` reminders to come
 * is not stored (`refused` counts them).
 */
export async function storeBookingReminders(
  store: ReminderStore,
  firm: string,
  uid: string,
  input: {
    booking: BookingRecord;
    reminders: ReminderRecord[];
    now: number;
    expireAt: number;
    /** The firm's scheduled reminders at most (BOOKING_REMINDERS_PER_FIRM). */
    maxDue: number;
  },
): Promise<{ outcome: StoreOutcome; refused: number; due: Array<{ field: string; due_at: number }> }> {
  const { booking } = input;
  const pairs = input.reminders.flatMap((r) => [
    reminderField(booking.start_at, r.offset_minutes, r.to),
    JSON.stringify(r),
  ]);
  const keys = store.keys;
  const reply = (await STORE.run(
    store.redis,
    { booking: keys.bookingReminders(firm, uid), due: keys.firmRemindersDue(firm) },
    {
      booking_json: JSON.stringify(booking),
      start_at: booking.start_at,
      event_at: booking.event_at,
      now: input.now,
      expire_at: input.expireAt,
      max_due: input.maxDue,
      max_people: MAX_BOOKING_ATTENDEES,
    },
    pairs,
  )) as Array<string | number>;
  const [outcome, refused, ...rest] = reply;
  const due: Array<{ field: string; due_at: number }> = [];
  for (let i = 0; i + 1 < rest.length; i += 2) {
    due.push({ field: String(rest[i]), due_at: Number(rest[i + 1]) });
  }
  return { outcome: outcome as StoreOutcome, refused: Number(refused ?? 0), due };
}

/**
 * Cancels a booking's reminders and leaves its tombstone (state `cancelled`, or `rescheduled`
 * with the new uid), also for a booking never seen: a late BOOKING_CREATED then stores nothing.
 * Of a seated booking, an event naming only some of its attendees (`named`, normalized emails)
 * cancels only theirs ('seats_cancelled'); the booking stays active for the others.
 */
export async function cancelBookingReminders(
  store: ReminderStore,
  firm: string,
  uid: string,
  input: {
    state: 'cancelled' | 'rescheduled';
    tombstone: BookingRecord;
    rescheduledTo?: string;
    /**
     * The tombstone has the booking's own time (a cancel's; a reschedule's when Cal.com sent the
     * old time): a seated booking never seen may then stay open for its other seats.
     */
    ownTime?: boolean;
    /** The attendees the event names; [] names none (the whole booking). */
    named?: string[];
    /** The event says the booking is seated (the stored booking may say so too). */
    seated?: boolean;
    /** When the event was made: a seat left by it is not taken again by an older event. */
    eventAt?: number;
    now: number;
    expireAt: number;
  },
): Promise<{ outcome: 'cancelled' | 'seats_cancelled' | 'unchanged'; stopped: number }> {
  const keys = store.keys;
  const [outcome, stopped] = (await CANCEL.run(
    store.redis,
    { booking: keys.bookingReminders(firm, uid), due: keys.firmRemindersDue(firm) },
    {
      state: input.state,
      booking_json: JSON.stringify(input.tombstone),
      now: input.now,
      expire_at: input.expireAt,
      rescheduled_to: input.rescheduledTo ?? '',
      seated: input.seated === true ? '1' : '',
      named_json: JSON.stringify(input.named ?? []),
      event_at: input.eventAt ?? input.now,
      own_time: input.state === 'cancelled' || input.ownTime === true ? '1' : '',
    },
  )) as [string, number];
  return { outcome: outcome as 'cancelled' | 'seats_cancelled' | 'unchanged', stopped: Number(stopped) };
}
