// A stand-in for Cal.com's API v2 on 127.0.0.1, judged by Cal.com's own document
// (test/fakes/spec/calcom-v2.json, derived from apps/api/v2/swagger/documentation.json in
// calcom/cal.com): every request is checked against it (operation, query parameters, required
// headers such as `cal-api-version`, the JSON body's schema) and refused as Cal.com refuses, and
// every answer it builds is checked against the document's response schema (an answer off the
// document fails the test when the fake stops).
//
// What the document does not say, the fake does as Cal.com's source does:
// - GET /v2/slots (cal-api-version 2024-09-04) reads `start` and `end` in UTC: a date-only `start`
//   is 00:00:00Z, a date-only `end` (or any end at 00:00:00) is 23:59:59Z; `timeZone` only
//   formats the answer, keyed by the date in that zone (packages/platform/types/slots/
//   slots-2024-09-04/inputs/get-slots.input.ts; apps/api/v2/src/modules/slots/slots-2024-09-04/
//   services/slots-input.service.ts adjustStartTime/adjustEndTime). Without the version header
//   the request reaches the old 2024-04-15 endpoint, whose query this is not: 400.
// - POST /v2/bookings (2024-08-13) refuses as handleNewBooking and the v2 error service do
//   (apps/api/v2/src/ee/bookings/2024-08-13/services/errors.service.ts, bookings.service.ts):
//   a slot no longer free ("User either already has booking at this time or is not available"),
//   a start too soon or too far (booking_time_out_of_bounds_error's message), a missing attendee
//   phone the event type requires ("Missing attendee phone number - …"), the booker's limit of
//   active bookings (ErrorWithCode booker_limit_exceeded_error). An event type requiring
//   confirmation books `pending` and sends BOOKING_REQUESTED; the host's decline is
//   BOOKING_REJECTED, a reschedule a new booking (new uid) with BOOKING_RESCHEDULED naming the old
//   one in rescheduleUid, a cancel BOOKING_CANCELLED — each signed to the webhook it is given.
// - An event type with seats (`seats`, Cal.com's seatsPerTimeSlot) books every seat of one time
//   into one booking (one uid), each seat with its seatUid; a seat is moved or cancelled alone
//   with its seatUid, the whole booking without (test/fakes/calcom-seats.ts). Each seat's event
//   names only its attendee (attendeeSeatId), a whole booking's every attendee.
// - Errors are {status: "error", timestamp, path, error: {code, message}} (http-exception.filter.ts;
//   ErrorWithCode adds a top-level message: error-with-code-exception.filter.ts). The document
//   lists success answers only, so error bodies are checked against that shape here.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signCalWebhook } from '../../core/integrations/booking/cal-signature.js';
import {
  calBookingPayload,
  calCancelled,
  calEnvelope,
  calRescheduled,
  type CalBookingPayload,
} from './calcom-fixtures.js';
import {
  isSeatBody,
  newSeat,
  nonWhitelisted,
  SEAT_MESSAGES,
  seatedAttendees,
  type FakeCalAttendee,
  type FakeCalSeat,
} from './calcom-seats.js';
import { loadSpec, SpecViolations, type SpecMatch } from './spec/openapi-spec.js';

export type FakeCalStatus = 'accepted' | 'pending' | 'cancelled' | 'rejected';

export interface FakeCalBooking {
  id: number;
  uid: string;
  start: string;
  end: string;
  status: FakeCalStatus;
  eventTypeId: number;
  /** The attendee who made it (on a seated booking, the first seat's). */
  attendee: FakeCalAttendee;
  metadata: Record<string, string>;
  notes: string | null;
  /** A seated event type's booking: the seats on it now (every attendee). */
  seats?: FakeCalSeat[];
  createdAt: string;
  rescheduledFromUid?: string;
  rescheduledToUid?: string;
  cancellationReason?: string;
}

/** How the firm's event type is set up in Cal.com; changeable while the fake runs. */
export interface FakeEventTypeRules {
  /** "Requires confirmation": bookings are `pending` until the host accepts or declines. */
  requiresConfirmation?: boolean;
  /** Minimum booking notice: no slot, and no booking, starting sooner. */
  minimumNoticeMinutes?: number;
  /** The attendee phone number booking field is required. */
  requirePhone?: boolean;
  /** "Limit number of upcoming bookings per booker". */
  bookerActiveBookingsLimit?: number;
  /** Seats per time slot (Cal.com's seatsPerTimeSlot); unset: one booking per time. */
  seats?: number;
}

export interface FakeCalcomOptions extends FakeEventTypeRules {
  apiKey: string;
  eventTypeId: number;
  /** The free slot starts (UTC ms) of the event type, before any booking. */
  slots: number[];
  lengthMinutes?: number;
}

