import type { Context } from 'koa';
import { requireFirm } from '../../../core/domain/access/access.js';
import {
  snapshotBookingEvent,
  type BookingPayloadInput,
} from '../../../core/domain/bookings/booking-event.js';
import { listBookingReminders } from '../../../core/domain/bookings/reminders.js';
import { getFirm } from '../../../core/domain/firms/firms.js';
import {
  CAL_SIGNATURE_HEADER,
  isCalSignatureForm,
  verifyCalSignature,
} from '../../../core/integrations/booking/cal-signature.js';
import { notFound, quote, unauthorized } from '../../../core/platform/errors.js';
import type { Services } from '../../../core/wiring/services.js';
import { isBookingTrigger } from '../../../jobs/bookings.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import { defineRoute, type WebhookCredentials } from '../../route.js';
import { authenticateRequest } from '../../router.js';
import {
  BookingWebhookBody,
  BookingWebhookResponse,
  FirmParams,
  ReminderList,
  RemindersQuery,
} from './schema.js';

const tag = 'Appointments';

/**
 * The bearer header (the platform key, or a token of this firm), or else Cal.com's
 * X-Cal-Signature-256 with the firm's booking_webhook_secret (CONTRACT §3.11). All of it but the
 * HMAC over the body is checked before the body is read. Cal.com's signature has no timestamp,
 * so there is no freshness to check: a replayed delivery is a repeat, which changes nothing.
 */
async function authenticateBookingWebhook(ctx: Context, services: Services): Promise<WebhookCredentials> {
  const slug = String(ctx.params.firm ?? '');
  const db = services.mongo.db;
  if (ctx.get('Authorization') !== '') {
    const principal = await authenticateRequest(ctx, services);
    await requireFirm(db, principal, slug);
    return { principal, firm: slug };
  }
  const signature = ctx.get(CAL_SIGNATURE_HEADER);
  if (signature === '') throw unauthorized('Send a bearer token or an X-Cal-Signature-256 header.');
  if (!isCalSignatureForm(signature)) {
    throw unauthorized(
      'The X-Cal-Signature-256 header is not a hex HMAC-SHA256 (Cal.com sends "no-secret-provided" when its webhook has no secret: set one).',
    );
  }
  const firm = await getFirm(db, slug);
  if (firm === null) throw notFound('firm', `No firm has the slug ${quote(slug)}.`);
  const secret = firm.settings.booking_webhook_secret;
  if (secret === undefined || secret === '') {
    throw unauthorized('The firm has no booking_webhook_secret; set one, or send a bearer token.');
  }
  return {
    principal: { kind: 'firm', firm: firm._id, via: 'webhook_signature', subject: 'booking-webhook' },
    firm: firm._id,
    verifyBody: async (rawBody) => verifyCalSignature(rawBody, secret, signature),
  };
}

export const bookingRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v2/{firm}/booking-webhook',
    operationId: 'bookingWebhook',
    summary:
      'Cal.com booking events. BOOKING_CREATED, BOOKING_RESCHEDULED and BOOKING_CANCELLED update the booking’s email reminders (applied by a worker); other triggers are acknowledged and ignored',
    tag,
    auth: { kind: 'webhook', authenticate: authenticateBookingWebhook },
    params: FirmParams,
    body: BookingWebhookBody,
    response: BookingWebhookResponse,
    errors: [403, 404],
    handler: async ({ services, params, body, koa }) => {
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
        await enqueue(services.queues, JOBS.bookingEvent, event);
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
      return listBookingReminders(services, firm._id, query.bookingUid);
    },
  }),
];
