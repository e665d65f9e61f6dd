import type { Redis, Result } from 'ioredis';

// Booking reminders live in Redis (CONTRACT §3.11), one hash per booking:
//
//   <QUEUE_PREFIX>:reminders:<firm>:<booking uid>
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

/** The hash of one booking's reminders. */
export const bookingKey = (prefix: string, firm: string, uid: string): string =>
  `${prefix}:reminders:${firm}:${uid}`;

/** A reminder's field: the booking's start, the offset and the recipient make it unique. */
export const reminderField = (startAt: number, offsetMinutes: number, to: string): string =>
  `r|${startAt}|${offsetMinutes}|${to}`;

/** When a booking's hash may go: 30 days after the booking ends, and never before now + 30 days. */
export const bookingExpiry = (endOrStart: number, now: number): number =>
  Math.max(endOrStart, now) + RETENTION_MS;

const SHARED = `
local function each_reminder(key, fn)
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'r|' then fn(all[i], cjson.decode(all[i + 1])) end
  end
end
-- Cancels what has not been sent (but those whose field starts with keep): a reminder being
-- sent cannot be stopped, it is only kept from being retried.
local function cancel_pending(key, now, keep)
  local n = 0
  each_reminder(key, function(field, r)
    if keep and string.sub(field, 1, #keep) == keep then return end
    if r.status == 'scheduled' then
      r.status = 'cancelled'
      r.cancelled_at = now
      redis.call('HSET', key, field, cjson.encode(r))
      n = n + 1
    elseif r.status == 'sending' and not r.cancel_requested then
      r.cancel_requested = true
      redis.call('HSET', key, field, cjson.encode(r))
      n = n + 1
    end
  end)
  return n
end
local function extend_expiry(key, now, expire_at)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 or now + ttl < expire_at then redis.call('PEXPIREAT', key, expire_at) end
end
`;

// KEYS[1] the booking's hash. ARGV: booking JSON, start ms, event ms, now, expire-at ms, then
// field/record pairs. Returns {outcome, field, due, field, due, ...}: the reminders of this start
// still to send (on a repeat too, so a retried job re-adds any send job it did not add).
const STORE = `${SHARED}
local key = KEYS[1]
local start_at, event_at = tonumber(ARGV[2]), tonumber(ARGV[3])
local now, expire_at = tonumber(ARGV[4]), tonumber(ARGV[5])
local current = 'r|' .. ARGV[2] .. '|'
local outcome = 'stored'
local raw = redis.call('HGET', key, 'booking')
if raw then
  local b = cjson.decode(raw)
  if b.state ~= 'active' then return {b.state} end
  if b.start_at == start_at then
    outcome = 'unchanged'
  elseif event_at < b.event_at then
    return {'stale'}
  else
    outcome = 'moved'
    cancel_pending(key, now, current)
  end
end
if outcome ~= 'unchanged' then
  redis.call('HSET', key, 'booking', ARGV[1])
  for i = 6, #ARGV, 2 do
    local existing = redis.call('HGET', key, ARGV[i])
    if not existing or cjson.decode(existing).status == 'cancelled' then
      redis.call('HSET', key, ARGV[i], ARGV[i + 1])
    end
  end
end
extend_expiry(key, now, expire_at)
local due = {outcome}
each_reminder(key, function(field, r)
  if r.status == 'scheduled' and string.sub(field, 1, #current) == current then
    table.insert(due, field)
    table.insert(due, string.format('%.0f', r.due_at))
  end
end)
return due
`;

// KEYS[1]. ARGV: state (cancelled | rescheduled), booking JSON for a booking never seen, now,
// expire-at ms, the new uid of a rescheduled booking (or ''). Returns {outcome, reminders stopped}.
const CANCEL = `${SHARED}
local key = KEYS[1]
local now, expire_at = tonumber(ARGV[3]), tonumber(ARGV[4])
local raw = redis.call('HGET', key, 'booking')
local b
if raw then
  b = cjson.decode(raw)
  if b.state ~= 'active' then
    extend_expiry(key, now, expire_at)
    return {'unchanged', 0}
  end
  b.state = ARGV[1]
  b.cancelled_at = now
  if ARGV[5] ~= '' then b.rescheduled_to = ARGV[5] end
else
  b = cjson.decode(ARGV[2])
end
redis.call('HSET', key, 'booking', cjson.encode(b))
local n = cancel_pending(key, now, nil)
extend_expiry(key, now, expire_at)
return {'cancelled', n}
`;

// KEYS[1]. ARGV: field, now, lease ms, token. Moves a reminder from scheduled to sending for
// this attempt. Returns {'claimed', reminder JSON, booking JSON}, {'busy', lease end} or {why not}.
const CLAIM = `
local key, field, now = KEYS[1], ARGV[1], tonumber(ARGV[2])
local raw = redis.call('HGET', key, field)
local meta = redis.call('HGET', key, 'booking')
if not raw or not meta then return {'missing'} end
local r = cjson.decode(raw)
if r.status == 'sending' then
  if r.lease_until > now then return {'busy', tostring(r.lease_until)} end
  -- The attempt holding it died mid-send. A cancel since then wins; otherwise the send is
  -- repeated (SMTP cannot be asked whether it was accepted: at least once, never lost).
  if r.cancel_requested then
    r.status = 'cancelled'
    r.cancelled_at = now
    r.token = nil
    r.lease_until = nil
    redis.call('HSET', key, field, cjson.encode(r))
    return {'cancelled'}
  end
elseif r.status ~= 'scheduled' then
  return {r.status}
end
local b = cjson.decode(meta)
local deadline = b.end_at or (b.start_at + 3600000)
if now > deadline then
  r.status = 'failed'
  r.last_error = 'The booking was over before the reminder could be sent.'
  r.token = nil
  r.lease_until = nil
  redis.call('HSET', key, field, cjson.encode(r))
  return {'expired'}
end
r.status = 'sending'
r.token = ARGV[4]
r.lease_until = now + tonumber(ARGV[3])
r.attempts = (r.attempts or 0) + 1
local encoded = cjson.encode(r)
redis.call('HSET', key, field, encoded)
return {'claimed', encoded, meta}
`;

