import { loadRedisScript } from '../../platform/redis-script.js';
import type { BookingRecord, ReminderRecord, ReminderStore } from './reminder-records.js';

// The sender's side of the reminder store (reminder-records.ts): a send attempt takes a due
// reminder (scheduled → sending, under a lease), renews the lease while SMTP works, and records
// how the send ended; each step one Lua script, atomic with any cancel.

const LEASE = loadRedisScript(new URL('./lease-reminder.lua', import.meta.url), {
  keys: ['booking'],
  args: ['field', 'now', 'lease_ms', 'token'],
});
const RENEW = loadRedisScript(new URL('./renew-reminder-lease.lua', import.meta.url), {
  keys: ['booking'],
  args: ['field', 'token', 'now', 'lease_ms'],
});
const FINISH = loadRedisScript(new URL('./finish-reminder.lua', import.meta.url), {
  keys: ['booking'],
  args: ['field', 'token', 'outcome', 'now', 'detail'],
});

export type LeaseResult =
  | { outcome: 'leased'; reminder: ReminderRecord; booking: BookingRecord }
  /** Another attempt holds it until `leaseUntil` (ms since epoch). */
  | { outcome: 'busy'; leaseUntil: number }
  | { outcome: 'missing' | 'expired' | 'sent' | 'cancelled' | 'failed' | 'scheduled' };

/** Leases a due reminder to one send attempt (scheduled → sending), atomically with any cancel. */
export async function leaseReminder(
  store: ReminderStore,
  firm: string,
  uid: string,
  field: string,
  input: { now: number; leaseMs: number; token: string },
): Promise<LeaseResult> {
  const [outcome, reminder, booking] = (await LEASE.run(
    store.redis,
    { booking: store.keys.bookingReminders(firm, uid) },
    { field, now: input.now, lease_ms: input.leaseMs, token: input.token },
  )) as string[];
  if (outcome === 'leased') {
    return {
      outcome,
      reminder: JSON.parse(reminder!) as ReminderRecord,
      booking: JSON.parse(booking!) as BookingRecord,
    };
  }
  if (outcome === 'busy') return { outcome, leaseUntil: Number(reminder) };
  return { outcome: outcome as Exclude<LeaseResult['outcome'], 'leased' | 'busy'> };
}

/** Extends the lease of a reminder this attempt (`token`) is sending; false when it is not its own. */
export async function renewReminderLease(
  store: ReminderStore,
  firm: string,
  uid: string,
  field: string,
  input: { token: string; now: number; leaseMs: number },
): Promise<boolean> {
  const renewed = await RENEW.run(
    store.redis,
    { booking: store.keys.bookingReminders(firm, uid) },
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
    { booking: store.keys.bookingReminders(firm, uid) },
    { field, token: input.token, outcome: input.outcome, now: input.now, detail: input.detail.slice(0, 500) },
  )) as string;
}
