import { requireFirm } from '../../../core/domain/access/access.js';
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
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import { defineRoute } from '../../route.js';
import { webhookAuthentication } from '../../webhook-auth.js';
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
const authenticateBookingWebhook = webhookAuthentication({
  header: CAL_SIGNATURE_HEADER,
  subject: 'booking-webhook',
  missing: 'Send a bearer token or an X-Cal-Signature-256 header.',
  wellFormed: isCalSignatureForm,
  malformed:
    'The X-Cal-Signature-256 header is not a hex HMAC-SHA256 (Cal.com sends "no-secret-provided" when its webhook has no secret: set one).',
  secretsOf: (_services, firm) => [firm.settings.booking_webhook_secret ?? ''],
  noSecret: 'The firm has no booking_webhook_secret; set one, or send a bearer token.',
  verify: verifyCalSignature,
});

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
