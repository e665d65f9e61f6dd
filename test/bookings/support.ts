import { expect } from 'vitest';
import { signCalWebhook } from '../../core/integrations/booking/cal-signature.js';
import { eventually } from '../helpers/eventually.js';
import { expectOutboxEmpty } from '../helpers/webhook-outbox.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { CAL_ORGANIZER, calTime } from '../fakes/calcom-fixtures.js';
import type { ApiClient } from '../helpers/client.js';
import {
  reminderField,
  type BookingRecord,
  type ReminderRecord,
  type ReminderStore,
} from '../../core/domain/bookings/reminder-records.js';
import { storeBookingReminders } from '../../core/domain/bookings/reminder-schedule.js';
import type { SendReminderJob } from '../../jobs/bookings.js';

// Cal.com's webhook envelope as its webhook code sends it: {triggerEvent, createdAt, payload}
// with the booking's uid, times in UTC ("...Z"), attendees with their time zones, the organizer,
// and, on a reschedule, the old booking's uid in rescheduleUid.

export interface Attendee {
  email: string;
  name: string;
  timeZone: string;
}

export const uid = (): string => `bk${rand(8)}`;

export function calBooking(
  bookingUid: string,
  startMs: number,
  attendees: Attendee[],
  fields: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    type: '30min',
    title: 'Initial consultation',
    description: 'Car accident, rear-ended',
    additionalNotes: '',
    customInputs: {},
    startTime: calTime(startMs),
    endTime: calTime(startMs + 30 * 60_000),
    organizer: CAL_ORGANIZER,
    responses: { name: { label: 'your_name', value: attendees[0]?.name ?? '' } },
    userFieldsResponses: {},
    attendees: attendees.map((a) => ({ ...a, language: { locale: 'en' }, utcOffset: 0 })),
    location: 'https://cal.com/video/abc123',
    destinationCalendar: null,
    hideCalendarNotes: false,
    requiresConfirmation: null,
    eventTypeId: 42,
    seatsShowAttendees: true,
    seatsPerTimeSlot: null,
    uid: bookingUid,
    bookingId: Math.floor(Math.random() * 1e6),
    status: 'ACCEPTED',
    metadata: { videoCallUrl: 'https://cal.com/video/abc123' },
    ...fields,
  };
}

export function calEvent(triggerEvent: string, payload: Record<string, unknown>): Record<string, unknown> {
  return { triggerEvent, createdAt: new Date().toISOString(), payload };
}

/** Posts a raw JSON body with Cal.com's X-Cal-Signature-256 (or the header given). */
export function postSigned(
  stack: Stack,
  slug: string,
  body: unknown,
  secret: string,
  options: { raw?: string; signature?: string } = {},
) {
  const raw = options.raw ?? JSON.stringify(body);
  return stack.api.request('POST', `/api/v2/${slug}/booking-webhook`, {
    rawBody: raw,
    headers: {
      'Content-Type': 'application/json',
      'X-Cal-Signature-256': options.signature ?? signCalWebhook(raw, secret),
    },
  });
}

export interface ReminderRow {
  booking_uid: string;
  due_at: string;
  channel: string;
  to: string;
  status: string;
}

export async function reminders(client: ApiClient, slug: string, bookingUid: string): Promise<ReminderRow[]> {
  const res = await client.get(`/api/v2/${slug}/reminders?bookingUid=${encodeURIComponent(bookingUid)}`);
  expect(res.status).toBe(200);
  return res.body as ReminderRow[];
}

/** Waits until the booking's reminders satisfy `check`. */
export function remindersWhen(
  client: ApiClient,
  slug: string,
  bookingUid: string,
  check: (rows: ReminderRow[]) => void,
): Promise<ReminderRow[]> {
  return eventually(async () => {
    const rows = await reminders(client, slug, bookingUid);
    check(rows);
    return rows;
  });
}

/** Jobs of the bookings queue in these states, by name. */
export async function bookingJobs(
  stack: Stack,
  states: Array<'waiting' | 'active' | 'delayed' | 'completed' | 'failed' | 'prioritized'> = [
    'waiting',
    'active',
    'delayed',
    'completed',
    'failed',
  ],
) {
  return stack.services.queues.bookings.getJobs(states);
}

/**
 * The booking-event deliveries of a booking, wherever each was made durable: its job in the
 * bookings queue (in any state), or its entry in the webhook outbox, where a delivery goes when its
 * add takes longer than ENQUEUE_TIMEOUT_MS (a loaded machine) and, the web's outbox gate then
 * closed, the stack's later deliveries too until a worker's drain empties it. `ids`: the job ids,
 * each once (a delivery whose slow add landed after its entry was kept is in both, with one id);
 * `data`: each one's job data, by job id.
 */
