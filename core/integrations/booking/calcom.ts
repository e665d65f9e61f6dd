import type { UrlPolicy } from '../../platform/url-policy.js';
import { guardedRequest, HttpRequestError, type GuardedResponse } from '../http/guarded-http.js';
import { parseRetryAfter } from '../../platform/retry-after.js';

// Cal.com's API v2 (docs/appointments.md#calcom), as its document says (apps/api/v2/swagger/
// documentation.json in calcom/cal.com; the part we call is test/fakes/spec/calcom-v2.json): free
// slots (`GET /v2/slots`, cal-api-version 2024-09-04) and bookings (`POST /v2/bookings`,
// `GET /v2/bookings`, `GET /v2/bookings/{uid}`, `POST /v2/bookings/{uid}/reschedule` and
// `/cancel`, cal-api-version 2024-08-13), with the firm's API key as bearer. Every answer is
// `{status: "success", data}` or `{status: "error", error: {code, message}}`.
//
// Cal.com reads the slots `start` and `end` in UTC (a date alone is 00:00:00Z, or 23:59:59Z for
// the end; `timeZone` only formats the answer: get-slots.input.ts, slots-input.service.ts), so
// this client is given instants; the day a caller means is the caller's business (availability.ts).
// Cal.com refuses a booking with a 400 whose message says why (errors.service.ts,
// bookings.service.ts): each reason we can say something about is told apart as `refusal`.
// Requests go through guardedRequest: the firm chose the base URL (URL policy, no redirects).
//
// A seated event type (docs/appointments.md#moving-a-seat) answers every seat of one time with one
// booking uid; a seat's own uid is `seatUid` (CreateSeatedBookingOutput_2024_08_13 on a create or
// a seat's move, each attendee's on a read). A move or cancel with the uid alone is the whole
// booking's, every seat with it; with `seatUid` it is that seat's, and its body may hold nothing
// else (Cal.com refuses a reschedulingReason or cancellationReason beside it).

export const CALCOM_DEFAULT_BASE_URL = 'https://api.cal.com';
export const CAL_SLOTS_API_VERSION = '2024-09-04';
export const CAL_BOOKINGS_API_VERSION = '2024-08-13';

/**
 * Why Cal.com refused a booking, where we can say something about it; `seat_not_found`: the
 * seated booking to move no longer holds the attendee's seat (so no seat of theirs can move).
 */
export type CalRefusal =
  'slot_taken' | 'too_soon_or_far' | 'phone_required' | 'booking_limit' | 'seat_not_found';

/**
 * Cal.com's refusals by their words (errors.service.ts handleBookingError, bookings.service.ts
 * hasRequiredBookingFieldsResponses, handleNewBooking's error codes), most specific first.
 */
const REFUSALS: Array<[CalRefusal, RegExp]> = [
  [
    'too_soon_or_far',
    /booking_time_out_of_bounds|can't be booked at the "start" time|minimum booking notice|book a meeting in the past/i,
  ],
  ['phone_required', /attendee phone number|attendeePhoneNumber|smsReminderNumber/i],
  [
    'booking_limit',
    /booker_limit_exceeded|booker_booking_limit|booking_limit_reached|duration_limit_reached|booking limit/i,
  ],
  [
    'slot_taken',
    /no_available_users_found|already has booking|not available|hosts_unavailable|booking_conflict|slot.*(?:taken|booked|unavailable)/i,
  ],
];

export interface CalBooking {
  uid: string;
  start: string;
  end: string;
  /** Cal.com's: accepted, pending (the event type requires confirmation), cancelled, rejected. */
  status: string;
  metadata: Record<string, unknown>;
  /** A booking moved elsewhere: the uid of the booking it became. */
  rescheduledToUid?: string;
  /** The seat this answer booked or moved (a seated event type's create or seat move). */
  seatUid?: string;
  /** A seated booking's seats: each attendee's address and seatUid. */
  seats?: Array<{ email: string; seatUid: string }>;
}

export class CalcomError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    /** Why Cal.com refused, when it is a refusal we can say something about. */
    readonly refusal: CalRefusal | null,
    /** Cal.com's own words (for the log). */
    readonly calMessage: string = message,
    /** For a 429: how long Cal.com asked us to wait (ms), from its headers; null when it did not say. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'CalcomError';
  }

  /** The slot asked for is not free (any more). */
  get slotTaken(): boolean {
    return this.refusal === 'slot_taken';
  }
}

/**
 * The most of a slots answer read: 14 days of a slot every 15 minutes, as `{start}` objects, is
 * about 60 KB; a larger answer (the base URL is the firm's choice) is a failure (502).
 */
export const CALCOM_SLOTS_MAX_BYTES = 256 * 1024;

export interface CalcomOptions {
  baseUrl?: string;
  apiKey: string;
  policy: UrlPolicy;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

export class CalcomClient {
  private readonly base: string;
  constructor(private readonly options: CalcomOptions) {
    this.base = (options.baseUrl ?? CALCOM_DEFAULT_BASE_URL).replace(/\/+$/, '');
  }

