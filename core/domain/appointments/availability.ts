import { createHash } from 'node:crypto';
import { urlPolicyOf } from '../../platform/config.js';
import {
  AppError,
  badGateway,
  conflict,
  invalidRequest,
  serviceUnavailable,
  type ErrorDetail,
} from '../../platform/errors.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';
import { dateIn, isTimeZone, startOfDayIn } from '../../platform/time-zone.js';
import type { Services } from '../../wiring/services.js';
import { CalcomClient, CalcomError } from '../../integrations/booking/calcom.js';
import { HttpRequestError } from '../../integrations/http/guarded-http.js';
import type { BookingProviderSettings } from '../firms/firm-settings.js';
import type { FirmDoc } from '../firms/firms.js';

// Free slots of a firm's booking provider (docs/appointments.md#availability): Cal.com's /v2/slots
// for the firm's event type, at most MAX_DAYS days per request, each answer kept 30 s in Redis
// (an agent asks again and again within one conversation). What is kept is bounded, since the
// firm chooses the Cal.com URL and so its answers: only the slots we answer with (at most
// MAX_SLOTS_PER_DAY a day, each a short date-time), and per firm at most
// SLOTS_CACHE_MAX_QUERIES_PER_FIRM queries and SLOTS_CACHE_MAX_BYTES_PER_FIRM bytes, in one hash
// (cache-slots.lua); Cal.com's answer itself is read up to CALCOM_SLOTS_MAX_BYTES (calcom.ts).
// The days asked for are days in the
// query's time zone; Cal.com reads start and end as UTC instants (a date alone is 00:00:00Z to
// 23:59:59Z: get-slots.input.ts in calcom/cal.com), so it is asked for the instants that cover
// those local days and its answer is kept to them. Slot starts keep the offset of the time zone
// asked for, as Cal.com gives them.

/** Days one availability request may cover, start and end dates included. */
export const MAX_DAYS = 14;
const CACHE_SECONDS = 30;
/** Slots a day we answer with and keep: one every 15 minutes around the clock. */
export const MAX_SLOTS_PER_DAY = 96;
/** Queries one firm's slot cache holds at once (past it the firm's cache starts again). */
export const SLOTS_CACHE_MAX_QUERIES_PER_FIRM = 8;
/** Bytes of slots one firm's slot cache holds at most (a 14-day answer of 96 a day is ~45 KB). */
export const SLOTS_CACHE_MAX_BYTES_PER_FIRM = 256 * 1024;
/** The longest slot start kept (2026-12-01T09:00:00.000+05:45 is 29). */
const MAX_START_LENGTH = 40;

const CACHE_SLOTS = loadRedisScript(new URL('./cache-slots.lua', import.meta.url), {
  keys: ['cache'],
  args: ['field', 'value', 'ttl_ms', 'max_entries', 'max_bytes'],
});
const DAY_MS = 24 * 3600_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

export interface AvailabilityQuery {
  /** YYYY-MM-DD, the first day. */
  start: string;
  /** YYYY-MM-DD, the last day (included). */
  end: string;
  /** IANA time zone the days are in and the slots are shown in. */
  timeZone: string;
}

/** The firm's booking provider, or 409 booking_not_configured. */
export function bookingProviderOf(firm: FirmDoc): BookingProviderSettings {
  const booking = firm.settings.booking;
  if (booking === undefined) {
    throw conflict(
      'booking_not_configured',
      'This firm has no booking provider; set settings.booking ({provider: "calcom", api_key, event_type_id}) first.',
    );
  }
  return booking;
}

export function calcomOf(services: Services, booking: BookingProviderSettings): CalcomClient {
  return new CalcomClient({
    ...(booking.base_url === undefined ? {} : { baseUrl: booking.base_url }),
    apiKey: booking.api_key,
    policy: urlPolicyOf(services.config),
  });
}

const dayNumber = (date: string): number => Date.parse(`${date}T00:00:00Z`) / DAY_MS;

