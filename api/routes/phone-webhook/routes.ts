import { createHash, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type ExtensionTelephonySessionsEvent from '@rc-ex/core/definitions/ExtensionTelephonySessionsEvent';
import type { Context } from 'koa';
import { FIRM_SLUG_PATTERN } from '../../../core/domain/firms/firm-slug.js';
import { receivePhoneEvent } from '../../../core/domain/phone/missed-calls.js';
import { readRingCentralConnection } from '../../../core/domain/phone/ringcentral-connection.js';
import { unauthorized } from '../../../core/platform/errors.js';
import type { Services } from '../../../core/wiring/services.js';
import { defineRoute, type WebhookCredentials } from '../../route.js';
import { FirmSlug } from '../../schemas/common.js';

// Deliveries of a firm's RingCentral subscription (docs/ringcentral.md#missed-call-callbacks).
// RingCentral proves a delivery with the `Verification-Token` header: the secret the service gave
// it when it made the subscription, compared here in constant time (the SHA-256 of each, so the
// lengths agree). Before it sends anything, RingCentral checks the address with a request carrying
// a `Validation-Token` header, which the answer must carry back (RingCentral: "must return a
// Validation-Token header when it is presented with one"). That handshake proves nothing and does
// nothing, so it is answered alike for every slug, known or not, connected or not: its answer
// cannot tell which firms exist (as the contract asks of the webhook receivers). A delivery with a
// missing or wrong token, or for an unknown firm: 401, alike.

const VALIDATION = 'Validation-Token';
const VERIFICATION = 'Verification-Token';
const SUBJECT = 'phone-webhook';
const HANDSHAKE = 'phone-webhook-validation';

const digest = (text: string) => createHash('sha256').update(text).digest();
const sameToken = (given: string, expected: string) => timingSafeEqual(digest(given), digest(expected));
/** Echoed back as a header: printable ASCII only. */
const echoable = (token: string) => /^[\x21-\x7e]{1,512}$/.test(token);

async function authenticatePhoneWebhook(ctx: Context, services: Services): Promise<WebhookCredentials> {
  const slug = String(ctx.params.firm ?? '');
  const refused = () =>
    unauthorized(`Send the ${VERIFICATION} header RingCentral was given for this firm's subscription.`);
  const validation = ctx.get(VALIDATION);
  const token = ctx.get(VERIFICATION);
  if (validation === '' && token === '') throw refused();
  if (validation !== '' && !echoable(validation)) throw refused();
  if (token !== '') {
    const conn = new RegExp(FIRM_SLUG_PATTERN).test(slug)
      ? await readRingCentralConnection(services.mongo.db, slug)
      : null;
    if (conn === null || !sameToken(token, conn.verification_token)) throw refused();
    return {
      principal: { kind: 'firm', firm: slug, via: 'webhook_signature', subject: SUBJECT },
      firm: slug,
      verifyBody: async () => 'signed',
    };
  }
  // The handshake: nothing read, no body that does anything, counted against the sender's address.
  return {
    principal: { kind: 'firm', firm: slug, via: 'webhook_signature', subject: HANDSHAKE },
    firm: slug,
    verifyBody: async () => 'unsigned',
  };
}

const PhoneWebhookBody = Type.Object(
  {
    uuid: Type.Optional(Type.String({ maxLength: 200 })),
    event: Type.Optional(Type.String({ maxLength: 1000 })),
    subscriptionId: Type.Optional(Type.String({ maxLength: 200 })),
    timestamp: Type.Optional(Type.String({ maxLength: 100 })),
    body: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  {
    additionalProperties: true,
    description:
      "A RingCentral notification (a Telephony Sessions event: its inbound parties' status and `missedCall`); other events are acknowledged and ignored",
  },
);

export const phoneWebhookRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v2/{firm}/phone-webhook',
    operationId: 'phoneWebhook',
    summary:
      "RingCentral's deliveries for a firm's phone system (Verification-Token checked in constant time; the Validation-Token handshake answered): " +
      'each missed call from an outside number becomes a callback by the firm’s agent after settings.missed_call_callback.delay_seconds',
    tag: 'Integrations',
    auth: { kind: 'webhook', authenticate: authenticatePhoneWebhook },
    params: Type.Object({ firm: FirmSlug }),
    body: Type.Optional(PhoneWebhookBody),
    response: Type.Object({ received: Type.Literal(true) }),
    errors: [401],
    handler: async ({ services, principal, params, body, koa }) => {
      // Carried back whenever it is presented, a delivery's too.
      if (koa.get(VALIDATION) !== '') koa.set(VALIDATION, koa.get(VALIDATION));
      if (principal.subject === HANDSHAKE) return { received: true as const };
      if (body?.body !== undefined) {
        await receivePhoneEvent(services, params.firm, body as ExtensionTelephonySessionsEvent);
      }
      return { received: true as const };
    },
  }),
];