  /**
   * Free slot starts (ISO 8601 with the offset of `timeZone`) from `start` to `end`, two UTC
   * instants (as Cal.com reads them), in order.
   */
  async slots(query: {
    eventTypeId: number;
    start: string;
    end: string;
    timeZone: string;
  }): Promise<string[]> {
    const params = new URLSearchParams({
      eventTypeId: String(query.eventTypeId),
      start: query.start,
      end: query.end,
      timeZone: query.timeZone,
    });
    const data = await this.call(
      'GET',
      `/v2/slots?${params}`,
      CAL_SLOTS_API_VERSION,
      undefined,
      CALCOM_SLOTS_MAX_BYTES,
    );
    if (!isObject(data))
      throw new CalcomError('Cal.com answered slots without data.', 502, 'bad_answer', null);
    const starts: string[] = [];
    for (const day of Object.keys(data).sort()) {
      const list = data[day];
      if (!Array.isArray(list)) continue;
      for (const slot of list) {
        if (isObject(slot) && typeof slot.start === 'string' && Number.isFinite(Date.parse(slot.start)))
          starts.push(slot.start);
      }
    }
    return starts.sort((a, b) => Date.parse(a) - Date.parse(b));
  }

  /** Books `start` (UTC ISO) for the attendee; `metadata` marks it as ours (for the reconcile). */
  async createBooking(input: {
    eventTypeId: number;
    start: string;
    attendee: { name: string; email: string; timeZone: string; phoneNumber?: string };
    metadata: Record<string, string>;
    notes?: string;
  }): Promise<CalBooking> {
    const body = {
      start: input.start,
      eventTypeId: input.eventTypeId,
      attendee: { ...input.attendee, language: 'en' },
      metadata: input.metadata,
      ...(input.notes === undefined ? {} : { bookingFieldsResponses: { notes: input.notes } }),
    };
    return bookingOf(await this.call('POST', '/v2/bookings', CAL_BOOKINGS_API_VERSION, body));
  }

  /** One booking by uid. */
  async getBooking(uid: string): Promise<CalBooking> {
    return bookingOf(
      await this.call('GET', `/v2/bookings/${encodeURIComponent(uid)}`, CAL_BOOKINGS_API_VERSION),
    );
  }

  /**
   * Moves a booking to `start` (UTC ISO): Cal.com makes a new booking (a new uid) and cancels the
   * old. With `seatUid`, only that seat of a seated booking moves (no reason can go with it).
   */
  async rescheduleBooking(
    uid: string,
    input: { start: string; reason?: string; seatUid?: string },
  ): Promise<CalBooking> {
    const body =
      input.seatUid !== undefined
        ? { start: input.start, seatUid: input.seatUid }
        : {
            start: input.start,
            ...(input.reason === undefined ? {} : { reschedulingReason: input.reason }),
          };
    return bookingOf(
      await this.call(
        'POST',
        `/v2/bookings/${encodeURIComponent(uid)}/reschedule`,
        CAL_BOOKINGS_API_VERSION,
        body,
      ),
    );
  }

  /**
   * Cancels a booking (Cal.com requires a reason), or with `seatUid` only that seat of a seated
   * booking (Cal.com takes no reason with a seat).
   */
  async cancelBooking(uid: string, reason: string, seatUid?: string): Promise<CalBooking> {
    return bookingOf(
      await this.call(
        'POST',
        `/v2/bookings/${encodeURIComponent(uid)}/cancel`,
        CAL_BOOKINGS_API_VERSION,
        seatUid === undefined ? { cancellationReason: reason } : { seatUid },
      ),
    );
  }

  /**
   * The attendee's seat on seated booking `uid`, by the address they booked with (compared
   * without case): its seatUid; null when the booking is not seated. A seated booking that has no
   * seat of theirs is refused (`seat_not_found`): moving it whole would move everyone on it.
   */
  async seatOf(uid: string, attendeeEmail: string): Promise<string | null> {
    const booking = await this.getBooking(uid);
    if (booking.seats === undefined) return null;
    const email = attendeeEmail.toLowerCase();
    const seat = booking.seats.find((s) => s.email.toLowerCase() === email);
    if (seat !== undefined) return seat.seatUid;
    throw new CalcomError(
      `Cal.com's seated booking ${uid} holds no seat of the attendee.`,
      409,
      'seat_not_found',
      'seat_not_found',
    );
  }

