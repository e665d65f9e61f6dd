import type { Context } from 'koa';
import { requireFirm } from '../../../core/domain/access/access.js';
import type { Principal } from '../../../core/domain/access/principal.js';
import { notFound, quote, unauthorized } from '../../../core/platform/errors.js';
import { getFirm } from '../../../core/domain/firms/firms.js';
import {
  RETELL_SIGNATURE_HEADER,
  verifyRetellSignature,
} from '../../../core/integrations/voice/webhook-signature.js';
import type { Services } from '../../../core/wiring/services.js';
import { enqueueCallEvent, isCallEvent, type CallEventJob } from '../../../jobs/calls.js';
import { defineRoute } from '../../route.js';
import { authenticateBearer } from '../../router.js';
import { CallWebhookBody, CallWebhookParams, CallWebhookResponse } from './schema.js';

/**
 * The bearer header (the platform key, or a token of this firm), or else Retell's
 * x-retell-signature over the raw body with the firm's voice_webhook_secret.
 */
async function authenticateCallWebhook(ctx: Context, services: Services): Promise<Principal> {
  const slug = String(ctx.params.firm ?? '');
  const db = services.mongo.db;
  if (ctx.get('Authorization') !== '') {
    const principal = await authenticateBearer(ctx, services);
    await requireFirm(db, principal, slug);
    return principal;
  }
  const signature = ctx.get(RETELL_SIGNATURE_HEADER);
  if (signature === '') throw unauthorized('Send a bearer token or an x-retell-signature header.');
  const firm = await getFirm(db, slug);
  if (firm === null) throw notFound('firm', `No firm has the slug ${quote(slug)}.`);
  const secret = firm.settings.voice_webhook_secret;
  const rawBody = (ctx.request as { rawBody?: string }).rawBody ?? '';
  if (!secret || !(await verifyRetellSignature(rawBody, secret, signature))) {
    throw unauthorized(
      'The x-retell-signature header is invalid, expired, or the firm has no voice_webhook_secret.',
    );
  }
  return { kind: 'firm', firm: firm._id, via: 'webhook_signature', subject: 'voice-webhook' };
}

export const callWebhookRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v2/{firm}/webhook',
    operationId: 'callWebhook',
    summary:
      'Voice provider events (Retell shape). call_started, call_ended and call_analyzed are stored and applied by a worker; other events are acknowledged and ignored',
    tag: 'Webhooks',
    auth: { kind: 'custom', authenticate: authenticateCallWebhook },
    params: CallWebhookParams,
    body: CallWebhookBody,
    response: CallWebhookResponse,
    errors: [403, 404],
    handler: async ({ services, params, body }) => {
      if (isCallEvent(body.event)) {
        await enqueueCallEvent(services.queues, {
          firm: params.firm,
          event: body.event,
          call: body.call as CallEventJob['call'],
          received_at: Date.now(),
        });
      }
      return { received: true as const };
    },
  }),
];
