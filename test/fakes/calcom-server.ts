// A small stand-in for Cal.com's API v2 on 127.0.0.1 (cal.com/docs/api-reference/v2): free slots
// (GET /v2/slots?eventTypeId&start&end&timeZone, `cal-api-version: 2024-09-04`; answered
// {status: "success", data: {"YYYY-MM-DD": [{start: "<ISO with the zone's offset>"}]}}) and
// bookings (POST /v2/bookings {start (UTC), eventTypeId, attendee {name, email, timeZone,
// phoneNumber?, language?}, metadata?, bookingFieldsResponses?}, and GET /v2/bookings?attendeeEmail
// &eventTypeId&afterStart&beforeEnd; `cal-api-version: 2024-08-13`; a booking answered as
// {status: "success", data: {id, uid, start, end, status: "accepted", ...}}).
//
// As Cal.com does: the API key is a bearer token (a wrong one is 401 UnauthorizedException);
// errors are {status: "error", timestamp, path, error: {code, message, details}}; without the
// version header an endpoint falls back to its old version, whose request shape these are not
// (slots wants startTime/endTime, bookings a `responses` object), so the answer is a 400; a slot
// that is no longer free is a 400 BadRequestException ("User either already has booking at this
// time or is not available"). After a booking it sends BOOKING_CREATED to the webhook it is given,
// signed with X-Cal-Signature-256 as Cal.com signs. Tests can take a slot behind the service's
// back (someone booked it on the booking page) and lose the answer to a booking that was made.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signCalWebhook } from '../../core/integrations/booking/cal-signature.js';
import { calBookingPayload, calCreated } from './calcom-fixtures.js';

export interface FakeCalBooking {
  id: number;
  uid: string;
  start: string;
  end: string;
  status: 'accepted';
  eventTypeId: number;
  attendee: { name: string; email: string; timeZone: string; phoneNumber: string | null };
  metadata: Record<string, unknown>;
  notes: string | null;
}

export interface FakeCalcomOptions {
  apiKey: string;
  eventTypeId: number;
  /** The free slot starts (UTC ms) of the event type, before any booking. */
  slots: number[];
  lengthMinutes?: number;
}

export interface FakeCalcom {
  url: string;
  bookings: FakeCalBooking[];
  requests: Array<{ method: string; path: string; version: string | undefined }>;
  /** BOOKING_CREATED deliveries and the status our webhook answered. */
  deliveries: Array<{ uid: string; status: number }>;
  /** Where BOOKING_CREATED goes after each booking (null: nowhere). */
  setWebhook(target: { url: string; secret: string } | null): void;
  /** Someone else booked this start on the booking page. */
  take(startMs: number): void;
  /** The next booking is made, then its answer is lost (the connection drops). */
  loseNextAnswer(): void;
  /** The next `count` booking searches (GET /v2/bookings) answer 500. */
  failSearches(count: number): void;
  /** The next `count` bookings (POST /v2/bookings) answer 500 and book nothing. */
  failBookings(count: number): void;
  /** Resolves when every webhook delivery started so far has been answered. */
  settled(): Promise<void>;
  stop(): Promise<void>;
}

const DAY_MS = 24 * 3600_000;

