import { snapshotProviderCall } from '../../../core/domain/calls/provider-call.js';
import { callOwnerAtReceipt } from '../../../core/domain/calls/call-owner.js';
import { sharedVoiceWebhookSecrets, voiceWebhookSecrets } from '../../../core/domain/calls/webhook-secret.js';
import {
  RETELL_SIGNATURE_HEADER,
  isFreshRetellSignature,
  verifyRetellSignature,
} from '../../../core/integrations/voice/webhook-signature.js';
import { isCallEvent } from '../../../jobs/calls.js';
import { acceptDelivery } from '../../../core/domain/deliveries/delivery-outbox.js';
import { invalidRequest } from '../../../core/platform/errors.js';
import { defineRoute, type WebhookCredentials } from '../../route.js';
import { webhookAuthentication } from '../../webhook-auth.js';
import { CallWebhookBody, CallWebhookParams, CallWebhookResponse } from './schema.js';

/**
 * Retell's x-retell-signature with the firm's voice_webhook_secret (or the simulator's key), or
 * with the platform's RETELL_API_KEY, which Retell signs with: then only for the firm whose call it
 * is (core/domain/calls/call-owner.ts).
 */
export const authenticateCallWebhook = webhookAuthentication({
  header: RETELL_SIGNATURE_HEADER,
  subject: 'voice-webhook',
  missing: 'Send a bearer token or an x-retell-signature header.',
  wellFormed: isFreshRetellSignature,
  malformed: 'The x-retell-signature header is malformed or outside the 5-minute window.',
  secretsOf: (services, firm) => voiceWebhookSecrets(services.config, firm.firm, firm.voice_webhook_secret),
  sharedSecretsOf: (services) => sharedVoiceWebhookSecrets(services.config),
  verify: verifyRetellSignature,
});

/** The call webhook takes bodies up to 32 MiB, other routes 2 MiB (docs/webhooks.md#large-bodies). */
export const CALL_WEBHOOK_BODY_LIMIT_BYTES = 32 * 1024 * 1024;

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
    // A two-hour call's call_analyzed runs to several MB (word-level transcript_object and more).
    largeBodyBytes: CALL_WEBHOOK_BODY_LIMIT_BYTES,
    handler: async ({ services, params, body, koa }) => {
      if (isCallEvent(body.event)) {
        if (body.call === undefined) {
          throw invalidRequest(`A ${body.event} event needs its call.`, [
            { path: '/call', message: 'is required' },
          ]);
        }
        const call = snapshotProviderCall(body.call);
        // Signed with the key Retell signs every firm's calls with: 403 unless the call is this
        // firm's; while MongoDB is unreachable, taken and checked by the worker before it applies it.
        const shared = (koa.state.webhook as WebhookCredentials).sharedKey === true;
        const owner = shared ? await callOwnerAtReceipt(services.mongo.db, params.firm, call) : 'checked';
        // In the queue, or in the MongoDB outbox while Redis is down (docs/webhooks.md#redis-outages).
        await acceptDelivery(services, 'callEvent', params.firm, {
          firm: params.firm,
          event: body.event,
          call,
          received_at: Date.now(),
          ...(owner === 'unchecked' ? { owner_unchecked: true as const } : {}),
        });
      }
      return { received: true as const };
    },
  }),
];