export async function bookingDeliveries(
  stack: Stack,
  bookingUid: string,
): Promise<{ ids: string[]; data: Map<string, any> }> {
  const data = new Map<string, any>();
  const kept = await stack.services.mongo.db
    .collection<{ payload: string; delivery?: string }>(COLLECTIONS.webhookOutbox)
    .find({ job: 'bookingEvent' })
    .toArray();
  for (const entry of kept) {
    const payload = JSON.parse(entry.payload);
    if (payload.uid === bookingUid) data.set(entry.delivery!, payload);
  }
  for (const job of await bookingJobs(stack)) {
    if (job.name === 'booking-event' && job.data.uid === bookingUid) data.set(job.id!, job.data);
  }
  return { ids: [...data.keys()], data };
}

/**
 * Waits until no booking event waits or runs, in the bookings queue or in the webhook outbox
 * (a delivery kept there is applied once a worker's drain has moved it). Reminders days ahead
 * stay delayed meanwhile.
 */
export const bookingEventsApplied = (stack: Stack) =>
  eventually(async () => {
    await expectOutboxEmpty(stack);
    const pending = (await bookingJobs(stack, ['waiting', 'active', 'prioritized'])).filter(
      (j) => j.name === 'booking-event',
    );
    expect(pending).toEqual([]);
  });

/** Waits until the bookings queue has nothing waiting, running or delayed, and the webhook outbox nothing. */
export const bookingsDrained = (stack: Stack, timeoutMs = 30_000) =>
  eventually(async () => {
    await expectOutboxEmpty(stack);
    const counts = await stack.services.queues.bookings.getJobCounts(
      'waiting',
      'active',
      'delayed',
      'prioritized',
    );
    expect(counts).toEqual({ waiting: 0, active: 0, delayed: 0, prioritized: 0 });
  }, timeoutMs);

export const iso = (ms: number): string => new Date(ms).toISOString();

/** A stack with workers sending reminders through a real SMTP server of its own. */
export interface MailingStack {
  smtp: FakeSmtp;
  stack: Stack;
}

export async function startMailingStack(): Promise<MailingStack> {
  const smtp = await startFakeSmtp();
  try {
    const stack = await startStack({
      workers: true,
      env: { SMTP_URL: smtp.url, MAIL_FROM: 'Reminders <reminders@lawfirm.test>' },
    });
    return { smtp, stack };
  } catch (err) {
    await smtp.stop();
    throw err;
  }
}

/** Stops what `startMailingStack` started (any part of it, for an afterAll after a failed start). */
export async function stopMailingStack(mailing: Partial<MailingStack>): Promise<void> {
  await mailing.stack?.stop();
  await mailing.smtp?.stop();
}

/** A firm with a signed booking webhook, its desk copied on reminders, one reminder a minute before. */
export const reminderFirm = (stack: Stack, secret: string, desk: string, timezone: string) =>
  createFirm(stack, {
    booking_webhook_secret: secret,
    notification_emails: [desk],
    timezone,
    reminder_offsets_minutes: [1],
  });

/**
 * A booking made earlier, stored as its booking-event job stores it, with one reminder to `to` due
 * now: 60 minutes before a start an hour away (on a whole minute, as Cal.com sends times). Returns
 * what the reminder's sendReminder job carries, and the booking's uid, start and reminder field.
 */
export async function storeDueReminder(
  store: ReminderStore,
  firm: string,
  to: string,
  options: { uid?: string; firmName?: string; maxDue?: number } = {},
): Promise<{ uid: string; startAt: number; field: string; dueAt: number; job: SendReminderJob }> {
  const bookingUid = options.uid ?? uid();
  const now = Date.now();
  const startAt = Math.ceil((now + 3600_000) / 60_000) * 60_000;
  const booking: BookingRecord = {
    state: 'active',
    start_at: startAt,
    end_at: startAt + 1800_000,
    title: 'Consultation',
    attendees: to,
    firm_name: options.firmName ?? 'Reminder LLP',
    event_at: now - 60_000,
  };
  const reminder: ReminderRecord = {
    booking_uid: bookingUid,
    due_at: now,
    offset_minutes: 60,
    channel: 'email',
    to,
    time_zone: 'UTC',
    role: 'attendee',
    status: 'scheduled',
  };
  await storeBookingReminders(store, firm, bookingUid, {
    booking,
    reminders: [reminder],
    now,
    expireAt: now + 48 * 3600_000,
    maxDue: options.maxDue ?? 10_000,
  });
  const field = reminderField(startAt, 60, to);
  return {
    uid: bookingUid,
    startAt,
    field,
    dueAt: now,
    job: { firm, booking_uid: bookingUid, reminder: field, due_at: now },
  };
}