export interface FakeCalRequest {
  method: string;
  path: string;
  version: string | undefined;
  query: URLSearchParams;
  body: unknown;
  /** What the document found wrong with it (the fake answered 400). */
  problems: string[];
}

export interface FakeCalcom {
  url: string;
  bookings: FakeCalBooking[];
  requests: FakeCalRequest[];
  /** Webhook deliveries: trigger, booking uid and the status our webhook answered. */
  deliveries: Array<{ trigger: string; uid: string; status: number }>;
  /** Where booking events go (null: nowhere). */
  setWebhook(target: { url: string; secret: string } | null): void;
  /** Changes the event type's rules (confirmation, notice, phone, limit). */
  setRules(rules: FakeEventTypeRules): void;
  /** Someone else booked this start on the booking page. */
  take(startMs: number): void;
  /** The host declines a pending booking (BOOKING_REJECTED). */
  reject(uid: string, reason?: string): void;
  /** The host accepts a pending booking (BOOKING_CREATED, as Cal.com's confirm handler sends). */
  confirm(uid: string): void;
  /** Someone reschedules on Cal.com's pages: a new booking, BOOKING_RESCHEDULED; its uid. */
  reschedule(uid: string, startMs: number): string;
  /** Someone cancels on Cal.com's pages (BOOKING_CANCELLED). */
  cancel(uid: string, reason?: string): void;
  /** The next booking is made, then its answer is lost (the connection drops). */
  loseNextAnswer(): void;
  /** The next `count` booking searches (GET /v2/bookings) answer 500. */
  failSearches(count: number): void;
  /** The next `count` bookings (POST /v2/bookings) answer 500 and book nothing. */
  failBookings(count: number): void;
  /**
   * The next `count` requests are refused by Cal.com's rate limiter (its throttler guard, before
   * any handler): 429 with ThrottlerException's error body and `headers` (its rate-limit headers).
   */
  limitRequests(count: number, headers: Record<string, string>): void;
  /** Resolves when every webhook delivery started so far has been answered. */
  settled(): Promise<void>;
  /** What the fake answered off the document (stop() rejects when there is any). */
  violations: SpecViolations;
  stop(): Promise<void>;
}

const DAY_MS = 24 * 3600_000;
const SLOTS_VERSION = '2024-09-04';
const BOOKINGS_VERSION = '2024-08-13';
const HOST = { id: 7, name: 'Alex Counsel', email: 'alex@lawfirm.test', username: 'alex' };

/** Cal.com's messages (errors.service.ts, bookings.service.ts), word for word. */
export const CAL_MESSAGES = {
  slotTaken: 'User either already has booking at this time or is not available',
  outOfBounds:
    'The event type can\'t be booked at the "start" time provided. This could be because it\'s too soon (violating the minimum booking notice) or too far in the future (outside the event\'s scheduling window). Try fetching available slots first using the GET /v2/slots endpoint and then make a booking with "start" time equal to one of the available slots: https://cal.com/docs/api-reference/v2/slots',
  inPast: 'Attempting to book a meeting in the past.',
  phoneRequired:
    'Missing attendee phone number - it is required by the event type. Pass it as "attendee.phoneNumber" string in the request.',
  bookerLimit: 'booker_limit_exceeded_error',
} as const;

/** One formatter per time zone (making one per slot made a month of minutes take seconds). */
const FORMATS = new Map<string, Intl.DateTimeFormat>();

/** The offset (whole minutes) `timeZone` has at `ms`, from the zone's own local time then. */
function offsetMinutes(ms: number, timeZone: string): number {
  let format = FORMATS.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    FORMATS.set(timeZone, format);
  }
  const parts = Object.fromEntries(
    format.formatToParts(new Date(ms)).map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  const local = Date.UTC(
    +parts.year!,
    +parts.month! - 1,
    +parts.day!,
    +parts.hour!,
    +parts.minute!,
    +parts.second!,
  );
  return Math.round((local - Math.floor(ms / 1000) * 1000) / 60_000);
}

/**
 * Offsets by quarter hour: a zone changes its offset at most once in 15 minutes, so an offset
 * that is the same at a quarter's first and last millisecond holds for all of it. The slots come
 * in order, so the zone's last quarter is the one asked again. A 14-day answer of a slot every
 * minute made 20,160 formatToParts calls: 10 s of a test's 21 s of CPU.
 */
const QUARTER_MS = 15 * 60_000;
const LAST_QUARTER = new Map<string, { quarter: number; offset: number | null }>();

function offsetInQuarter(ms: number, timeZone: string): number {
  const quarter = Math.floor(ms / QUARTER_MS);
  let last = LAST_QUARTER.get(timeZone);
  if (last === undefined || last.quarter !== quarter) {
    const first = offsetMinutes(quarter * QUARTER_MS, timeZone);
    const end = offsetMinutes((quarter + 1) * QUARTER_MS - 1, timeZone);
    last = { quarter, offset: first === end ? first : null };
    LAST_QUARTER.set(timeZone, last);
  }
  return last.offset ?? offsetMinutes(ms, timeZone);
}

