import type { Context } from 'koa';
import { requireFirm } from '../../../core/domain/access/access.js';
import { AppError, unauthorized } from '../../../core/platform/errors.js';
import type { Services } from '../../../core/wiring/services.js';
import {
  snapshotBookingEvent,
  type BookingPayloadInput,
} from '../../../core/domain/bookings/booking-event.js';
import { listBookingReminders } from '../../../core/domain/bookings/reminders.js';
import {
  CAL_SIGNATURE_HEADER,
  isCalSignatureForm,
  verifyCalSignature,
} from '../../../core/integrations/booking/cal-signature.js';
import { isBookingTrigger } from '../../../jobs/bookings.js';
import { acceptDelivery } from '../../../core/domain/deliveries/delivery-outbox.js';
import { defineRoute, type RawBody, type WebhookCredentials } from '../../route.js';
import { webhookAuthentication } from '../../webhook-auth.js';
import { reminderView } from './present.js';
import {
  BookingWebhookBody,
  BookingWebhookResponse,
  FirmParams,
  ReminderList,
  RemindersQuery,
} from './schema.js';

const tag = 'Appointments';

/**
 * Cal.com's X-Cal-Signature-256 with the firm's booking_webhook_secret. Cal.com's signature has
 * no timestamp, so there is no freshness to check: a replayed delivery is a repeat, which changes
 * nothing.
 */
const authenticateSigned = webhookAuthentication({
  header: CAL_SIGNATURE_HEADER,
  subject: 'booking-webhook',
  missing: 'Send a bearer token or an X-Cal-Signature-256 header.',
  wellFormed: isCalSignatureForm,
  malformed:
    'The X-Cal-Signature-256 header is not a hex HMAC-SHA256 (Cal.com sends "no-secret-provided" when its webhook has no secret: set one).',
  secretsOf: (_services, firm) => [firm.booking_webhook_secret ?? ''],
  verify: verifyCalSignature,
});

/** The subject of a delivery let in only because its body may be Cal.com's PING. */
const PING_SUBJECT = 'booking-webhook-ping';
/** Cal.com's PING body is well under 1 KiB; a bigger unauthenticated body is no PING. */
const MAX_PING_BYTES = 16 * 1024;

/** Whether a raw body is Cal.com's "Ping test" (`triggerEvent: "PING"`), read only when small. */
function isCalPing(rawBody: RawBody): boolean {
  if (Buffer.byteLength(rawBody) > MAX_PING_BYTES) return false;
  try {
    const body = JSON.parse(rawBody.toString()) as unknown;
    return (
      typeof body === 'object' &&
      body !== null &&
      (body as { triggerEvent?: unknown }).triggerEvent === 'PING'
    );
  } catch {
    return false;
  }
}

/**
 * The bearer header or X-Cal-Signature-256 (authenticateSigned), with one leniency
 * (docs/bookings.md#video-links-and-ping): Cal.com's "Ping test" is signed "no-secret-provided" when the
 * webhook has no secret, so a delivery that fails authentication (401) is still answered 200 when its
 * body turns out to be a PING, which does nothing; it counts against the sender's address, not the
 * firm, and whether the firm exists is not looked at. Any other body gets the original 401.
 */
async function authenticateBookingWebhook(ctx: Context, services: Services): Promise<WebhookCredentials> {
  let signed: WebhookCredentials;
  try {
    signed = await authenticateSigned(ctx, services);
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 401) throw err;
    const slug = String(ctx.params.firm ?? '');
    return {
      principal: { kind: 'firm', firm: slug, via: 'webhook_signature', subject: PING_SUBJECT },
      firm: slug,
      verifyBody: async (rawBody) => {
        if (isCalPing(rawBody)) return 'unsigned';
        throw err;
      },
    };
  }
  const { verifyBody } = signed;
  if (verifyBody === undefined) return signed; // a bearer token: nothing to check in the body
  // A signature that does not match the body: still 401 unless the body is a PING.
  return {
    ...signed,
    verifyBody: async (rawBody) => (await verifyBody(rawBody)) || (isCalPing(rawBody) ? 'unsigned' : false),
  };
}

export const bookingRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v2/{firm}/booking-webhook',
    operationId: 'bookingWebhook',
    summary:
      'Cal.com booking events. BOOKING_CREATED, BOOKING_RESCHEDULED and BOOKING_CANCELLED update the booking’s email reminders; these and BOOKING_REQUESTED, BOOKING_REJECTED move the appointment of the lead the booking is for (applied by a worker); other triggers are acknowledged and ignored',
    tag,
    auth: { kind: 'webhook', authenticate: authenticateBookingWebhook },
    params: FirmParams,
    body: BookingWebhookBody,
    response: BookingWebhookResponse,
    errors: [403, 404],
    handler: async ({ services, principal, params, body, koa }) => {
      // Let in for a PING only (verifyBody saw one): nothing else may pass this way.
      if (principal.subject === PING_SUBJECT && body.triggerEvent !== 'PING') throw unauthorized();
      if (isBookingTrigger(body.triggerEvent)) {
        const event = snapshotBookingEvent({
          firm: params.firm,
          trigger: body.triggerEvent,
          createdAt: body.createdAt,
          // The schema's if/then checked the booking fields of a booking trigger's payload.
          payload: body.payload as BookingPayloadInput,
          rawBody: (koa.request as { rawBody?: string }).rawBody ?? '',
          receivedAt: Date.now(),
        });
        // Cal.com sends once: in the queue, or in the MongoDB outbox while Redis is down.
        await acceptDelivery(services, 'bookingEvent', params.firm, event);
      }
      return { received: true as const };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/v2/{firm}/reminders',
    operationId: 'listReminders',
    summary:
      'The email reminders of one booking, by due time then recipient: scheduled, sent, cancelled (or failed after every retry)',
    tag,
    auth: { kind: 'token' },
    params: FirmParams,
    query: RemindersQuery,
    response: ReminderList,
    errors: [403, 404],
    handler: async ({ services, principal, params, query }) => {
      const firm = await requireFirm(services.mongo.db, principal, params.firm);
      return (await listBookingReminders(services, firm._id, query.bookingUid)).map(reminderView);
    },
  }),
];