// KEYS[1]. ARGV: field, token, now, lease ms. The attempt holding a reminder in `sending` extends
// its lease (a send still under way). Returns 1, or 0 when the reminder is no longer its own.
const RENEW = `
local key, field, now = KEYS[1], ARGV[1], tonumber(ARGV[3])
local raw = redis.call('HGET', key, field)
if not raw then return 0 end
local r = cjson.decode(raw)
if r.status ~= 'sending' or r.token ~= ARGV[2] then return 0 end
r.lease_until = now + tonumber(ARGV[4])
redis.call('HSET', key, field, cjson.encode(r))
return 1
`;

// KEYS[1]. ARGV: field, token, outcome (sent | retry | failed), now, message id or error.
// `sent` is recorded whatever attempt holds the reminder: the mail went out. Returns the status.
const FINISH = `
local key, field, now = KEYS[1], ARGV[1], tonumber(ARGV[4])
local raw = redis.call('HGET', key, field)
if not raw then return 'missing' end
local r = cjson.decode(raw)
if ARGV[3] == 'sent' then
  r.status = 'sent'
  r.sent_at = now
  r.message_id = ARGV[5]
  r.last_error = nil
elseif r.status ~= 'sending' or r.token ~= ARGV[2] then
  return 'superseded'
else
  if r.cancel_requested then
    r.status = 'cancelled'
    r.cancelled_at = now
  elseif ARGV[3] == 'retry' then
    r.status = 'scheduled'
  else
    r.status = 'failed'
  end
  r.last_error = ARGV[5]
end
r.token = nil
r.lease_until = nil
r.cancel_requested = nil
redis.call('HSET', key, field, cjson.encode(r))
return r.status
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    intakeReminderStore(key: string, ...args: string[]): Result<string[], Context>;
    intakeReminderCancel(key: string, ...args: string[]): Result<[string, number], Context>;
    intakeReminderClaim(key: string, ...args: string[]): Result<string[], Context>;
    intakeReminderFinish(key: string, ...args: string[]): Result<string, Context>;
    intakeReminderRenew(key: string, ...args: string[]): Result<number, Context>;
  }
}

/** The scripts on this connection (sent once, then run by SHA). */
function scripts(redis: Redis): Redis {
  if (typeof redis.intakeReminderStore !== 'function') {
    redis.defineCommand('intakeReminderStore', { numberOfKeys: 1, lua: STORE });
    redis.defineCommand('intakeReminderCancel', { numberOfKeys: 1, lua: CANCEL });
    redis.defineCommand('intakeReminderClaim', { numberOfKeys: 1, lua: CLAIM });
    redis.defineCommand('intakeReminderFinish', { numberOfKeys: 1, lua: FINISH });
    redis.defineCommand('intakeReminderRenew', { numberOfKeys: 1, lua: RENEW });
  }
  return redis;
}

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
  const reply = await scripts(store.redis).intakeReminderStore(
    bookingKey(store.prefix, firm, uid),
    JSON.stringify(booking),
    String(booking.start_at),
    String(booking.event_at),
    String(input.now),
    String(input.expireAt),
    ...pairs,
  );
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
  const [outcome, stopped] = await scripts(store.redis).intakeReminderCancel(
    bookingKey(store.prefix, firm, uid),
    input.state,
    JSON.stringify(input.tombstone),
    String(input.now),
    String(input.expireAt),
    input.rescheduledTo ?? '',
  );
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
  const [outcome, reminder, booking] = await scripts(store.redis).intakeReminderClaim(
    bookingKey(store.prefix, firm, uid),
    field,
    String(input.now),
    String(input.leaseMs),
    input.token,
  );
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
  const renewed = await scripts(store.redis).intakeReminderRenew(
    bookingKey(store.prefix, firm, uid),
    field,
    input.token,
    String(input.now),
    String(input.leaseMs),
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
  return scripts(store.redis).intakeReminderFinish(
    bookingKey(store.prefix, firm, uid),
    field,
    input.token,
    input.outcome,
    String(input.now),
    input.detail.slice(0, 500),
  );
}

/** A booking's stored reminders, in field order (unsorted). */
export async function readBookingReminders(
  store: ReminderStore,
  firm: string,
  uid: string,
): Promise<{ booking: BookingRecord | null; reminders: ReminderRecord[] }> {
  const all = await store.redis.hgetall(bookingKey(store.prefix, firm, uid));
  const reminders: ReminderRecord[] = [];
  let booking: BookingRecord | null = null;
  for (const [field, value] of Object.entries(all)) {
    if (field === 'booking') booking = JSON.parse(value) as BookingRecord;
    else if (field.startsWith('r|')) reminders.push(JSON.parse(value) as ReminderRecord);
  }
  return { booking, reminders };
}
