import { createHmac, timingSafeEqual } from 'node:crypto';
import { hmacHex } from '../../platform/crypto.js';

// Retell's webhook signature: `x-retell-signature: v=<unix ms>,d=<hex HMAC-SHA256(raw body + ms)>`,
// keyed with the firm's voice_webhook_secret and valid for five minutes either side of now.

export const RETELL_SIGNATURE_HEADER = 'x-retell-signature';

/** Signs a raw body exactly as Retell does (the simulator signs its webhooks with this). */
export function signRetellWebhook(rawBody: string, secret: string, timestampMs: number = Date.now()): string {
  return `v=${timestampMs},d=${hmacHex(secret, rawBody + String(timestampMs))}`;
}

const TOLERANCE_MS = 5 * 60 * 1000;
const FORM = /^v=(\d{10,16}),d=[0-9a-f]{64}$/;

/**
 * What can be checked without the body: the header's form, and a timestamp within the same
 * 5-minute window retell-sdk's verifier allows. A request failing this is refused unread.
 */
export function isFreshRetellSignature(header: string, now: number = Date.now()): boolean {
  const match = FORM.exec(header.trim());
  return match !== null && Math.abs(now - Number(match[1])) <= TOLERANCE_MS;
}

const SIGNED = /^v=(\d+),d=([0-9a-f]{64})$/i;

/**
 * Checks a signature as retell-sdk's `verify` does — the header `v=<ms>,d=<64 hex digits>`
 * (either case), the timestamp within 5 minutes of now, HMAC-SHA256 of the raw body followed by
 * the timestamp (as a number) compared in constant time — with node:crypto in one synchronous
 * call: the SDK's Web Crypto version imports a key and queues an async job per delivery, which
 * was the receiver's largest cost (bench/, README "Performance").
 * test/performance/retell-signature.test.ts holds the two to the same answers.
 */
export function verifyRetellSignature(
  rawBody: string,
  secret: string,
  header: string,
  now: number = Date.now(),
): boolean {
  if (header.length > 512) return false;
  const match = SIGNED.exec(header.trim());
  if (match === null) return false;
  const stamp = Number(match[1]);
  if (!Number.isSafeInteger(stamp) || Math.abs(now - stamp) > TOLERANCE_MS) return false;
  const expected = createHmac('sha256', secret)
    .update(rawBody + String(stamp))
    .digest();
  return timingSafeEqual(expected, Buffer.from(match[2]!, 'hex'));
}
