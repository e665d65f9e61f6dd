import { timingSafeEqual } from 'node:crypto';
import { hmacHex } from '../../platform/crypto.js';

// Cal.com's webhook signature: `X-Cal-Signature-256: <hex HMAC-SHA256(raw body)>`, keyed with
// the secret set on the webhook in Cal.com (our firm's booking_webhook_secret). Cal.com sends
// "no-secret-provided" when its webhook has no secret. The signature carries no timestamp, so a
// captured delivery can be replayed: replays are harmless here because the receiver is
// idempotent (a repeated event changes nothing), and only a bearer token or the secret can
// produce a new event.

export const CAL_SIGNATURE_HEADER = 'x-cal-signature-256';

const FORM = /^[0-9a-f]{64}$/i;

/** Signs a raw body exactly as Cal.com does. */
export function signCalWebhook(rawBody: string | Buffer, secret: string): string {
  return hmacHex(secret, rawBody);
}

/** What can be checked without the body: 64 hex digits (not "no-secret-provided", not garbage). */
export function isCalSignatureForm(header: string): boolean {
  return FORM.test(header.trim());
}

/** The HMAC over the raw body, compared in constant time. */
export function verifyCalSignature(rawBody: string | Buffer, secret: string, header: string): boolean {
  const given = header.trim().toLowerCase();
  if (!FORM.test(given)) return false;
  const expected = Buffer.from(signCalWebhook(rawBody, secret), 'hex');
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
}
