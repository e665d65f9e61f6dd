import type { UrlPolicy } from '../../platform/url-policy.js';
import { guardedRequest, HttpRequestError, type GuardedResponse } from '../http/guarded-http.js';

// Cal.com's API v2 (docs/appointments.md#calcom): free slots (`GET /v2/slots`, cal-api-version
// 2024-09-04) and bookings (`POST /v2/bookings` and `GET /v2/bookings`, cal-api-version
// 2024-08-13), with the firm's API key as bearer. Every answer is `{status: "success", data}` or
// `{status: "error", error: {code, message}}`. Cal.com refuses a slot that is no longer free with
// a 400 (BadRequestException) whose message says so; that is told apart as `slotTaken`.
// Requests go through guardedRequest: the firm chose the base URL (URL policy, no redirects).

export const CALCOM_DEFAULT_BASE_URL = 'https://api.cal.com';
export const CAL_SLOTS_API_VERSION = '2024-09-04';
export const CAL_BOOKINGS_API_VERSION = '2024-08-13';

/** What Cal.com says when the slot is gone (handleNewBooking's errors, as API v2 passes them on). */
const SLOT_TAKEN =
  /no_available_users_found|already has booking|not available|booking_time_out_of_bounds|slot.*(?:taken|booked|unavailable)/i;

export interface CalBooking {
  uid: string;
  start: string;
  end: string;
  status: string;
  metadata: Record<string, unknown>;
}

export class CalcomError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    /** The slot asked for is not free (any more). */
    readonly slotTaken: boolean,
  ) {
    super(message);
    this.name = 'CalcomError';
  }
}

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

  /** Free slot starts (ISO 8601 with the offset of `timeZone`) between two dates, in order. */
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
    const data = await this.call('GET', `/v2/slots?${params}`, CAL_SLOTS_API_VERSION);
    if (!isObject(data))
      throw new CalcomError('Cal.com answered slots without data.', 502, 'bad_answer', false);
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

  /**
   * The booking carrying `metadata[key] = value` among the attendee's bookings starting at
   * `start`: how an attempt that may have booked (a crash before its answer was recorded) finds out.
   */
  async findBooking(query: {
    eventTypeId: number;
    attendeeEmail: string;
    start: string;
    key: string;
    value: string;
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
      if (isObject(item) && isObject(item.metadata) && item.metadata[query.key] === query.value)
        return bookingOf(item);
    }
    return null;
  }

  private async call(
    method: 'GET' | 'POST',
    path: string,
    version: string,
    payload?: unknown,
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
  const message = typeof error.message === 'string' ? error.message.slice(0, 300) : `HTTP ${res.status}`;
  const slotTaken = (res.status === 400 || res.status === 409) && SLOT_TAKEN.test(message);
  throw new CalcomError(`Cal.com answered ${res.status} ${code}: ${message}`, res.status, code, slotTaken);
}

function bookingOf(data: unknown): CalBooking {
  if (!isObject(data) || typeof data.uid !== 'string' || typeof data.start !== 'string')
    throw new CalcomError('Cal.com answered a booking without uid or start.', 502, 'bad_answer', false);
  return {
    uid: data.uid,
    start: data.start,
    end: typeof data.end === 'string' ? data.end : data.start,
    status: typeof data.status === 'string' ? data.status : 'accepted',
    metadata: isObject(data.metadata) ? data.metadata : {},
  };
}

/** Whether a failed booking request may have booked (then the next attempt asks Cal.com first). */
export function bookingMayHaveHappened(err: unknown): boolean {
  if (err instanceof HttpRequestError) return err.sent;
  if (err instanceof CalcomError) return err.status >= 500;
  return true;
}