/** `ms` as ISO 8601 with the offset `timeZone` has then, as Cal.com writes slot starts. */
export function isoInZone(ms: number, timeZone: string): string {
  const offset = offsetInQuarter(ms, timeZone);
  // The zone's local time then, read off a UTC date shifted by the offset.
  const local = new Date(Math.floor(ms / 1000) * 1000 + offset * 60_000).toISOString().slice(0, 19);
  const sign = offset < 0 ? '-' : '+';
  const hh = String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0');
  const mm = String(Math.abs(offset) % 60).padStart(2, '0');
  return `${local}.000${sign}${hh}:${mm}`;
}

/**
 * Cal.com's reading of a slots `start`/`end` (slots-input.service.ts): the text in UTC (luxon
 * fromISO with zone "utc"); an end at exactly 00:00:00 becomes 23:59:59 of that day.
 */
export function calSlotsBound(text: string, which: 'start' | 'end'): number {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const hasZone = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(text);
  const ms = Date.parse(dateOnly ? `${text}T00:00:00Z` : hasZone ? text : `${text}Z`);
  if (!Number.isFinite(ms)) return NaN;
  if (which === 'end' && ms % DAY_MS === 0) return ms + DAY_MS - 1000;
  return ms;
}

/** Cal.com's IsDateString({strict: true}): an ISO 8601 date or date-time. */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** An error body as Cal.com's exception filters write one. */
function errorBody(path: string, code: string, message: string, withCode = false): Record<string, unknown> {
  return {
    status: 'error',
    timestamp: new Date().toISOString(),
    path,
    error: { code, message },
    ...(withCode ? { message } : {}),
  };
}

/** The shape of every Cal.com error answer (the document has none of them). */
function errorShapeProblems(body: Record<string, unknown>): string[] {
  const error = body.error as Record<string, unknown> | undefined;
  const keys = Object.keys(body).filter(
    (k) => !['status', 'timestamp', 'path', 'error', 'message'].includes(k),
  );
  return body.status === 'error' &&
    typeof body.timestamp === 'string' &&
    typeof body.path === 'string' &&
    typeof error?.code === 'string' &&
    typeof error.message === 'string' &&
    keys.length === 0
    ? []
    : [`an error answer off Cal.com's error shape: ${JSON.stringify(body).slice(0, 200)}`];
}