/** `ms` as ISO 8601 with the offset `timeZone` has then, as Cal.com writes slot starts. */
export function isoInZone(ms: number, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  const local = Date.UTC(
    +parts.year!,
    +parts.month! - 1,
    +parts.day!,
    +parts.hour!,
    +parts.minute!,
    +parts.second!,
  );
  const offset = Math.round((local - ms) / 60_000);
  const sign = offset < 0 ? '-' : '+';
  const hh = String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0');
  const mm = String(Math.abs(offset) % 60).padStart(2, '0');
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.000${sign}${hh}:${mm}`;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function calError(res: ServerResponse, path: string, status: number, code: string, message: string): void {
  const error = status === 401 ? 'Unauthorized' : status === 404 ? 'Not Found' : 'Bad Request';
  send(res, status, {
    status: 'error',
    timestamp: new Date().toISOString(),
    path,
    error: { code, message, details: { message, error, statusCode: status } },
  });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFakeCalcom(options: FakeCalcomOptions): Promise<FakeCalcom> {
  const lengthMs = (options.lengthMinutes ?? 30) * 60_000;
  const taken = new Set<number>();
  const bookings: FakeCalBooking[] = [];
  const requests: FakeCalcom['requests'] = [];
  const deliveries: FakeCalcom['deliveries'] = [];
  const pending = new Set<Promise<void>>();
  let webhook: { url: string; secret: string } | null = null;
  let loseAnswer = false;
  let failingSearches = 0;
  let failingBookings = 0;

  const isFree = (ms: number) => options.slots.includes(ms) && !taken.has(ms);

  const deliver = (booking: FakeCalBooking): void => {
    if (webhook === null) return;
    const target = webhook;
    const payload = calBookingPayload(booking.uid, Date.parse(booking.start), [
      { name: booking.attendee.name, email: booking.attendee.email, timeZone: booking.attendee.timeZone },
    ]);
    const raw = JSON.stringify(
      calCreated({ ...payload, eventTypeId: booking.eventTypeId, metadata: booking.metadata }),
    );
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
        deliveries.push({ uid: booking.uid, status: res.status });
      })
      .catch(() => {
        deliveries.push({ uid: booking.uid, status: 0 });
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  };

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const path = url.pathname;
      const version = req.headers['cal-api-version'] as string | undefined;
      requests.push({ method: req.method ?? '', path, version });
      const raw = await readBody(req);
      const auth = req.headers.authorization;
      const authorised = auth === `Bearer ${options.apiKey}`;
      if ((auth !== undefined || path !== '/v2/slots') && !authorised) {
        return calError(res, req.url ?? path, 401, 'UnauthorizedException', 'ApiAuthGuard - Invalid API Key');
      }

      if (req.method === 'GET' && path === '/v2/slots') {
        if (version !== '2024-09-04') {
          // The old slots endpoint: its query has startTime and endTime.
          return calError(
            res,
            req.url ?? path,
            400,
            'BadRequestException',
            'startTime must be a valid ISO 8601 date string',
          );
        }
        const start = url.searchParams.get('start') ?? '';
        const end = url.searchParams.get('end') ?? '';
        const timeZone = url.searchParams.get('timeZone') ?? 'UTC';
        const eventTypeId = Number(url.searchParams.get('eventTypeId'));
        if (eventTypeId !== options.eventTypeId)
          return calError(
            res,
            req.url ?? path,
            404,
            'NotFoundException',
            `Event type with id=${eventTypeId} not found`,
          );
        const from = Date.parse(start);
        const to = Date.parse(end);
        if (!Number.isFinite(from) || !Number.isFinite(to))
          return calError(
            res,
            req.url ?? path,
            400,
            'BadRequestException',
            'start and end must be ISO 8601 dates',
          );
        const data: Record<string, Array<{ start: string }>> = {};
        for (const ms of [...options.slots].sort((a, b) => a - b)) {
          if (!isFree(ms)) continue;
          const iso = isoInZone(ms, timeZone);
          const day = iso.slice(0, 10);
          // start and end are days in timeZone; end is included.
          if (day < start.slice(0, 10) || day > end.slice(0, 10)) continue;
          (data[day] ??= []).push({ start: iso });
        }
        return send(res, 200, { status: 'success', data });
      }

      if (path === '/v2/bookings' && (req.method === 'POST' || req.method === 'GET')) {
        if (version !== '2024-08-13') {
          // The 2024-04-15 bookings endpoint: its body needs `responses`, `timeZone`, `language`.
          return calError(res, path, 400, 'BadRequestException', 'responses should not be null or undefined');
        }
        if (req.method === 'GET') {
          if (failingSearches > 0) {
            failingSearches -= 1;
            return calError(res, path, 500, 'InternalServerErrorException', 'Internal server error');
          }
          const email = url.searchParams.get('attendeeEmail');
          const after = Date.parse(url.searchParams.get('afterStart') ?? '');
          const before = Date.parse(url.searchParams.get('beforeEnd') ?? '');
          const found = bookings.filter(
            (b) =>
              (email === null || b.attendee.email === email) &&
              (!Number.isFinite(after) || Date.parse(b.start) >= after) &&
              (!Number.isFinite(before) || Date.parse(b.end) <= before),
          );
          return send(res, 200, {
            status: 'success',
            data: found.map(view),
            pagination: { totalItems: found.length },
          });
        }
        if (failingBookings > 0) {
          failingBookings -= 1;
          return calError(res, path, 500, 'InternalServerErrorException', 'Internal server error');
        }
        let body: any;
        try {
          body = JSON.parse(raw);
        } catch {
          return calError(res, path, 400, 'BadRequestException', 'Unexpected token in JSON');
        }
        const a = body?.attendee;
        if (
          typeof body?.start !== 'string' ||
          typeof body?.eventTypeId !== 'number' ||
          typeof a?.name !== 'string' ||
          typeof a?.email !== 'string' ||
          typeof a?.timeZone !== 'string'
        ) {
          return calError(
            res,
            path,
            400,
            'BadRequestException',
            'start, eventTypeId and attendee {name, email, timeZone} are required',
          );
        }
        if (body.eventTypeId !== options.eventTypeId)
          return calError(
            res,
            path,
            404,
            'NotFoundException',
            `Event type with id=${body.eventTypeId} not found`,
          );
        const startMs = Date.parse(body.start);
        if (!isFree(startMs)) {
          return calError(
            res,
            path,
            400,
            'BadRequestException',
            'User either already has booking at this time or is not available',
          );
        }
        taken.add(startMs);
        const booking: FakeCalBooking = {
          id: bookings.length + 1,
          uid: randomBytes(11).toString('base64url'),
          start: new Date(startMs).toISOString(),
          end: new Date(startMs + lengthMs).toISOString(),
          status: 'accepted',
          eventTypeId: body.eventTypeId,
          attendee: {
            name: a.name,
            email: a.email,
            timeZone: a.timeZone,
            phoneNumber: a.phoneNumber ?? null,
          },
          metadata: typeof body.metadata === 'object' && body.metadata !== null ? body.metadata : {},
          notes: body.bookingFieldsResponses?.notes ?? null,
        };
        bookings.push(booking);
        deliver(booking);
        if (loseAnswer) {
          loseAnswer = false;
          req.socket.destroy();
          return;
        }
        return send(res, 200, { status: 'success', data: view(booking) });
      }
      return calError(res, path, 404, 'NotFoundException', `Cannot ${req.method} ${path}`);
    })().catch((err: unknown) => {
      send(res, 500, {
        status: 'error',
        error: { code: 'InternalServerErrorException', message: String(err) },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    bookings,
    requests,
    deliveries,
    setWebhook: (target) => {
      webhook = target;
    },
    take: (ms) => {
      taken.add(ms);
    },
    loseNextAnswer: () => {
      loseAnswer = true;
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
    },
  };
}

/** A booking as API v2 (2024-08-13) shows one. */
function view(b: FakeCalBooking): Record<string, unknown> {
  return {
    id: b.id,
    uid: b.uid,
    title: `Consultation between Alex Counsel and ${b.attendee.name}`,
    description: '',
    hosts: [
      {
        id: 1,
        name: 'Alex Counsel',
        email: 'alex@lawfirm.test',
        username: 'alex',
        timeZone: 'America/New_York',
      },
    ],
    status: b.status,
    start: b.start,
    end: b.end,
    duration: Math.round((Date.parse(b.end) - Date.parse(b.start)) / 60_000),
    eventTypeId: b.eventTypeId,
    eventType: { id: b.eventTypeId, slug: 'consultation' },
    meetingUrl: 'https://app.cal.com/video/abc123',
    location: 'https://app.cal.com/video/abc123',
    absentHost: false,
    createdAt: new Date().toISOString(),
    metadata: b.metadata,
    attendees: [{ ...b.attendee, language: 'en', absent: false }],
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
