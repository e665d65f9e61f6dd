import type { Context } from 'koa';
import { requireFirm } from '../../../core/domain/access/access.js';
import { notFound, quote, unauthorized } from '../../../core/platform/errors.js';
import { getFirm } from '../../../core/domain/firms/firms.js';
import { snapshotProviderCall } from '../../../core/domain/calls/provider-call.js';
import { voiceWebhookSecret } from '../../../core/domain/calls/webhook-secret.js';
import {
  RETELL_SIGNATURE_HEADER,
  isFreshRetellSignature,
  verifyRetellSignature,
} from '../../../core/integrations/voice/webhook-signature.js';
import type { Services } from '../../../core/wiring/services.js';
import { isCallEvent } from '../../../jobs/calls.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import { defineRoute, type WebhookCredentials } from '../../route.js';
import { authenticateRequest } from '../../router.js';
import { CallWebhookBody, CallWebhookParams, CallWebhookResponse } from './schema.js';

/**
 * The bearer header (the platform key, or a token of this firm), or else Retell's
 * x-retell-signature with the firm's voice_webhook_secret (CONTRACT §3.12). All of it but the
 * HMAC over the body is checked before the body is read.
 */
async function authenticateCallWebhook(ctx: Context, services: Services): Promise<WebhookCredentials> {
  const slug = String(ctx.params.firm ?? '');
  const db = services.mongo.db;
  if (ctx.get('Authorization') !== '') {
    const principal = await authenticateRequest(ctx, services);
    await requireFirm(db, principal, slug);
    return { principal, firm: slug };
  }
  const signature = ctx.get(RETELL_SIGNATURE_HEADER);
  if (signature === '') throw unauthorized('Send a bearer token or an x-retell-signature header.');
  if (!isFreshRetellSignature(signature)) {
    throw unauthorized('The x-retell-signature header is malformed or outside the 5-minute window.');
  }
  const firm = await getFirm(db, slug);
  if (firm === null) throw notFound('firm', `No firm has the slug ${quote(slug)}.`);
  const secret = voiceWebhookSecret(services.config, firm._id, firm.settings.voice_webhook_secret);
  if (secret === null) throw unauthorized('The firm has no voice_webhook_secret; send a bearer token.');
  return {
    principal: { kind: 'firm', firm: firm._id, via: 'webhook_signature', subject: 'voice-webhook' },
    firm: firm._id,
    verifyBody: (rawBody) => verifyRetellSignature(rawBody, secret, signature),
  };
}

export const callWebhookRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v2/{firm}/webhook',
    operationId: 'callWebhook',
    summary:
      'Voice provider events (Retell shape). call_started, call_ended and call_analyzed are stored and applied by a worker; other events are acknowledged and ignored',
    tag: 'Webhooks',
    auth: { kind: 'webhook', authenticate: authenticateCallWebhook },
    params: CallWebhookParams,
    body: CallWebhookBody,
    response: CallWebhookResponse,
    errors: [403, 404],
    handler: async ({ services, params, body }) => {
      if (isCallEvent(body.event)) {
        await enqueue(services.queues, JOBS.callEvent, {
          firm: params.firm,
          event: body.event,
          call: snapshotProviderCall(body.call),
          received_at: Date.now(),
        });
      }
      return { received: true as const };
    },
  }),
];