export async function startFakeCalcom(options: FakeCalcomOptions): Promise<FakeCalcom> {
  const spec = loadSpec('calcom-v2');
  const violations = new SpecViolations();
  const lengthMs = (options.lengthMinutes ?? 30) * 60_000;
  const rules: FakeEventTypeRules = {
    requiresConfirmation: options.requiresConfirmation ?? false,
    minimumNoticeMinutes: options.minimumNoticeMinutes ?? 0,
    requirePhone: options.requirePhone ?? false,
    ...(options.bookerActiveBookingsLimit === undefined
      ? {}
      : { bookerActiveBookingsLimit: options.bookerActiveBookingsLimit }),
    ...(options.seats === undefined ? {} : { seats: options.seats }),
  };
  const taken = new Set<number>();
  const bookings: FakeCalBooking[] = [];
  const requests: FakeCalRequest[] = [];
  const deliveries: FakeCalcom['deliveries'] = [];
  const pending = new Set<Promise<void>>();
  let webhook: { url: string; secret: string } | null = null;
  let loseAnswer = false;
  let failingSearches = 0;
  let failingBookings = 0;
  let limited: { count: number; headers: Record<string, string> } = { count: 0, headers: {} };

  const active = (b: FakeCalBooking) => b.status === 'accepted' || b.status === 'pending';
  const noticeMs = () => (rules.minimumNoticeMinutes ?? 0) * 60_000;
  /** A booking filling its time: an ordinary one, or a seated one with no seat left. */
  const fills = (b: FakeCalBooking) => b.seats === undefined || b.seats.length >= (rules.seats ?? 1);
  /** Free: a slot of the event type, not taken, not filled by an active booking (but `except`'s own). */
  const isUnheld = (ms: number, except?: FakeCalBooking) =>
    !taken.has(ms) &&
    !bookings.some((b) => b !== except && active(b) && fills(b) && Date.parse(b.start) === ms);
  const isFree = (ms: number, except?: FakeCalBooking) => options.slots.includes(ms) && isUnheld(ms, except);
  const find = (uid: string) => bookings.find((b) => b.uid === uid);
  /** The active seated booking of a time, whose seats a new one joins. */
  const sessionAt = (ms: number, except?: FakeCalBooking) =>
    bookings.find((b) => b !== except && b.seats !== undefined && active(b) && Date.parse(b.start) === ms);
  const emailsOf = (b: FakeCalBooking) => b.seats?.map((s) => s.attendee.email) ?? [b.attendee.email];

  /** Sends `trigger` of `booking`, naming `seat` alone when it is one seat's event. */
  const deliver = (
    trigger: string,
    booking: FakeCalBooking,
    from?: FakeCalBooking,
    seat?: FakeCalSeat,
  ): void => {
    if (webhook === null) return;
    const target = webhook;
    const startMs = Date.parse(booking.start);
    const status: CalBookingPayload['status'] =
      booking.status === 'pending'
        ? 'PENDING'
        : booking.status === 'cancelled'
          ? 'CANCELLED'
          : booking.status === 'rejected'
            ? 'REJECTED'
            : 'ACCEPTED';
    const people =
      seat !== undefined ? [seat.attendee] : (booking.seats?.map((s) => s.attendee) ?? [booking.attendee]);
    const payload = calBookingPayload(
      booking.uid,
      startMs,
      people.map(({ name, email, timeZone }) => ({ name, email, timeZone })),
      {
        eventTypeId: booking.eventTypeId,
        metadata: booking.metadata,
        status,
        requiresConfirmation: rules.requiresConfirmation === true,
        endTime: new Date(Date.parse(booking.end)).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        ...(booking.seats === undefined ? {} : { seatsPerTimeSlot: rules.seats ?? 1 }),
        ...(seat === undefined ? {} : { attendeeSeatId: seat.seatUid }),
      },
    );
    const envelope =
      trigger === 'BOOKING_RESCHEDULED' && from !== undefined
        ? calRescheduled(from.uid, Date.parse(from.start), payload)
        : trigger === 'BOOKING_CANCELLED'
          ? calCancelled(payload, undefined, booking.cancellationReason ?? 'Schedule conflict')
          : trigger === 'BOOKING_REJECTED'
            ? calEnvelope(trigger, { ...payload, rejectionReason: booking.cancellationReason ?? null })
            : calEnvelope(trigger, payload);
    const raw = JSON.stringify(envelope);
    const p = fetch(target.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Cal-Signature-256': signCalWebhook(raw, target.secret),
      },
      body: raw,
    })
      .then(async (res) => {
        await res.arrayBuffer();
        deliveries.push({ trigger, uid: booking.uid, status: res.status });
      })
      .catch(() => {
        deliveries.push({ trigger, uid: booking.uid, status: 0 });
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  };

  const newBooking = (fields: Omit<FakeCalBooking, 'id' | 'uid' | 'end' | 'createdAt'>): FakeCalBooking => {
    const booking: FakeCalBooking = {
      ...fields,
      id: bookings.length + 1,
      uid: randomBytes(11).toString('base64url'),
      end: new Date(Date.parse(fields.start) + lengthMs).toISOString(),
      createdAt: new Date().toISOString(),
    };
    bookings.push(booking);
    return booking;
  };

  /** A booking moved to `startMs`: the old one cancelled, a new one (new uid) made. */
  const moveBooking = (old: FakeCalBooking, startMs: number, reason?: string): FakeCalBooking => {
    const moved = newBooking({
      start: new Date(startMs).toISOString(),
      status: rules.requiresConfirmation === true ? 'pending' : 'accepted',
      eventTypeId: old.eventTypeId,
      attendee: old.attendee,
      metadata: old.metadata,
      notes: old.notes,
      rescheduledFromUid: old.uid,
    });
    old.status = 'cancelled';
    old.rescheduledToUid = moved.uid;
    if (reason !== undefined) old.cancellationReason = reason;
    deliver('BOOKING_RESCHEDULED', moved, old);
    return moved;
  };

  /** Why Cal.com would not book `startMs` for `attendee` now; null: it would. */
  const refusal = (
    startMs: number,
    attendee: { email: string; phoneNumber?: unknown },
    except?: FakeCalBooking,
  ): { code: string; message: string; withCode?: boolean } | null => {
    if (
      rules.requirePhone === true &&
      (typeof attendee.phoneNumber !== 'string' || attendee.phoneNumber === '')
    )
      return { code: 'BadRequestException', message: CAL_MESSAGES.phoneRequired };
    if (startMs < Date.now()) return { code: 'BadRequestException', message: CAL_MESSAGES.inPast };
    if (startMs < Date.now() + noticeMs())
      return { code: 'BadRequestException', message: CAL_MESSAGES.outOfBounds };
    const limit = rules.bookerActiveBookingsLimit;
    if (
      limit !== undefined &&
      bookings.filter(
        (b) =>
          b !== except &&
          active(b) &&
          emailsOf(b).includes(attendee.email) &&
          Date.parse(b.start) > Date.now(),
      ).length >= limit
    )
      return { code: 'booker_limit_exceeded_error', message: CAL_MESSAGES.bookerLimit, withCode: true };
    if (!isFree(startMs, except)) return { code: 'BadRequestException', message: CAL_MESSAGES.slotTaken };
    return null;
  };

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const path = url.pathname;
      const at = req.url ?? path;
      const version = req.headers['cal-api-version'] as string | undefined;
      const raw = await readBody(req);
      let body: unknown;
      let unreadable = false;
      if (raw !== '') {
        try {
          body = JSON.parse(raw);
        } catch {
          unreadable = true;
        }
      }
      const verdict = spec.checkRequest({
        method: req.method ?? 'GET',
        path,
        query: url.searchParams,
        headers: req.headers,
        body,
      });
      const request: FakeCalRequest = {
        method: req.method ?? '',
        path,
        version,
        query: url.searchParams,
        body,
        problems: verdict.problems,
      };
      requests.push(request);
      const match = verdict.match;

      const send = (
        status: number,
        answer: Record<string, unknown>,
        headers: Record<string, string> = {},
      ): void => {
        if (status >= 400) violations.record(errorShapeProblems(answer));
        else if (match !== null) violations.record(spec.checkResponse(match, status, answer));
        res.writeHead(status, { ...headers, 'Content-Type': 'application/json' });
        res.end(JSON.stringify(answer));
      };
      const fail = (status: number, code: string, message: string, withCode = false) =>
        send(status, errorBody(at, code, message, withCode));

      if (match === null) return fail(404, 'NotFoundException', `Cannot ${req.method} ${path}`);
      if (limited.count > 0) {
        limited.count -= 1;
        return send(
          429,
          errorBody(at, 'ThrottlerException', 'ThrottlerException: Too Many Requests'),
          limited.headers,
        );
      }
      const auth = req.headers.authorization;
      const needsKey = match.operationId === 'BookingsController_2024_08_13_getBookings';
      if ((auth !== undefined || needsKey) && auth !== `Bearer ${options.apiKey}`)
        return fail(401, 'UnauthorizedException', 'ApiAuthGuard - Invalid API Key');
      if (unreadable) return fail(400, 'BadRequestException', 'Unexpected token in JSON');
      const isSlots = match.template === '/v2/slots';
      const wanted = isSlots ? SLOTS_VERSION : BOOKINGS_VERSION;
      if (version !== wanted) {
        // Without the version (or with another), the request reaches an older endpoint whose
        // request shape this is not (slots: startTime/endTime; bookings: `responses`).
        return fail(
          400,
          'BadRequestException',
          isSlots
            ? 'startTime must be a valid ISO 8601 date string'
            : 'responses should not be null or undefined',
        );
      }
      if (verdict.problems.length > 0) return fail(400, 'BadRequestException', verdict.problems.join('; '));
      return handle(match, url, body, send, fail, req);
    })().catch((err: unknown) => {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(errorBody(req.url ?? '', 'InternalServerErrorException', String(err))));
    });
  });

  type Send = (status: number, answer: Record<string, unknown>) => void;
  type Fail = (status: number, code: string, message: string, withCode?: boolean) => void;

  const handle = (
    match: SpecMatch,
    url: URL,
    body: unknown,
    send: Send,
    fail: Fail,
    req: IncomingMessage,
  ): void => {
    const q = url.searchParams;
    // Cal.com's answer for a uid it does not have (bookings.service.ts).
    const bookingNotFound = () =>
      fail(
        404,
        'NotFoundException',
        `Booking with uid=${match.params.bookingUid} was not found in the database`,
      );
    if (match.template === '/v2/slots') {
      const start = q.get('start') ?? '';
      const end = q.get('end') ?? '';
      if (!ISO_DATE.test(start))
        return fail(400, 'BadRequestException', 'start must be a valid ISO 8601 date string');
      if (!ISO_DATE.test(end))
        return fail(400, 'BadRequestException', 'end must be a valid ISO 8601 date string');
      if (Number(q.get('eventTypeId')) !== options.eventTypeId)
        return fail(404, 'NotFoundException', 'Event Type not found');
      const timeZone = q.get('timeZone') ?? 'UTC';
      const from = calSlotsBound(start, 'start');
      const to = calSlotsBound(end, 'end');
      const data: Record<string, Array<Record<string, unknown>>> = {};
      for (const ms of [...options.slots].sort((a, b) => a - b)) {
        // A slot of the event type already (the list is options.slots): only whether it is held.
        if (ms < from || ms > to || !isUnheld(ms) || ms < Date.now() + noticeMs()) continue;
        const iso = isoInZone(ms, timeZone);
        const session = rules.seats === undefined ? undefined : sessionAt(ms);
        const booked = session?.seats?.length ?? 0;
        (data[iso.slice(0, 10)] ??= []).push(
          rules.seats === undefined
            ? { start: iso }
            : {
                start: iso,
                seatsBooked: booked,
                seatsRemaining: rules.seats - booked,
                seatsTotal: rules.seats,
                ...(session === undefined ? {} : { bookingUid: session.uid }),
              },
        );
      }
      return send(200, { status: 'success', data });
    }

    if (match.template === '/v2/bookings' && match.method === 'get') {
      if (failingSearches > 0) {
        failingSearches -= 1;
        return fail(500, 'InternalServerErrorException', 'Internal server error');
      }
      const email = q.get('attendeeEmail');
      const eventTypeId = q.get('eventTypeId');
      const after = Date.parse(q.get('afterStart') ?? '');
      const before = Date.parse(q.get('beforeEnd') ?? '');
      const found = bookings.filter(
        (b) =>
          (email === null || emailsOf(b).includes(email)) &&
          (eventTypeId === null || String(b.eventTypeId) === eventTypeId) &&
          (!Number.isFinite(after) || Date.parse(b.start) >= after) &&
          (!Number.isFinite(before) || Date.parse(b.end) <= before),
      );
      return send(200, { status: 'success', data: found.map((b) => view(b)) });
    }

    if (match.template === '/v2/bookings/{bookingUid}') {
      const booking = find(match.params.bookingUid ?? '');
      if (booking === undefined) return bookingNotFound();
      return send(200, { status: 'success', data: view(booking) });
    }

    if (match.template === '/v2/bookings' && match.method === 'post') {
      if (failingBookings > 0) {
        failingBookings -= 1;
        return fail(500, 'InternalServerErrorException', 'Internal server error');
      }
      const input = body as {
        start: string;
        eventTypeId: number;
        attendee: { name: string; email: string; timeZone: string; phoneNumber?: string };
        metadata?: Record<string, string>;
        bookingFieldsResponses?: Record<string, unknown>;
      };
      if (input.eventTypeId !== options.eventTypeId)
        return fail(404, 'NotFoundException', `Event type with id ${input.eventTypeId} not found.`);
      const startMs = Date.parse(input.start);
      const attendee: FakeCalAttendee = {
        name: input.attendee.name,
        email: input.attendee.email,
        timeZone: input.attendee.timeZone,
        phoneNumber: input.attendee.phoneNumber ?? null,
      };
      const metadata = input.metadata ?? {};
      const notes =
        typeof input.bookingFieldsResponses?.notes === 'string' ? input.bookingFieldsResponses.notes : null;
      const session = rules.seats === undefined ? undefined : sessionAt(startMs);
      if (session !== undefined && session.seats!.some((s) => s.attendee.email === attendee.email))
        return fail(400, 'BadRequestException', SEAT_MESSAGES.alreadySeated);
      const refused = refusal(startMs, input.attendee);
      if (refused !== null) {
        const full = session !== undefined && refused.message === CAL_MESSAGES.slotTaken;
        return full
          ? fail(400, 'BadRequestException', SEAT_MESSAGES.full)
          : fail(400, refused.code, refused.message, refused.withCode);
      }
      const seat = rules.seats === undefined ? undefined : newSeat(attendee, metadata, notes);
      const booking =
        session ??
        newBooking({
          start: new Date(startMs).toISOString(),
          status: rules.requiresConfirmation === true ? 'pending' : 'accepted',
          eventTypeId: input.eventTypeId,
          attendee,
          metadata,
          notes,
          ...(seat === undefined ? {} : { seats: [] }),
        });
      if (seat !== undefined) booking.seats!.push(seat);
      deliver(
        booking.status === 'pending' ? 'BOOKING_REQUESTED' : 'BOOKING_CREATED',
        booking,
        undefined,
        seat,
      );
      if (loseAnswer) {
        loseAnswer = false;
        req.socket.destroy();
        return;
      }
      return send(201, { status: 'success', data: view(booking, seat?.seatUid) });
    }

    if (match.template === '/v2/bookings/{bookingUid}/reschedule' && isSeatBody(body))
      return rescheduleSeat(match.params.bookingUid ?? '', body, send, fail);
    if (match.template === '/v2/bookings/{bookingUid}/cancel' && isSeatBody(body))
      return cancelSeat(match.params.bookingUid ?? '', body, send, fail);

    if (match.template === '/v2/bookings/{bookingUid}/reschedule') {
      const old = find(match.params.bookingUid ?? '');
      if (old === undefined) return bookingNotFound();
      if (!active(old)) return fail(400, 'BadRequestException', 'cancelled_bookings_cannot_be_rescheduled');
      const input = body as { start: string; reschedulingReason?: string };
      const startMs = Date.parse(input.start);
      const refused = refusal(startMs, old.attendee, old);
      if (refused !== null) return fail(400, refused.code, refused.message, refused.withCode);
      if (old.seats !== undefined) {
        // The owner's reschedule of a seated booking: every seat moves, the booking keeps its uid.
        const from = { ...old };
        old.start = new Date(startMs).toISOString();
        old.end = new Date(startMs + lengthMs).toISOString();
        deliver('BOOKING_RESCHEDULED', old, from);
        return send(201, { status: 'success', data: view(old, '') });
      }
      const moved = moveBooking(old, startMs, input.reschedulingReason);
      return send(201, { status: 'success', data: view(moved) });
    }

    if (match.template === '/v2/bookings/{bookingUid}/cancel') {
      const booking = find(match.params.bookingUid ?? '');
      if (booking === undefined) return bookingNotFound();
      if (booking.status === 'cancelled')
        return fail(400, 'BadRequestException', 'This booking has already been cancelled.');
      booking.status = 'cancelled';
      booking.cancellationReason = (body as { cancellationReason?: string }).cancellationReason ?? '';
      deliver('BOOKING_CANCELLED', booking);
      // A whole seated booking cancelled shows no attendee left (seated-bookings.e2e-spec.ts).
      if (booking.seats !== undefined) booking.seats.length = 0;
      return send(200, { status: 'success', data: view(booking) });
    }
    return fail(404, 'NotFoundException', `Cannot ${req.method} ${url.pathname}`);
  };

  /** POST /v2/bookings/{uid}/reschedule with a seatUid: that seat alone moves. */
  const rescheduleSeat = (uid: string, body: { seatUid: unknown }, send: Send, fail: Fail): void => {
    const extra = nonWhitelisted(body, ['start', 'seatUid', 'rescheduledBy']);
    if (extra !== null) return fail(400, 'BadRequestException', extra);
    const input = body as { start: string; seatUid: string };
    const old = find(uid);
    if (old === undefined) return fail(404, 'NotFoundException', SEAT_MESSAGES.bookingNotFound(uid));
    const seat = bookings.flatMap((b) => b.seats ?? []).find((s) => s.seatUid === input.seatUid);
    if (seat === undefined) return fail(404, 'NotFoundException', SEAT_MESSAGES.seatUnknown(input.seatUid));
    if (!old.seats?.includes(seat))
      return fail(
        404,
        'NotFoundException',
        SEAT_MESSAGES.attendeeNotOn(seat.attendee.email, uid, input.seatUid),
      );
    if (!active(old)) return fail(400, 'BadRequestException', 'cancelled_bookings_cannot_be_rescheduled');
    const startMs = Date.parse(input.start);
    const refused = refusal(startMs, seat.attendee, old);
    if (refused !== null) return fail(400, refused.code, refused.message, refused.withCode);
    old.seats.splice(old.seats.indexOf(seat), 1);
    if (old.seats.length === 0) old.status = 'cancelled';
    // It joins the session at the new time (the same seat), or a new booking with a new seat.
    const session = sessionAt(startMs, old);
    const moved =
      session ??
      newBooking({
        start: new Date(startMs).toISOString(),
        status: rules.requiresConfirmation === true ? 'pending' : 'accepted',
        eventTypeId: old.eventTypeId,
        attendee: seat.attendee,
        metadata: old.metadata,
        notes: seat.notes,
        seats: [],
        rescheduledFromUid: old.uid,
      });
    const now = session === undefined ? { ...seat, seatUid: newSeat(seat.attendee, {}, null).seatUid } : seat;
    moved.seats!.push(now);
    deliver('BOOKING_RESCHEDULED', moved, old, now);
    return send(201, { status: 'success', data: view(moved, now.seatUid) });
  };

  /** POST /v2/bookings/{uid}/cancel with a seatUid: that seat alone leaves. */
  const cancelSeat = (uid: string, body: { seatUid: unknown }, send: Send, fail: Fail): void => {
    const extra = nonWhitelisted(body, ['seatUid']);
    if (extra !== null) return fail(400, 'BadRequestException', extra);
    const booking = find(uid);
    if (booking === undefined) return fail(404, 'NotFoundException', SEAT_MESSAGES.bookingNotFound(uid));
    if (booking.status === 'cancelled')
      return fail(400, 'BadRequestException', 'This booking has already been cancelled.');
    const seats = booking.seats ?? [];
    if (seats.length < 2) {
      // Cal.com cancels a booking of one attendee whole, whichever seatUid was sent.
      booking.status = 'cancelled';
      booking.cancellationReason = '';
      deliver('BOOKING_CANCELLED', booking);
      seats.length = 0;
      return send(200, { status: 'success', data: view(booking) });
    }
    const seat = seats.find((s) => s.seatUid === (body as { seatUid: string }).seatUid);
    if (seat === undefined) return fail(400, 'BadRequestException', SEAT_MESSAGES.notPartOf);
    seats.splice(seats.indexOf(seat), 1);
    deliver('BOOKING_CANCELLED', booking, undefined, seat);
    return send(200, { status: 'success', data: view(booking) });
  };

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const must = (uid: string): FakeCalBooking => {
    const booking = find(uid);
    if (booking === undefined) throw new Error(`the fake Cal.com has no booking ${uid}`);
    return booking;
  };
  return {
    url: `http://127.0.0.1:${port}`,
    bookings,
    requests,
    deliveries,
    violations,
    setWebhook: (target) => {
      webhook = target;
    },
    setRules: (next) => {
      Object.assign(rules, next);
    },
    take: (ms) => {
      taken.add(ms);
    },
    reject: (uid, reason = 'The lawyer is not available then') => {
      const booking = must(uid);
      booking.status = 'rejected';
      booking.cancellationReason = reason;
      deliver('BOOKING_REJECTED', booking);
    },
    confirm: (uid) => {
      const booking = must(uid);
      booking.status = 'accepted';
      deliver('BOOKING_CREATED', booking);
    },
    reschedule: (uid, startMs) => moveBooking(must(uid), startMs).uid,
    cancel: (uid, reason = 'Schedule conflict') => {
      const booking = must(uid);
      booking.status = 'cancelled';
      booking.cancellationReason = reason;
      deliver('BOOKING_CANCELLED', booking);
    },
    loseNextAnswer: () => {
      loseAnswer = true;
    },
    limitRequests: (count, headers) => {
      limited = { count, headers };
    },
    failBookings: (count) => {
      failingBookings = count;
    },
    failSearches: (count) => {
      failingSearches = count;
    },
    settled: async () => {
      while (pending.size > 0) await Promise.all([...pending]);
    },
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      violations.assertNone();
    },
  };
}