/** The next day of a YYYY-MM-DD date (after 9999-12-31 no longer of that form). */
const nextDate = (date: string): string =>
  new Date(Date.parse(`${date}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
/** The last day an availability request may end on: the day after it is still YYYY-MM-DD. */
const LAST_END = '9999-12-30';

/** True for a YYYY-MM-DD day an availability request may end on (LAST_END at the latest). */
export const isAskableEnd = (date: string): boolean => DATE.test(date) && date <= LAST_END;

/** 400 naming each field that is not a real date, a time zone, or a range of 1 to MAX_DAYS days. */
export function checkAvailabilityQuery(query: AvailabilityQuery): void {
  const problems: ErrorDetail[] = [];
  for (const field of ['start', 'end'] as const) {
    const value = query[field];
    const ms = DATE.test(value) ? Date.parse(`${value}T00:00:00Z`) : NaN;
    // Date.parse gives NaN for 0000-00-00 and March 3 for 2026-02-31: both are refused here.
    const ok = !Number.isNaN(ms) && new Date(ms).toISOString().startsWith(value);
    if (!ok) problems.push({ path: `/${field}`, message: 'is not a date (YYYY-MM-DD)' });
  }
  if (!isTimeZone(query.timeZone))
    problems.push({ path: '/timeZone', message: 'is not an IANA time zone (such as America/Chicago)' });
  if (problems.length === 0) {
    const days = dayNumber(query.end) - dayNumber(query.start) + 1;
    if (days < 1) problems.push({ path: '/end', message: 'is before start' });
    else if (days > MAX_DAYS)
      problems.push({ path: '/end', message: `is more than ${MAX_DAYS} days after start` });
    // The end is asked for as the start of the next day (utcBoundsOf): after 9999-12-31 there is
    // no YYYY-MM-DD day, and computing one was a 500.
    else if (!isAskableEnd(query.end))
      problems.push({ path: '/end', message: `is after ${LAST_END}, the last day that can be asked for` });
  }
  if (problems.length > 0) throw invalidRequest('The availability query is not valid.', problems);
}

/** The wait a Cal.com 429 is answered with when Cal.com said none: its rate limiter's window. */
const CAL_LIMIT_WINDOW_S = 60;

/**
 * A Cal.com failure as the API answers it: 502 booking_provider_error (a 401 says the key is
 * wrong); Cal.com's rate limiter refusing the firm's key (429) is 503 unavailable with the wait it
 * asked for as Retry-After, as a saturated voice provider or chat model is.
 */
export function providerFailure(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof CalcomError && err.status === 429) {
    const seconds =
      err.retryAfterMs === null
        ? CAL_LIMIT_WINDOW_S
        : Math.min(3600, Math.max(1, Math.ceil(err.retryAfterMs / 1000)));
    return serviceUnavailable(
      `The booking provider is limiting this firm's requests (429); retry in ${seconds} s.`,
      seconds,
    );
  }
  if (err instanceof CalcomError) {
    const hint = err.status === 401 ? ' Check settings.booking.api_key.' : '';
    return badGateway(
      'booking_provider_error',
      `The booking provider refused the request (${err.status}).${hint}`,
    );
  }
  if (err instanceof HttpRequestError) {
    return badGateway('booking_provider_error', 'The booking provider could not be reached.');
  }
  if (err instanceof Error && err.name === 'UrlNotAllowedError') {
    return badGateway('booking_provider_error', 'The booking provider URL is not allowed.');
  }
  throw err;
}

/** Cal.com's text for an instant: UTC, whole seconds. */
const calInstant = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * The UTC instants Cal.com is asked for to cover the query's local days: from the first instant
 * of `start` there to the last second before the day after `end` starts there (never an end at
 * 00:00:00, which Cal.com would stretch to 23:59:59 of that UTC day).
 */
export function utcBoundsOf(query: AvailabilityQuery): { start: string; end: string } {
  const from = startOfDayIn(query.start, query.timeZone);
  const until = startOfDayIn(nextDate(query.end), query.timeZone) - 1000;
  return { start: calInstant(from), end: calInstant(until) };
}