  /**
   * The booking carrying `metadata[key] = value` among the attendee's bookings starting at
   * `start`: how an attempt that may have booked (a crash before its answer was recorded) finds out.
   */
  async findBooking(query: {
    eventTypeId: number;
    attendeeEmail: string;
    start: string;
    /** Without a key: the attendee's seat on a seated booking starting at `start` (seatUid set). */
    key?: string;
    value?: string;
  }): Promise<CalBooking | null> {
    const startMs = Date.parse(query.start);
    const params = new URLSearchParams({
      attendeeEmail: query.attendeeEmail,
      eventTypeId: String(query.eventTypeId),
      afterStart: new Date(startMs - 60_000).toISOString(),
      beforeEnd: new Date(startMs + 24 * 3600_000).toISOString(),
    });
    const data = await this.call('GET', `/v2/bookings?${params}`, CAL_BOOKINGS_API_VERSION);
    if (!Array.isArray(data)) return null;
    for (const item of data) {
      if (!isObject(item)) continue;
      if (query.key === undefined) {
        // A seat moved keeps its booking's metadata, not ours: the attendee's seat at `start`.
        const found = bookingOf(item);
        const email = query.attendeeEmail.toLowerCase();
        const seat = found.seats?.find((s) => s.email.toLowerCase() === email);
        if (seat !== undefined && Date.parse(found.start) === startMs && found.status !== 'cancelled')
          return { ...found, seatUid: seat.seatUid };
      } else if (isObject(item.metadata) && item.metadata[query.key] === query.value) return bookingOf(item);
    }
    return null;
  }

  private async call(
    method: 'GET' | 'POST',
    path: string,
    version: string,
    payload?: unknown,
    maxResponseBytes = 1024 * 1024,
  ): Promise<unknown> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.options.apiKey}`,
      'cal-api-version': version,
      Accept: 'application/json',
    };
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const res = await guardedRequest(`${this.base}${path}`, {
      method,
      headers,
      ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
      policy: this.options.policy,
      timeoutMs: 15_000,
      maxResponseBytes,
    });
    return dataOf(res);
  }
}

function dataOf(res: GuardedResponse): unknown {
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    body = undefined;
  }
  if (res.status >= 200 && res.status < 300 && isObject(body) && body.status === 'success') return body.data;
  const error = isObject(body) && isObject(body.error) ? body.error : {};
  const code = typeof error.code === 'string' ? error.code : `http_${res.status}`;
  const message = typeof error.message === 'string' ? error.message.slice(0, 500) : `HTTP ${res.status}`;
  const refused = res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 404;
  const refusal = refused
    ? (REFUSALS.find(([, words]) => words.test(`${code} ${message}`))?.[0] ?? null)
    : null;
  throw new CalcomError(
    `Cal.com answered ${res.status} ${code}: ${message}`,
    res.status,
    code,
    refusal,
    message,
    res.status === 429 ? rateLimitWaitOf(res.headers) : null,
  );
}

/**
 * How long a 429 of Cal.com's rate limiter asks us to wait (ms): its Retry-After (seconds or a
 * date), else the reset its rate-limit headers name (X-RateLimit-Reset, or per throttler
 * X-RateLimit-Reset-<name>: the Unix time the window ends, or seconds until then); null when
 * neither says.
 */
function rateLimitWaitOf(headers: Record<string, string>, now = Date.now()): number | null {
  const retryAfter = parseRetryAfter(headers['retry-after'], now);
  if (retryAfter !== null) return retryAfter;
  const resets = Object.entries(headers)
    .filter(([name, value]) => name.startsWith('x-ratelimit-reset') && /^\d{1,12}$/.test(value.trim()))
    .map(([, value]) => Number(value.trim()))
    .map((n) => (n > 1e9 ? Math.max(0, n * 1000 - now) : n * 1000));
  return resets.length === 0 ? null : Math.max(...resets);
}

function bookingOf(data: unknown): CalBooking {
  if (!isObject(data) || typeof data.uid !== 'string' || typeof data.start !== 'string')
    throw new CalcomError('Cal.com answered a booking without uid or start.', 502, 'bad_answer', null);
  return {
    uid: data.uid,
    start: data.start,
    end: typeof data.end === 'string' ? data.end : data.start,
    status: typeof data.status === 'string' ? data.status : 'accepted',
    metadata: isObject(data.metadata) ? data.metadata : {},
    ...(typeof data.rescheduledToUid === 'string' ? { rescheduledToUid: data.rescheduledToUid } : {}),
    // An owner's move of a whole seated booking answers seatUid "" (no seat was asked for).
    ...(typeof data.seatUid === 'string' && data.seatUid !== '' ? { seatUid: data.seatUid } : {}),
    ...seatsOf(data.attendees),
  };
}

/** A seated booking's attendees with their seatUid; nothing for an ordinary booking's. */
function seatsOf(attendees: unknown): { seats?: Array<{ email: string; seatUid: string }> } {
  if (!Array.isArray(attendees)) return {};
  const seats: Array<{ email: string; seatUid: string }> = [];
  for (const a of attendees) {
    if (isObject(a) && typeof a.email === 'string' && typeof a.seatUid === 'string' && a.seatUid !== '')
      seats.push({ email: a.email, seatUid: a.seatUid });
  }
  return seats.length === 0 ? {} : { seats };
}

/** Whether a failed booking request may have booked (then the next attempt asks Cal.com first). */
export function bookingMayHaveHappened(err: unknown): boolean {
  if (err instanceof HttpRequestError) return err.sent;
  if (err instanceof CalcomError) return err.status >= 500;
  return true;
}