/**
 * A booking as API v2 (2024-08-13) shows one: BookingOutput_2024_08_13, or for a seated one
 * GetSeatedBookingOutput_2024_08_13, with `seatUid` (CreateSeatedBookingOutput_2024_08_13) when
 * answering a seat's create or move.
 */
function view(b: FakeCalBooking, seatUid?: string): Record<string, unknown> {
  const common = {
    id: b.id,
    uid: b.uid,
    title: `Consultation between ${HOST.name} and ${b.attendee.name}`,
    description: '',
    hosts: [{ ...HOST, displayEmail: HOST.email, timeZone: 'America/New_York' }],
    status: b.status,
    ...(b.cancellationReason === undefined ? {} : { cancellationReason: b.cancellationReason }),
    ...(b.rescheduledFromUid === undefined ? {} : { rescheduledFromUid: b.rescheduledFromUid }),
    ...(b.rescheduledToUid === undefined ? {} : { rescheduledToUid: b.rescheduledToUid }),
    start: b.start,
    end: b.end,
    duration: Math.round((Date.parse(b.end) - Date.parse(b.start)) / 60_000),
    eventTypeId: b.eventTypeId,
    eventType: { id: b.eventTypeId, slug: 'consultation' },
    location: 'https://app.cal.com/video/abc123',
    absentHost: false,
    createdAt: b.createdAt,
    updatedAt: null,
    metadata: b.metadata,
  };
  if (b.seats !== undefined) {
    return {
      ...common,
      ...(seatUid === undefined ? {} : { seatUid }),
      attendees: seatedAttendees(b.seats),
    };
  }
  return {
    ...common,
    attendees: [
      {
        name: b.attendee.name,
        email: b.attendee.email,
        displayEmail: b.attendee.email,
        timeZone: b.attendee.timeZone,
        language: 'en',
        absent: false,
        ...(b.attendee.phoneNumber === null ? {} : { phoneNumber: b.attendee.phoneNumber }),
      },
    ],
    guests: [],
    bookingFieldsResponses: {
      name: b.attendee.name,
      email: b.attendee.email,
      ...(b.notes === null ? {} : { notes: b.notes }),
    },
  };
}

/** Slot starts every `stepMinutes` from 9:00 UTC on the days from `fromMs`, `perDay` a day. */
export function dailySlots(fromMs: number, days: number, perDay: number, stepMinutes = 30): number[] {
  const first = Math.floor(fromMs / DAY_MS) * DAY_MS + DAY_MS;
  const out: number[] = [];
  for (let d = 0; d < days; d++) {
    for (let i = 0; i < perDay; i++) out.push(first + d * DAY_MS + 9 * 3600_000 + i * stepMinutes * 60_000);
  }
  return out;
}