/**
 * Free slot starts in the query's days, from the 30-second cache or Cal.com (`fresh` skips the
 * cache: the alternatives after a slot was taken must not offer it again).
 */
export async function freeSlots(
  services: Services,
  firm: FirmDoc,
  query: AvailabilityQuery,
  options: { fresh?: boolean } = {},
): Promise<string[]> {
  checkAvailabilityQuery(query);
  const booking = bookingProviderOf(firm);
  const digest = createHash('sha256')
    .update(
      JSON.stringify([booking.base_url ?? '', booking.event_type_id, query.start, query.end, query.timeZone]),
    )
    .digest('base64url')
    .slice(0, 32);
  const key = redisKeys(services.config).appointmentSlots(firm._id);
  if (options.fresh !== true) {
    // A cache: when Redis cannot answer, Cal.com still can.
    const cached = await services.redis.hget(key, digest).catch(() => null);
    const slots = cached === null ? null : cachedSlots(cached);
    if (slots !== null) return slots;
  }
  let slots: string[];
  try {
    const asked = await calcomOf(services, booking).slots({
      eventTypeId: booking.event_type_id,
      ...utcBoundsOf(query),
      timeZone: query.timeZone,
    });
    slots = slotsWeUse(asked, query);
  } catch (err) {
    throw providerFailure(err);
  }
  const value = `${Date.now() + CACHE_SECONDS * 1000}|${JSON.stringify(slots)}`;
  await CACHE_SLOTS.run(
    services.redis,
    { cache: key },
    {
      field: digest,
      value,
      ttl_ms: CACHE_SECONDS * 1000,
      max_entries: SLOTS_CACHE_MAX_QUERIES_PER_FIRM,
      max_bytes: SLOTS_CACHE_MAX_BYTES_PER_FIRM,
    },
  ).catch(() => {});
  return slots;
}

/**
 * Drops the firm's cached answers, after a booking made through the service: a client (or an
 * agent) that books a slot and asks again at once is not offered the slot it just took. Best
 * effort: Redis failing here leaves the answers to lapse within their 30 s.
 */
export async function forgetSlots(services: Services, firm: string): Promise<void> {
  await services.redis.del(redisKeys(services.config).appointmentSlots(firm)).catch(() => 0);
}

/**
 * The slots we answer with: those in the query's days, in their time zone (whatever else Cal.com
 * includes), at most MAX_SLOTS_PER_DAY a day (the earliest), each a short date-time.
 */
function slotsWeUse(asked: string[], query: AvailabilityQuery): string[] {
  const perDay = new Map<string, number>();
  const kept: string[] = [];
  for (const start of asked) {
    if (start.length > MAX_START_LENGTH) continue;
    const day = dateIn(Date.parse(start), query.timeZone);
    if (day < query.start || day > query.end) continue;
    const n = perDay.get(day) ?? 0;
    if (n >= MAX_SLOTS_PER_DAY) continue;
    perDay.set(day, n + 1);
    kept.push(start);
  }
  return kept;
}

/** A cache entry's slots, null once it has expired. */
function cachedSlots(entry: string): string[] | null {
  const bar = entry.indexOf('|');
  if (bar < 0 || Number(entry.slice(0, bar)) < Date.now()) return null;
  return JSON.parse(entry.slice(bar + 1)) as string[];
}

/** The query for `days` days in `timeZone` from the date `first` (YYYY-MM-DD) there. */
export function daysFromDate(first: string, days: number, timeZone: string): AvailabilityQuery {
  const last = new Date(Date.parse(`${first}T00:00:00Z`) + (days - 1) * DAY_MS).toISOString().slice(0, 10);
  return { start: first, end: last, timeZone };
}

/** The query for `days` days from the day of `fromMs` in `timeZone`. */
export function daysFrom(fromMs: number, days: number, timeZone: string): AvailabilityQuery {
  return daysFromDate(dateIn(fromMs, timeZone), days, timeZone);
}
